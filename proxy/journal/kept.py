"""A finished exchange as the journal keeps it (seal) and as it is read again (thaw).

seal() reads each field of a finished exchange once and makes the journal's whole entry in one pass,
without writing anything back: the filters the list looks at, the exchange's plain fields, its bodies
as bytes of their own size (an object the proxy built becomes JSON now, as it could change once the
request is over; a body past BODY_CAP keeps its head; a large request body that mostly repeats the
last one on its route, as a splice of it: splice.py), its headers as one block each, its notes and
attempts as one JSON document (notes many exchanges share, such as a tool list's schema repairs,
embedded as the JSON made of them once), and last the bytes the entry is counted for. One flat tuple
of plain values: the collector stops looking at it after one pass (kept as objects, an exchange's fifteen or
so containers made every young collection slower in proportion). An exchange past `most` bytes
keeps its summary and decisions only.
"""

from typing import Any

import orjson
from multidict import CIMultiDict

from proxy.fast_json import held
from proxy.journal.exchange import BODY_CAP, PROTOCOLS, Exchange, UpstreamCall, pairs, protocol_of
from proxy.journal.splice import SPLICE_MIN, Bases, whole

# An entry: SCOPE, what the filters look at (FILTERED, then whether it failed), the frozen exchange
# (thaw reads it), the bytes it is counted for.
SCOPE, FILTERS, FROZEN, SIZE = 0, slice(1, 8), slice(8, -1), -1
FILTERED = ("session", "protocol", "kind", "status", "client_model", "gemini_model")
# The frozen exchange: these fields as they are (plain values, bytes, header blocks), in this order,
# then the JSON of the rest (META: notes, error, and per call its attempts, calls, finish reasons,
# usage and tools), then _FROZEN_CALL's fields for each call. The exchange's secrets (the key it
# presented, once identified) are a field of their own, scrubbed wherever they appear when read.
_FROZEN = ("id", "kind", "method", "path", "protocol", "scope", "session", "request_id", "client_model", "time",
           "start", "status", "answer_stream_bytes", "traceparent", "end", "cut", "identified", "secrets",
           "request_body", "answer_body", "answer_stream", "request_headers", "answer_headers")
_FROZEN_CALL = ("model", "stream", "start", "dropped_chunks", "first_byte", "last_byte", "error", "raw",
                "chunk_bytes", "learnt", "version", "body", "answer", "chunks")
META = len(_FROZEN)
_WIDTH, _BODY, _LEARNT, _VERSION = (len(_FROZEN_CALL), _FROZEN_CALL.index("body"), _FROZEN_CALL.index("learnt"),
                                    _FROZEN_CALL.index("version"))
# Bytes counted per entry beyond its bodies, header blocks and META: the tuple, its strings and
# numbers, and the journal's slot (tests/test_journal.py holds the count to what tracemalloc measures).
ENTRY_OVERHEAD = 1024
# What a kept block of headers holds beyond its text: its object's header and its slot.
HEADER_OVERHEAD = 48
CUT = "[cut: the exchange was too large for the journal (--journal-max-bytes / 4)]"
# byte_lru.held() without its call, for seal's bytes: _copy((data, b"")) makes an object of their own size.
_copy = b"".join


def seal(ex: Exchange, most: int, bases: Bases | None = None) -> tuple:
    """The journal's entry for a finished exchange (see the module's docstring). Each field is read
    once, by its name in the code (several times faster than operator.attrgetter; tests/test_journal.py
    holds the order to _FROZEN's and _FROZEN_CALL's). `bases`: the journal's, whose large request
    bodies are kept as what they add to the last one on their route (splice.py)."""
    request_headers = ex.request_headers
    if type(request_headers) is tuple and request_headers and type(request_headers[0][0]) is bytes:
        request_headers = b"\n".join(sum(request_headers, ()))  # the server's pairs (kept_headers, inlined)
    else:
        request_headers = kept_headers(request_headers)
    answer_headers = ex.answer_headers
    if type(answer_headers) is CIMultiDict:  # aiohttp's (kept_headers, inlined: every request's path)
        try:
            answer_headers = "\n".join(sum(answer_headers.items(), ()))
        except TypeError:  # values that are not text
            answer_headers = kept_headers(answer_headers)
    else:
        answer_headers = kept_headers(answer_headers)
    stream = ex.answer_stream
    stream = b"".join(stream) if stream else b""
    request_body, answer_body = ex.request_body, ex.answer_body
    sent = request_body  # (a call may have sent these very bytes)
    if type(request_body) is bytes and len(request_body) <= BODY_CAP:  # as read: kept as it is
        size = len(request_body)
        if bases is not None and size >= SPLICE_MIN:
            request_body, size = bases.kept((ex.scope, ex.session, ex.path, 0), request_body, ex.id, False)
    else:
        request_body, size = _kept(request_body)
    if type(answer_body) is bytes and len(answer_body) <= BODY_CAP:  # as sent: copied
        answer_body = _copy((answer_body, b""))
        size += len(answer_body)
    else:
        answer_body, n = _kept(answer_body)
        size += n
    size += len(stream) + len(request_headers) + len(answer_headers) + 2 * HEADER_OVERHEAD + ENTRY_OVERHEAD
    calls = ex.upstreams
    rows: list[Any] = []
    rests = []  # what goes into META per call
    for call in calls:
        body, answer = call.body, call.answer
        if call.raw and body is None:  # a passed-through call without a body (a GET, a DELETE)
            body = b""
        if body is sent and type(body) is bytes:  # the app's bytes sent as they came (the addon had nothing
            body = request_body  # to change): kept and counted once, with the request
        elif (call.raw or type(body) is bytes) and len(body) <= BODY_CAP:  # the bytes sent, kept whole: names are
            if bases is None or len(body) < SPLICE_MIN:  # read from them when read
                body = _copy((body, b""))
                size += len(body)
            else:
                body, n = bases.kept((ex.scope, ex.session, ex.path, 1), body, ex.id, True)
                size += n
        else:
            if call.tools is None and call.body_obj is not None:
                tools_of(call)  # its head alone would not tell
            body, n = _kept(body)
            size += n
        if type(answer) is bytes and len(answer) <= BODY_CAP:  # as read: kept as it is, learnt from when read
            size += len(answer)
        else:
            if not call.learnt and answer is not None:
                call.learn_kept()  # its head alone would not tell
            answer, n = _kept(answer)
            size += n
        chunks = call.chunks
        if chunks:  # a stream's: kept as JSON
            chunks, n = _kept(chunks)
            size += n
        else:
            chunks = None
        rows += (call.model, call.stream, call.start, call.dropped_chunks, call.first_byte, call.last_byte, call.error,
                 call.raw, call.chunk_bytes, call.learnt, call.version, body, answer, chunks)
        rests.append((call.attempts, call.calls, call.finish, call.usage, call.tools))
    cut = size > most
    if cut:  # the summary and decisions only
        if bases is not None:
            bases.evicted(ex.id)  # the bodies it would have kept whole are not kept
        request_body, answer_body, stream = _cut(request_body), _cut(answer_body or stream or None), b""
        for i, call in enumerate(calls):
            call.learn_kept()
            tools_of(call)  # while the body is still there
            at = i * _WIDTH
            body, answer, chunks = rows[at + _BODY:at + _WIDTH]
            rows[at + _BODY:at + _WIDTH] = (_cut(body), _cut(answer or chunks), None)
            rows[at + _LEARNT], rows[at + _VERSION] = call.learnt, call.version
            rests[i] = (call.attempts, call.calls, call.finish, call.usage, call.tools)
        size = len(request_headers) + len(answer_headers) + 2 * HEADER_OVERHEAD + ENTRY_OVERHEAD
    notes, shared = ex.notes, ex.shared_notes
    if shared is not None:  # their JSON, made once (exchange.note_all): its items in the array as they are
        at, count, items = shared
        notes = [*notes[:at], orjson.Fragment(items), *notes[at + count:]]
    meta = (notes, ex.error, rests)
    try:
        meta = _copy((orjson.dumps(meta), b""))
    except TypeError:  # a note's detail that is not JSON
        meta = held(orjson.dumps(meta, default=repr))
    path = ex.path
    scope, session, kind, status, client_model, protocol = (ex.scope, ex.session, ex.kind, ex.status, ex.client_model,
                                                            ex.protocol or PROTOCOLS.get(path) or protocol_of(path))
    return (scope, session or "", protocol, kind, status, client_model or "", calls[-1].model if calls else "",
            ex.error is not None,
            ex.id, kind, ex.method, path, protocol, scope, session, ex.request_id, client_model, ex.time, ex.start,
            status, ex.answer_stream_bytes, ex.traceparent, ex.end, cut, ex.identified, ex.secrets, request_body,
            answer_body,
            stream, request_headers, answer_headers, meta, *rows, size + len(meta))


def thaw(frozen: tuple) -> Exchange:
    """The exchange seal() was given, as an object again (changing it changes nothing kept), from
    the entry's FROZEN part."""
    ex = Exchange.__new__(Exchange)
    for name, value in zip(_FROZEN, frozen, strict=False):
        setattr(ex, name, value)
    ex.id = ex.name  # made of its number now
    notes, error, rests = orjson.loads(frozen[META])
    ex.request_headers, ex.answer_headers = pairs(ex.request_headers), pairs(ex.answer_headers)  # decoded once
    ex.notes, ex.error, ex.secrets, ex.complete, ex.shared_notes = notes, error, tuple(ex.secrets), None, None
    ex.request_body = whole(ex.request_body)
    ex.upstreams = []
    for i, rest in enumerate(rests):
        call = UpstreamCall.__new__(UpstreamCall)
        start = META + 1 + i * _WIDTH
        for name, value in zip(_FROZEN_CALL, frozen[start:start + _WIDTH], strict=True):
            setattr(call, name, value)
        call.body = whole(call.body)
        call.attempts, call.calls, call.finish, call.usage, call.tools = rest
        call.body_obj, call.parsed = None, None
        ex.upstreams.append(call)
    return ex


def kept_headers(headers: Any) -> bytes | str:
    """Headers as the journal keeps them: one block of lines, each name then its value (exchange.pairs()
    reads it back), bytes as read (the server's pairs of bytes) or text (a mapping). One object the
    collector never tracks, whose length is what it holds, made with one flattening and one join (no
    name or value may hold a line break: HTTP forbids it, aiohttp and mitmproxy refuse it)."""
    if headers is None:
        return b""
    kind = type(headers)
    if kind is bytes or kind is str:
        return headers  # kept already
    if kind is tuple:
        if not headers:
            return b""
        return (b"\n" if type(headers[0][0]) is bytes else "\n").join(sum(headers, ()))
    try:  # a mapping: aiohttp's answer headers (names are multidict's istr, values text)
        return "\n".join(sum(headers.items(), ()))
    except TypeError:  # values that are not text
        return "\n".join(f"{k}\n{v}" for k, v in headers.items())


def tools_of(call: UpstreamCall) -> list[str]:
    """The names of the tools a call declared: from the object the body was made of while there is
    one (no parse), else from the body."""
    if call.tools is None:
        body = call.body_obj
        if body is None and type(call.body) is bytes:
            try:
                body = orjson.loads(call.body)
            except orjson.JSONDecodeError:
                body = None
        call.tools = tool_names(body)
    return call.tools


def tool_names(body: Any) -> list[str]:
    """The names of a Gemini request body's function declarations (Cloud Code's wraps the request in
    {"request": ...}; [] for anything else)."""
    if isinstance(body, dict) and "tools" not in body and isinstance(body.get("request"), dict):
        body = body["request"]
    try:
        return [d["name"] for t in body.get("tools") or () for d in t.get("functionDeclarations") or ()]
    except (AttributeError, KeyError, TypeError):  # not a body the proxy built: no names
        return []


def _cut(body: Any) -> str | None:
    return None if body is None else CUT


_BYTES = (bytes, bytearray, memoryview)


def _kept(body: Any) -> tuple[Any, int]:
    """A body as the journal keeps it and the bytes it holds: bytes copied into an object of their own
    size, at most BODY_CAP of them (else the tuple (whole size, head)), JSON made now of an object."""
    if isinstance(body, _BYTES):
        return _head(body)
    if body is None:
        return None, 0
    kind = type(body)
    if kind is str:
        return body, len(body)
    if kind is tuple:
        return body, len(body[1])
    try:
        raw = orjson.dumps(body, default=fallback)
    except TypeError:
        text = repr(body)[:BODY_CAP]
        return text, len(text)
    if kind is list:  # a stream's chunks are kept whole (bounded as they came)
        return held(raw), len(raw)
    return _head(raw)


def _head(data: bytes | bytearray | memoryview) -> tuple[Any, int]:
    """Bytes in an object of their own size (byte_lru.held: orjson's output holds its whole working
    buffer, which made the journal hold several times what it counted), and the bytes they hold; past
    BODY_CAP, the tuple (whole size, the first BODY_CAP bytes)."""
    if len(data) <= BODY_CAP:
        return held(data), len(data)
    return (len(data), held(memoryview(data)[:BODY_CAP])), BODY_CAP


def fallback(value: Any) -> Any:
    """orjson's `default`: what is not JSON, as text (the journal shows it; it never fails a request)."""
    if isinstance(value, _BYTES):
        return bytes(value[:BODY_CAP]).decode("utf-8", "replace")
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    return repr(value)[:1000]
