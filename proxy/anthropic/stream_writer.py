"""Anthropic's side of the stream pipeline: named SSE events (`event: message_start` ...); the clean
end's `message_stop` is held until the turn is kept; a failure is the `error` event."""

from typing import Any

from proxy.anthropic.translator import AnthropicTranslator
from proxy.errors import ProxyError
from proxy.server.translator_writer import TranslatorWriter, sse_events


class AnthropicWriter(TranslatorWriter):
    t: AnthropicTranslator
    SUCCESS = ("type", frozenset({"message_stop"}))

    def _frame(self, events: list[dict[str, Any]]) -> bytes:
        return sse_events(events)

    @property
    def failed(self) -> bool:
        return self.t.failed

    def finish(self) -> bytes:
        return self._frame(self._hold(self.t.finish()))

    def end(self) -> bytes:
        event = self._take_end()
        return self._frame([event] if event else [])

    def fail(self, error: ProxyError) -> bytes:
        self._take_end()  # the message was whole, but keeping its calls failed: an error after all
        return self._frame(self.t.fail(error))
