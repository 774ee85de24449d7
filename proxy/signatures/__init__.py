"""Thought signatures: the record of each Gemini call (stored, replayed), the sentinel rules, the stateless carrier."""
