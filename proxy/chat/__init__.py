"""The OpenAI Chat Completions API over Gemini: HTTP+SSE."""
