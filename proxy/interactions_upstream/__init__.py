"""Gemini bodies <-> Google's Interactions API, for `--upstream-api interactions`."""
