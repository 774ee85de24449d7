"""What the front-end needs from whatever answers its Gemini requests."""

from collections.abc import AsyncIterator
from typing import Any, Protocol


class Upstream(Protocol):
    """Gemini itself, the relay, the forced-choice wrapper: one answer, or a stream opened before
    the first chunk is read (errors before that are raised; after it, they arrive as error chunks)."""

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]: ...
    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]: ...
    async def close(self) -> None: ...
