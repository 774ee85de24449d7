"""The part of a protocol's stream writer that every translated protocol shares (Responses,
Interactions): a sans-I/O translator's events, framed by the protocol, with the clean end's terminal
event held back until the turn is stored. stream.py's pipeline drives it: `finish` gives all but
that terminal event, `end` gives it once the route has stored the turn, and a failure to store it
becomes the protocol's failure instead (`fail` after `finish`), never a success. Each protocol's
writer lives in its folder (responses/, chat/, gemini/, interactions/)."""

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from proxy.wire.sse import sse_event

SSE = "text/event-stream; charset=utf-8"
DONE = b"data: [DONE]\n\n"


Frames = bytes | Iterator[bytes]  # what a writer gives stream.py's sender: bytes, or blocks made as written
# An event as the writers take it: any protocol's (the translators' TypedDicts, responses/events.py and
# its siblings, are plain dicts at run time; Mapping is what a TypedDict is to the type checker).
Event = Mapping[str, Any]


# Events are framed into one write until it holds this many bytes; an answer's closing events, each
# carrying the whole text, then go out one at a time as they are made.
JOIN_BELOW = 64 * 1024


def _joined(events: Sequence[Event]) -> Iterator[bytes]:
    pending: list[bytes] = []
    size = 0
    for e in events:
        block = sse_event(e, e["type"])
        pending.append(block)
        size += len(block)
        if size >= JOIN_BELOW:
            yield b"".join(pending) if len(pending) > 1 else block
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def sse_events(events: Sequence[Event]) -> Frames:
    """SSE blocks for `events`: small events share one write (a start or a first chunk is one write,
    not several), and a long answer's closing events are made one at a time as they are written
    (stream.py's sender), so the answer is never held several times at once."""
    if len(events) <= 1:
        return sse_event(events[0], events[0]["type"]) if events else b""
    return _joined(events)


class TranslatorWriter:
    """A sans-I/O translator's events, framed for SSE by `_frame` (each protocol its own framing)."""
    content_type = SSE

    def __init__(self, translator: Any) -> None:
        self.t = translator

    @property
    def done(self) -> bool:
        return self.t.done

    def _frame(self, events: Sequence[Event]) -> Frames:
        raise NotImplementedError

    def start(self) -> Frames:
        return self._frame(self.t.start())

    def feed(self, chunk: dict[str, Any]) -> Frames:
        return self._frame(self.t.feed(chunk))

    # A clean end's terminal event, held from `finish` until the route has stored the turn (`end`).
    SUCCESS: tuple[str, frozenset[str]] = ("type", frozenset())  # the event's kind field, and its kinds
    _end: Any = None  # the held event (the protocol's own type)

    def _hold[E: Mapping[str, object]](self, events: list[E]) -> list[E]:
        field, kinds = self.SUCCESS
        if events and events[-1][field] in kinds:
            self._end = events.pop()
        return events

    def _take_end(self) -> Any:
        event, self._end = self._end, None
        return event


