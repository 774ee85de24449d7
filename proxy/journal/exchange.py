"""One exchange as it is recorded: filled in by the middleware (client side), the upstream wrappers
(Gemini side) and `note()` calls where the proxy decides something. Bodies are kept as the objects or
bytes they already are and serialized once, when the exchange ends (ring.py), so recording costs a
few appends per request."""

import contextvars
from dataclasses import dataclass, field
from time import perf_counter
from time import time as wall_clock
from typing import Any

# A body larger than this is kept as its first BODY_CAP bytes (the page says how much was cut).
BODY_CAP = 256 * 1024
# A stream's chunks kept per exchange (the rest are counted).
MAX_CHUNKS = 2000
# Notes kept per exchange (a pathological schema could otherwise note thousands).
MAX_NOTES = 200


class Json:
    """Bytes known to be well-formed JSON (parsed by the proxy already, or made by it): embedded in
    the journal's document as they are, without parsing them again."""
    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)


@dataclass(slots=True)
class UpstreamCall:
    """One call of the upstream: the body sent, each attempt (retries, the key used), the answer."""
    model: str
    body: Any
    stream: bool
    start: float = field(default_factory=perf_counter)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    answer: Any = None
    chunks: list[Any] = field(default_factory=list)
    dropped_chunks: int = 0
    first_byte: float | None = None
    last_byte: float | None = None
    error: str | None = None
    raw: bool = False  # the upstream records its own bytes (body, answer, chunks as they came)
    # The body and answer as objects, for the summary (tools, calls, tokens) when `body`/`answer` are bytes.
    body_obj: Any = None
    # What the summary shows of the answer, gathered as it arrives (a stream's chunks are kept only up
    # to BODY_CAP bytes, its calls and usage always).
    calls: list[dict[str, Any]] = field(default_factory=list)
    finish: list[str] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    version: str | None = None
    chunk_bytes: int = 0
    tools: list[str] = field(default_factory=list)  # the declared tools' names, once the body is settled

    def learn(self, answer: Any) -> int:
        """Take the calls, finish reasons, usage and model version from an answer or a chunk; returns
        the size of its text (a cheap measure of what keeping it costs)."""
        if not isinstance(answer, dict):
            return 0
        size = 0
        for cand in answer.get("candidates") or ():
            if not isinstance(cand, dict):
                continue
            content = cand.get("content")
            parts = content.get("parts") if isinstance(content, dict) else None
            for part in parts if isinstance(parts, list) else ():
                if not isinstance(part, dict):
                    continue
                text = part.get("text")
                size += len(text) if isinstance(text, str) else 64
                fc = part.get("functionCall")
                if isinstance(fc, dict) and len(self.calls) < 200:
                    self.calls.append({"name": fc.get("name"), "id": fc.get("id")})
            if isinstance(cand.get("finishReason"), str):
                self.finish.append(cand["finishReason"])
        usage, version = answer.get("usageMetadata"), answer.get("modelVersion")
        self.usage = usage if isinstance(usage, dict) else self.usage
        self.version = version if isinstance(version, str) else self.version
        return size

    def chunk(self, chunk: Any) -> None:
        now = perf_counter()
        if self.first_byte is None:
            self.first_byte = now
        self.last_byte = now
        size = self.learn(chunk) + 200
        if len(self.chunks) < MAX_CHUNKS and self.chunk_bytes + size <= BODY_CAP:
            self.chunks.append(chunk)
            self.chunk_bytes += size
        else:
            self.dropped_chunks += 1


@dataclass(slots=True)
class Exchange:
    id: str
    kind: str                      # "frontend" or "mitm"
    method: str
    path: str
    protocol: str
    scope: str = ""                # the client key's scope ("" without keys)
    session: str | None = None
    request_id: str | None = None
    client_model: str | None = None
    time: float = field(default_factory=wall_clock)
    start: float = field(default_factory=perf_counter)
    request_headers: Any = field(default_factory=dict)  # a mapping, as received (redacted when serialized)
    request_body: Any = None
    upstreams: list[UpstreamCall] = field(default_factory=list)
    status: int = 0
    answer_headers: dict[str, str] = field(default_factory=dict)
    answer_body: Any = None
    answer_stream: list[bytes] = field(default_factory=list)
    answer_stream_bytes: int = 0
    notes: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    secrets: list[str] = field(default_factory=list)  # this exchange's own secrets (the key it presented)
    traceparent: str | None = None
    end: float | None = None
    cut: bool = False  # too large for the journal: kept without its bodies

    def note(self, kind: str, message: str, **detail: Any) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append({"kind": kind, "message": message, **detail})

    def streamed(self, data: bytes) -> None:
        """What a streaming answer wrote to the client, kept up to BODY_CAP bytes."""
        room = BODY_CAP - self.answer_stream_bytes
        if room > 0:
            self.answer_stream.append(data[:room])
        self.answer_stream_bytes += len(data)

    def upstream(self, model: str, body: Any, stream: bool) -> UpstreamCall:
        call = UpstreamCall(model, body, stream, body_obj=body)
        self.upstreams.append(call)
        return call


CURRENT: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar("gtp_exchange", default=None)


def note(kind: str, message: str, **detail: Any) -> None:
    """Record one of the proxy's decisions on the exchange being served (nothing when none is)."""
    exchange = CURRENT.get()
    if exchange is not None:
        exchange.note(kind, message, **detail)


def note_all(notes: list[dict[str, Any]]) -> None:
    """Record notes made beforehand (shared: a note is never changed once made)."""
    exchange = CURRENT.get()
    if exchange is not None and notes:
        exchange.notes.extend(notes[: max(0, MAX_NOTES - len(exchange.notes))])


def recording() -> bool:
    """Whether an exchange is being recorded: a caller skips computing a note's detail otherwise."""
    return CURRENT.get() is not None


def upstream_call() -> UpstreamCall | None:
    """The upstream call being made for the current exchange (retries add attempts to it)."""
    exchange = CURRENT.get()
    return exchange.upstreams[-1] if exchange is not None and exchange.upstreams else None


def failed(error: BaseException) -> None:
    """The current exchange failed with `error` (a ProxyError: its message, status and type)."""
    ex = CURRENT.get()
    if ex is None:
        return
    message = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
    ex.error = {"message": message, "status": getattr(error, "status", None), "type": getattr(error, "type", None),
                "param": getattr(error, "param", None),
                "cause": repr(error.__cause__)[:500] if error.__cause__ is not None else None}
    ex.note("error", message)
