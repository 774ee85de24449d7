"""Anthropic's side of the stream pipeline: named SSE events (`event: message_start` ...); the clean
end's `message_stop` is held until the turn is kept; a failure is the `error` event. While Gemini
sends nothing (a long think), a `ping` goes out every PING_SECONDS, as Anthropic's own streams do,
so neither the client nor a proxy between gives up on a quiet connection."""

from collections.abc import Sequence

from proxy.anthropic.translator import AnthropicTranslator
from proxy.errors import ProxyError
from proxy.server.translator_writer import Event, Frames, TranslatorWriter, sse_events
from proxy.wire.sse import sse_event

PING_SECONDS = 10.0


def keep_alive() -> tuple[float, bytes]:
    """What the stream pipeline writes while nothing else was for PING_SECONDS (server/stream.py's
    sender, on one timer per stream)."""
    return PING_SECONDS, sse_event({"type": "ping"}, "ping")


class AnthropicWriter(TranslatorWriter):
    t: AnthropicTranslator
    SUCCESS = ("type", frozenset({"message_stop"}))

    def _frame(self, events: Sequence[Event]) -> Frames:
        return sse_events(events)

    @property
    def failed(self) -> bool:
        return self.t.failed

    def finish(self) -> Frames:
        events = self._hold(self.t.finish())  # (apart: typed from its argument, not from _frame's)
        return self._frame(events)

    def end(self) -> Frames:
        event = self._take_end()
        return self._frame([event] if event else [])

    def fail(self, error: ProxyError) -> Frames:
        self._take_end()  # the message was whole, but keeping its calls failed: an error after all
        return self._frame(self.t.fail(error))
