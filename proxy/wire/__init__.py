"""Pydantic models of the wire formats. No logic beyond shape."""
