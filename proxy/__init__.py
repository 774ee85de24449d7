"""gemini-tool-proxy: tool calling for Gemini behind OpenAI Responses, Chat and Gemini-native clients."""

__version__ = "0.1.0"
