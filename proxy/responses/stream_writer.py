"""Responses' side of the stream pipeline: named events; failure is `response.failed` with an error
object. How events are framed is the transport's: SSE blocks for HTTP, a list of events (one text
frame each) for WebSocket (websocket.py)."""

from collections.abc import Callable, Sequence
from typing import Any

from proxy.errors import ProxyError
from proxy.responses.translator import ResponsesTranslator
from proxy.server.translator_writer import Event, TranslatorWriter, sse_events


class ResponsesWriter(TranslatorWriter):
    t: ResponsesTranslator

    def __init__(self, translator: ResponsesTranslator,
                 frame: Callable[[Sequence[Event]], Any] = sse_events) -> None:
        super().__init__(translator)
        self._framing = frame

    def _frame(self, events: Sequence[Event]) -> Any:
        return self._framing(events)

    @property
    def failed(self) -> bool:
        return self.t.response["status"] == "failed"

    SUCCESS = ("type", frozenset({"response.completed", "response.incomplete"}))

    def finish(self) -> Any:
        events = self._hold(self.t.finish())  # (apart: typed from its argument, not from _frame's)
        return self._frame(events)

    def end(self) -> Any:
        event = self._take_end()
        return self._frame([event] if event else [])

    def fail(self, error: ProxyError) -> Any:
        # ResponseError.code is an enum in the SDKs: the detail goes in the message.
        code = "rate_limit_exceeded" if error.status == 429 else "server_error"
        if self._take_end() is not None:  # the answer was whole, but storing it failed
            return self._frame(self.t.revoke(error.message, code))
        return self._frame(self.t.fail(error.message, code))
