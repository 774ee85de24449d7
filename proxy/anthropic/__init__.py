"""The Anthropic Messages API over Gemini (Claude Code, the anthropic SDKs): HTTP+SSE."""
