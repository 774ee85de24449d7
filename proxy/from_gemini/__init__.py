"""Gemini answers -> what each client protocol expects: Responses events, Chat chunks, usage, finish reasons."""
