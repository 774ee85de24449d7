"""Server-sent events framing, sans-I/O: feed bytes as they arrive, get complete `data` payloads.

Gemini separates events with CRLF CRLF, some Vertex recordings with LF LF; chunk boundaries never
align with events (docs/wire.md#gemini-framing). Multi-line `data:` fields are joined
with "\n" as the SSE spec says (html.spec.whatwg.org §9.2.6).
"""

import re
from typing import Any

from proxy import fast_json

# Refuse an event larger than this rather than buffer without bound: a Gemini chunk holds one
# candidate delta (a few KB); 16 MiB leaves room for big inline function-call arguments.
MAX_EVENT_BYTES = 16 * 1024 * 1024
_SEPARATOR = re.compile(rb"\r\n\r\n|\n\n|\r\r")  # the earliest of them ends an event
_LONGEST = 4  # bytes of the longest separator: one may straddle two reads
_COMPACT = 64 * 1024  # consumed bytes are dropped from the buffer's front past this (and past half of it)


class SSEDecoder:
    """Linear in the bytes fed, however they are cut (h11's receive buffer is the model): one growing
    buffer with a read offset, each byte scanned for a separator once (a separator that may straddle
    two reads is looked at again), consumed bytes dropped in bulk, never re-sliced per event."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._start = 0  # the first byte of the event being read
        self._scanned = 0  # no separator starts in [_start, _scanned)

    def feed(self, data: bytes) -> list[str]:
        buf = self._buf
        buf += data
        events: list[str] = []
        while (m := _SEPARATOR.search(buf, self._scanned)) is not None:
            payload = _data_of(bytes(buf[self._start:m.start()]))
            self._start = self._scanned = m.end()
            if payload is not None:
                events.append(payload)
        self._scanned = max(self._start, len(buf) - _LONGEST + 1)
        if self._start > _COMPACT and self._start * 2 > len(buf):
            del buf[:self._start]
            self._scanned -= self._start
            self._start = 0
        if len(buf) - self._start > MAX_EVENT_BYTES:
            raise ValueError(f"SSE event larger than {MAX_EVENT_BYTES} bytes")
        return events

    def close(self) -> list[str]:
        """Flush a final event that was not followed by a blank line."""
        raw = bytes(self._buf[self._start:])
        self._buf, self._start, self._scanned = bytearray(), 0, 0
        payload = _data_of(raw) if raw.strip() else None
        return [payload] if payload is not None else []


def _data_of(raw: bytes) -> str | None:
    if b"data:" not in raw:
        return None
    lines = [ln.rstrip(b"\r") for ln in raw.split(b"\n")]
    data = [ln[5:].removeprefix(b" ") for ln in lines if ln.startswith(b"data:")]
    return b"\n".join(data).decode("utf-8") if data else None


def sse_event(data: Any, event: str | None = None, crlf: bool = False, event_id: str | None = None) -> bytes:
    """One server-sent event carrying JSON: the only SSE writer in the proxy. Responses events name
    their type (`event:`), Interactions' also their resumable id (`id:`); Gemini's stream uses bare
    `data:` lines separated by CRLF."""
    nl = b"\r\n" if crlf else b"\n"
    head = b"event: " + event.encode() + nl if event else b""
    if event_id is not None:
        head += b"id: " + event_id.encode() + nl
    return head + b"data: " + fast_json.dumps(data).lstrip() + nl + nl  # orjson: a large event's cost was json's
