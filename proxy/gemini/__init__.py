"""Gemini-native clients: the REST surface (rest.py: models, countTokens, objects, pass-through)
and generateContent with the proxy's repairs (routes.py, also `/v1/gemini`)."""
