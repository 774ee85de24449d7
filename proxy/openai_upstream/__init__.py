"""Speaking to OpenAI-compatible local servers: Gemini bodies in, Chat Completions out, and back."""
