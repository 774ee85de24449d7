"""Gemini's Interactions API, served over generateContent or passed to Google's own."""
