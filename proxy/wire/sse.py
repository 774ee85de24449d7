"""Server-sent events framing, sans-I/O: feed bytes as they arrive, get complete `data` payloads.

Gemini separates events with CRLF CRLF, some Vertex recordings with LF LF; chunk boundaries never
align with events (reference/protocols.md §B1, mitmproxy.md). Multi-line `data:` fields are joined
with "\n" as the SSE spec says (html.spec.whatwg.org §9.2.6).
"""

from typing import Any

from proxy import fast_json

# Refuse an event larger than this rather than buffer without bound: a Gemini chunk holds one
# candidate delta (a few KB); 16 MiB leaves room for big inline function-call arguments.
MAX_EVENT_BYTES = 16 * 1024 * 1024


class SSEDecoder:
    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[str]:
        self._buf += data
        events: list[str] = []
        while True:
            cut = _boundary(self._buf)
            if cut is None:
                break
            end, sep_len = cut
            raw, self._buf = self._buf[:end], self._buf[end + sep_len:]
            payload = _data_of(raw)
            if payload is not None:
                events.append(payload)
        if len(self._buf) > MAX_EVENT_BYTES:
            raise ValueError(f"SSE event larger than {MAX_EVENT_BYTES} bytes")
        return events

    def close(self) -> list[str]:
        """Flush a final event that was not followed by a blank line."""
        raw, self._buf = self._buf, b""
        payload = _data_of(raw) if raw.strip() else None
        return [payload] if payload is not None else []


def _boundary(buf: bytes) -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    for sep in (b"\r\n\r\n", b"\n\n", b"\r\r"):
        i = buf.find(sep)
        if i != -1 and (best is None or i < best[0]):
            best = (i, len(sep))
    return best


def _data_of(raw: bytes) -> str | None:
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
