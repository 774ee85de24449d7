"""The aiohttp front-end: OpenAI Responses and Gemini-native clients in, Gemini out."""

from proxy.server.app import make_app

__all__ = ["make_app"]
