"""The part of a protocol's stream writer that every translated protocol shares (Responses,
Interactions): a sans-I/O translator's events, framed by the protocol, with the clean end's terminal
event held back until the turn is stored. stream.py's pipeline drives it: `finish` gives all but
that terminal event, `end` gives it once the route has stored the turn, and a failure to store it
becomes the protocol's failure instead (`fail` after `finish`), never a success. Each protocol's
writer lives in its folder (responses/, chat/, gemini/, interactions/)."""

from collections.abc import Iterator
from typing import Any

from proxy.wire.sse import sse_event

SSE = "text/event-stream; charset=utf-8"
DONE = b"data: [DONE]\n\n"


Frames = bytes | Iterator[bytes]  # what a writer gives stream.py's sender: bytes, or blocks made as written


def sse_events(events: list[dict[str, Any]]) -> Frames:
    """One SSE block, or several made one at a time as they are written (stream.py's sender): an
    answer's closing events each carry the whole text, and serializing them all before the first is
    written held several copies of a long answer at once."""
    if len(events) <= 1:
        return sse_event(events[0], events[0]["type"]) if events else b""
    return (sse_event(e, e["type"]) for e in events)


class TranslatorWriter:
    """A sans-I/O translator's events, framed for SSE by `_frame` (each protocol its own framing)."""
    content_type = SSE

    def __init__(self, translator: Any) -> None:
        self.t = translator

    @property
    def done(self) -> bool:
        return self.t.done

    def _frame(self, events: list[dict[str, Any]]) -> Frames:
        raise NotImplementedError

    def start(self) -> Frames:
        return self._frame(self.t.start())

    def feed(self, chunk: dict[str, Any]) -> Frames:
        return self._frame(self.t.feed(chunk))

    # A clean end's terminal event, held from `finish` until the route has stored the turn (`end`).
    SUCCESS: tuple[str, frozenset[str]] = ("type", frozenset())  # the event's kind field, and its kinds
    _end: dict[str, Any] | None = None

    def _hold(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        field, kinds = self.SUCCESS
        if events and events[-1][field] in kinds:
            self._end = events.pop()
        return events

    def _take_end(self) -> dict[str, Any] | None:
        event, self._end = self._end, None
        return event


