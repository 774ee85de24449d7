"""Client requests -> Gemini request bodies: history, tools, generation settings, repairs. Pure functions."""
