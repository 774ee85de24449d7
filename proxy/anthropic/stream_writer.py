"""Anthropic's side of the stream pipeline: named SSE events (`event: message_start` ...); the clean
end's `message_stop` is held until the turn is kept; a failure is the `error` event. While Gemini
sends nothing (a long think), a `ping` goes out every PING_SECONDS, as Anthropic's own streams do,
so neither the client nor a proxy between gives up on a quiet connection."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from proxy.anthropic.translator import AnthropicTranslator
from proxy.errors import ProxyError
from proxy.server.translator_writer import Frames, TranslatorWriter, sse_events

PING_SECONDS = 10.0
PING = "gtpPing"  # the key of the marker chunk with_pings puts between Gemini's (translator.py answers "ping")


async def with_pings(chunks: AsyncIterator[dict[str, Any]], every: float) -> AsyncIterator[dict[str, Any]]:
    """Gemini's chunks, with a ping marker whenever none came for `every` seconds."""
    source = aiter(chunks)
    pending: asyncio.Future[dict[str, Any]] | None = None
    try:
        while True:
            pending = pending or asyncio.ensure_future(anext(source))
            done, _ = await asyncio.wait({pending}, timeout=every)
            if not done:
                yield {PING: True}
                continue
            pending, finished = None, pending
            try:
                yield finished.result()
            except StopAsyncIteration:
                return
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration, Exception):
                await pending
        await chunks.aclose()  # type: ignore[attr-defined]


class AnthropicWriter(TranslatorWriter):
    t: AnthropicTranslator
    SUCCESS = ("type", frozenset({"message_stop"}))

    def _frame(self, events: list[dict[str, Any]]) -> Frames:
        return sse_events(events)

    @property
    def failed(self) -> bool:
        return self.t.failed

    def finish(self) -> Frames:
        return self._frame(self._hold(self.t.finish()))

    def end(self) -> Frames:
        event = self._take_end()
        return self._frame([event] if event else [])

    def fail(self, error: ProxyError) -> Frames:
        self._take_end()  # the message was whole, but keeping its calls failed: an error after all
        return self._frame(self.t.fail(error))
