"""One exchange as it is recorded: filled in by the middleware (client side), the upstream wrappers
(Gemini side) and `note()` calls where the proxy decides something. Bodies are held as the bytes
they already are; the finished exchange is sealed into one tuple of plain values (kept.py) and made
into a document only when someone reads it (ring.py), so recording costs a few references and
appends per request."""

import contextvars
from time import perf_counter
from time import time as wall_clock
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from proxy import ids, redact
from proxy.wire.client_key import key_in

# A body larger than this is kept as its first BODY_CAP bytes (the page says how much was cut).
BODY_CAP = 256 * 1024
# A stream's chunks kept per exchange (the rest are counted).
MAX_CHUNKS = 2000
# Notes kept per exchange (a pathological schema could otherwise note thousands).
MAX_NOTES = 200
# Shared notes (Exchange.note_all) from this many on are kept as the JSON made of them once.
SHARED_JSON_MIN = 4
EMPTY: Any = MappingProxyType({})


# Paths seen (without a query: it may hold a key) and their protocol: most requests take one of a few.
PROTOCOLS: dict[str, str] = {}


def protocol_of(path: str) -> str:
    known = PROTOCOLS.get(path)
    if known is not None:
        return known
    protocol = _protocol_of(path.split("?", 1)[0])
    if "?" not in path and len(PROTOCOLS) < 1024:
        PROTOCOLS[path] = protocol
    return protocol


def _protocol_of(p: str) -> str:
    if p.startswith("/v1/responses") or p == "/v1/realtime":
        return "responses"
    if p.startswith("/v1/chat/completions"):
        return "chat"
    if p.startswith("/v1/messages"):
        return "anthropic"
    if "interactions" in p:
        return "interactions"
    if p.startswith("/v1/sessions"):
        return "sessions"
    if p.startswith(("/v1beta", "/v1alpha", "/v1/models/", "/v1/gemini", "/v1/files", "/upload")):
        return "gemini"
    return "other"


class UpstreamCall:
    """One call of the upstream: the body sent, each attempt (retries, the key used), the answer.

    Plain slots set in one __init__ (a dataclass's field factories cost more than recording the rest
    of the call). A whole answer the upstream kept as bytes (`raw`) is learnt from (calls, finish
    reasons, usage) only when someone reads the exchange (ring.summarize); a stream's chunks are
    learnt from as they pass, since only the first BODY_CAP bytes of them are kept."""
    __slots__ = ("model", "body", "stream", "start", "attempts", "answer", "chunks", "dropped_chunks",
                 "first_byte", "last_byte", "error", "raw", "body_obj", "parsed", "calls", "finish", "usage",
                 "version", "chunk_bytes", "tools", "learnt")

    def __init__(self, model: str, body: Any, stream: bool, body_obj: Any = None) -> None:
        # `body`: the object sent, or (raw) the bytes sent: the proxy's own serialization, copied when
        # kept (orjson's output holds its working buffer).
        self.model, self.body, self.stream = model, body, stream
        self.start = perf_counter()
        self.attempts: list[dict[str, Any]] = []
        self.answer: Any = None  # the object answered, or the bytes as read (an object of their own size)
        self.chunks: list[Any] | None = None  # a stream's, as they came (a list from the first)
        self.dropped_chunks = 0
        self.first_byte: float | None = None
        self.last_byte: float | None = None
        self.error: str | None = None
        self.raw = False  # the upstream records its own bytes (body, answer, chunks as they came)
        # The body as the object it was made from: its tools' names are read from it only when the
        # body itself is too large to keep whole (else from the kept body, when someone reads it).
        self.body_obj = body_obj
        self.parsed: Any = None  # the answer object the upstream parsed from the bytes it kept
        # What the summary shows of the answer (a stream's chunks are kept only up to BODY_CAP bytes,
        # its calls and usage always): lists once learn() runs.
        self.calls: list[dict[str, Any]] | tuple = ()
        self.finish: list[str] | tuple = ()
        self.usage: dict[str, Any] | None = None
        self.version: str | None = None
        self.chunk_bytes = 0
        self.tools: list[str] | None = None  # the declared tools' names, once known (ring.summarize)
        self.learnt = False  # calls, finish reasons, usage and version taken from the answer

    def learn(self, answer: Any) -> int:
        """Take the calls, finish reasons, usage and model version from an answer or a chunk; returns
        the size of its text (a cheap measure of what keeping it costs)."""
        if not self.learnt:
            self.learnt, self.calls, self.finish = True, [], []
        if type(answer) is not dict:
            return 0
        if "candidates" not in answer and type(answer.get("response")) is dict:  # Cloud Code's {"response": ...}
            answer = answer["response"]
        size = 0
        cands = answer.get("candidates")
        for cand in cands if type(cands) is list else ():
            if type(cand) is not dict:
                continue
            content = cand.get("content")
            parts = content.get("parts") if type(content) is dict else None
            for part in parts if type(parts) is list else ():
                if type(part) is not dict:
                    continue
                text = part.get("text")
                size += len(text) if type(text) is str else 64
                fc = part.get("functionCall")
                if type(fc) is dict and len(self.calls) < 200:
                    self.calls.append({"name": fc.get("name"), "id": fc.get("id")})
            reason = cand.get("finishReason")
            if type(reason) is str:
                self.finish.append(reason)
        usage, version = answer.get("usageMetadata"), answer.get("modelVersion")
        if type(usage) is dict:
            self.usage = usage
        if type(version) is str:
            self.version = version
        return size

    def learn_kept(self) -> None:
        """learn() from the answer as kept, for a whole answer not learnt from when it came."""
        if self.learnt:
            return
        answer, kept = self.parsed, self.answer
        if answer is None and type(kept) is bytes:
            try:
                answer = orjson.loads(kept)
            except orjson.JSONDecodeError:
                answer = None
        self.learn(answer)
        self.parsed = None

    def chunk(self, chunk: Any) -> None:
        """A chunk of the answer, learnt from and kept (an upstream that keeps its own chunks as they
        came, `raw`, is only learnt from: the proxy's reading of them, e.g. calls parsed from text)."""
        self.came(chunk, self.learn(chunk) + 200)

    def came(self, chunk: Any, size: int) -> None:
        """A chunk as it came, kept; `size`: about what keeping it costs."""
        now = perf_counter()
        if self.first_byte is None:
            self.first_byte = now
        self.last_byte = now
        chunks = self.chunks
        if chunks is None:
            chunks = self.chunks = []
        if len(chunks) < MAX_CHUNKS and self.chunk_bytes + size <= BODY_CAP:
            chunks.append(chunk)
            self.chunk_bytes += size
        else:
            self.dropped_chunks += 1


class Exchange:
    """One request and what the proxy did for it (see the module's docstring)."""
    __slots__ = ("id", "kind", "method", "path", "protocol", "scope", "session", "request_id", "client_model",
                 "time", "start", "request_headers", "request_body", "upstreams", "status", "answer_headers",
                 "answer_body", "answer_stream", "answer_stream_bytes", "notes", "shared_notes", "error", "secrets",
                 "traceparent", "end", "cut", "identified", "complete")

    def __init__(self, id: int | str, kind: str, method: str, path: str, request_headers: Any = EMPTY,
                 request_id: str | None = None, session: str | None = None, protocol: str = "", scope: str = "",
                 client_model: str | None = None) -> None:
        # id: the exchange's number (ids.exchange_number) until someone reads it (name), or an id.
        self.id, self.kind, self.method = id, kind, method  # kind: "frontend" or "mitm"
        self.path = path  # as requested; identify() takes the key out of its query
        self.protocol = protocol  # set from the path when empty (identify, kept.seal)
        self.scope = scope  # the client key's scope ("" without keys)
        self.session, self.request_id, self.client_model = session, request_id, client_model
        self.time = wall_clock()
        self.start = perf_counter()
        self.request_headers = request_headers  # raw pairs or a mapping, as received (redacted when serialized)
        self.request_body: Any = None  # the bytes as read (an object of their own size)
        self.upstreams: list[UpstreamCall] = []
        self.status = 0
        self.answer_headers: Any = None  # raw pairs or a mapping, as sent (redacted when serialized)
        self.answer_body: Any = None  # the bytes as sent (copied when kept)
        self.answer_stream: list[bytes] | None = None  # what a streaming answer wrote (a list from its first write)
        self.answer_stream_bytes = 0
        self.notes: list[dict[str, Any]] = []
        # (where in `notes`, how many, their JSON): notes made once for many exchanges (note_all), whose
        # JSON was made once too; the journal embeds it as it is (kept.seal).
        self.shared_notes: tuple[int, int, bytes] | None = None
        self.error: dict[str, Any] | None = None
        self.secrets: tuple[str, ...] = ()  # this exchange's own secrets (the key it presented)
        self.traceparent: str | None = None
        self.end: float | None = None
        self.cut = False  # too large for the journal: kept without its bodies
        self.identified = False  # identify() ran
        # (function, answer, record): what the request's side left to be read once it is over, in a batch
        # off the request's path (Recorder.finish).
        self.complete: tuple | None = None

    @property
    def name(self) -> str:
        """The exchange's id as clients see it."""
        return ids.exchange_id(self.id) if type(self.id) is int else self.id

    def identify(self) -> None:
        """What the request says of itself, read when the exchange is first read (or traced), never on
        the request's path: the key it presented (a secret of this exchange, scrubbed wherever it
        appears), its path without that key, its protocol, and the trace it continues."""
        if self.identified:
            return
        key, self.path, self.traceparent = identity(self.request_headers, self.path)
        if key:
            self.secrets = (*self.secrets, key)
        self.protocol = self.protocol or protocol_of(self.path)
        self.identified = True

    def note(self, kind: str, message: str, **detail: Any) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append({"kind": kind, "message": message, **detail})

    def note_all(self, notes: list[dict[str, Any]], json: bytes | None = None) -> None:
        """Record notes made beforehand (shared: a note is never changed once made). `json`: their JSON
        array's items (notes_json), made once: the journal embeds it instead of making it again for
        every exchange (a large tool list's repairs cost more to serialize than the rest of a
        request's record)."""
        if notes:
            mine = self.notes
            if len(mine) + len(notes) > MAX_NOTES:
                mine.extend(notes[: MAX_NOTES - len(mine)])
                return
            if json is not None and self.shared_notes is None:
                self.shared_notes = (len(mine), len(notes), json)
            mine.extend(notes)

    def streamed(self, data: bytes) -> None:
        """What a streaming answer wrote to the client, kept up to BODY_CAP bytes."""
        room = BODY_CAP - self.answer_stream_bytes
        if room > 0:
            if self.answer_stream is None:
                self.answer_stream = []
            self.answer_stream.append(data[:room])
        self.answer_stream_bytes += len(data)

    def upstream(self, model: str, body: Any, stream: bool) -> UpstreamCall:
        """A new call of the upstream; `body`: the object sent (its tools' names are read from it), or
        the bytes sent (read from them when the exchange is read)."""
        call = UpstreamCall(model, body, stream, body if type(body) is dict else None)
        self.upstreams.append(call)
        return call


def identity(headers: Any, path: str) -> tuple[str | None, str, str | None]:
    """The key a request presented (in a header or the query), its path without that key, and the
    trace it continues (`headers`: anything pairs() reads)."""
    lowered = {k.lower(): v for k, v in pairs(headers)}
    query_key = parse_qs(urlsplit(path).query).get("key", [None])[0] if "key=" in path else None
    return key_in(lowered, query_key) or None, redact.path(path), lowered.get("traceparent")


def pairs(headers: Any) -> Any:
    """Headers as (name, value) pairs of text: a mapping's items, pairs already (of bytes as the server
    read them: aiohttp's raw_headers, mitmproxy's Headers.fields), or kept.kept_headers()' block; bytes are
    decoded only now, when someone reads them."""
    if headers is None:
        return ()
    kind = type(headers)
    if kind is bytes:
        headers, kind = headers.decode("utf-8", "replace"), str
    if kind is str:  # a kept block: each name, then its value, one per line
        lines = headers.split("\n")
        return tuple(zip(lines[::2], lines[1::2], strict=False)) if headers else ()
    if kind is not tuple:
        return headers.items()
    return tuple((k.decode("utf-8", "replace"), v.decode("utf-8", "replace")) if type(k) is bytes else (k, v)
                 for k, v in headers)


CURRENT: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar("gtp_exchange", default=None)


def note(kind: str, message: str, **detail: Any) -> None:
    """Record one of the proxy's decisions on the exchange being served (nothing when none is)."""
    exchange = CURRENT.get()
    if exchange is not None:
        exchange.note(kind, message, **detail)


def note_all(notes: list[dict[str, Any]], json: bytes | None = None) -> None:
    """Record notes made beforehand (shared: a note is never changed once made; Exchange.note_all)."""
    exchange = CURRENT.get()
    if exchange is not None:
        exchange.note_all(notes, json)


def notes_json(notes: list[dict[str, Any]]) -> bytes | None:
    """Shared notes' JSON as Exchange.note_all takes it: the items of their array (the slice is an object
    of its own size: orjson's output keeps its working buffer). None for fewer than SHARED_JSON_MIN notes
    (embedding them costs more than making their JSON), or when a note is not plain JSON (the journal
    then makes it with its fallback, as for any note)."""
    if len(notes) < SHARED_JSON_MIN:
        return None
    try:
        return orjson.dumps(notes)[1:-1]
    except TypeError:
        return None


def recording() -> bool:
    """Whether an exchange is being recorded: a caller skips computing a note's detail otherwise."""
    return CURRENT.get() is not None


def new_upstream_call(model: str, body: Any, stream: bool) -> UpstreamCall | None:
    """Another call of the upstream for the current exchange (a retry with another body): from now on
    the one upstream_call() gives."""
    exchange = CURRENT.get()
    return exchange.upstream(model, body, stream) if exchange is not None else None


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
