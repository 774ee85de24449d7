"""The aiohttp front-end: OpenAI Responses and Gemini-native clients in, Gemini out.

`make_app` is imported on first use: a submodule (site.py's limits, auth.py's keys) must not pull
every route and wire model into a command that needs none of them (`parse`, `ca`, `mock`)."""

from typing import Any

__all__ = ["make_app"]


def __getattr__(name: str) -> Any:
    if name == "make_app":
        from proxy.server.app import make_app

        return make_app
    raise AttributeError(f"module 'proxy.server' has no attribute {name!r}")
