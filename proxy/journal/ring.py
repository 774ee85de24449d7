"""The journal: finished exchanges, newest last, bounded by bytes, each under its client's scope.

An exchange is kept as it finished: the bytes and objects the request made anyway (settle() makes the
ones that could still change into JSON bytes, and cuts bodies at BODY_CAP), counted by their sizes.
It becomes a document (its bodies embedded as they came: orjson's Fragment, no re-parse) and is
scrubbed of secrets (redact.py) only when it leaves the journal — read by the page, the API or the
CLI, or shared through Redis — never on the request's path: serializing and scanning a 150 KB
exchange for every secret and credential shape costs about 1 ms on a small machine. Old exchanges go
first once `max_bytes` is passed; one exchange may take at most a quarter of it (its bodies are cut
first). A key sees its own exchanges only, as with sessions.
"""

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from proxy import metrics
from proxy.from_gemini.merge_chunks import merge_chunks
from proxy.journal import redact
from proxy.journal.exchange import BODY_CAP, Exchange, Json
from proxy.journal.redact import Redactor
from proxy.journal.shared import Shared
from proxy.store.byte_lru import held

log = logging.getLogger(__name__)
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
LIVE_QUEUE = 256        # summaries a slow live reader may fall behind before it misses some


def body_value(body: Any, content_type: str = "") -> Any:
    """A settled body (settle) as the document embeds it: JSON as it came (a Fragment), else text."""
    if body is None:
        return None
    if isinstance(body, Truncated):
        return {"truncated": True, "bytes": body.size, "head": body.head.decode("utf-8", "replace")}
    if isinstance(body, Json):  # settle() cut every body to BODY_CAP
        return orjson.Fragment(body.data) if body.data else None
    if not isinstance(body, bytes):
        return body  # text, or chunks: serialized with the document
    if not body:
        return None
    raw = body
    if raw[:1] in (b"{", b"[") and ("json" in content_type or not content_type):
        try:
            orjson.loads(raw)  # only well-formed JSON may be embedded as it is
            return orjson.Fragment(raw)
        except orjson.JSONDecodeError:
            pass
    if content_type.startswith(("image/", "audio/", "video/", "application/octet-stream")):
        return {"binary": True, "bytes": len(raw), "content_type": content_type}
    return raw.decode("utf-8", "replace")


def summarize(ex: Exchange) -> dict[str, Any]:
    """The list's row: what a person scans for (model, calls, status, times, tokens)."""
    calls: list[dict[str, Any]] = []
    finish: list[str] = []
    usage, version = None, None
    for call in ex.upstreams:
        calls += call.calls
        finish += call.finish
        usage, version = call.usage or usage, call.version or version
    upstream_ms = sum(((c.last_byte or c.start) - c.start) for c in ex.upstreams) * 1000
    total_ms = ((ex.end or time.perf_counter()) - ex.start) * 1000
    tools = (ex.upstreams[0].tools if ex.upstreams[0].body_obj is None else _tool_names(ex.upstreams[0].body_obj)
             ) if ex.upstreams else []
    return {
        "id": ex.id, "time": ex.time, "kind": ex.kind, "protocol": ex.protocol, "method": ex.method,
        "path": ex.path, "status": ex.status, "session": ex.session, "request_id": ex.request_id,
        "client_model": ex.client_model, "gemini_model": (ex.upstreams[-1].model if ex.upstreams else None),
        "model_version": version, "stream": any(c.stream for c in ex.upstreams), "tools": tools, "calls": calls,
        "finish_reasons": finish, "attempts": sum(len(c.attempts) or 1 for c in ex.upstreams),
        "total_ms": round(total_ms, 2), "upstream_ms": round(upstream_ms, 2),
        "proxy_ms": round(max(0.0, total_ms - upstream_ms), 2),
        "input_tokens": (usage or {}).get("promptTokenCount"),
        "output_tokens": (usage or {}).get("candidatesTokenCount"),
        "notes": len(ex.notes), "error": (ex.error or {}).get("message"),
    }


def _tool_names(body: Any) -> list[str]:
    try:
        return [d["name"] for t in body.get("tools") or () for d in t.get("functionDeclarations") or ()]
    except (AttributeError, KeyError, TypeError):  # not a body the proxy built: no names
        return []


def details(ex: Exchange) -> dict[str, Any]:
    """The exchange beyond its summary: the four bodies and the decisions."""
    b = body_value

    upstream = []
    for call in ex.upstreams:
        upstream.append({
            "model": call.model, "stream": call.stream, "attempts": call.attempts, "error": call.error,
            "first_byte_ms": None if call.first_byte is None else round((call.first_byte - call.start) * 1000, 2),
            "last_byte_ms": None if call.last_byte is None else round((call.last_byte - call.start) * 1000, 2),
            "request": b(call.body), "answer": b(call.answer) if call.answer is not None else _assembled(call.chunks),
            "chunks": b(call.chunks) if call.chunks else None, "chunks_dropped": call.dropped_chunks})
    answer_ct = ex.answer_headers.get("content-type", "")
    answer = (b(b"".join(ex.answer_stream).decode("utf-8", "replace")) if ex.answer_stream
              else b(ex.answer_body, answer_ct))
    return {"traceparent": ex.traceparent,
            "client_request": {"headers": redact.headers(ex.request_headers.items()),
                               "body": b(ex.request_body, ex.request_headers.get("content-type", ""))},
            "upstream": upstream,
            "client_answer": {"status": ex.status, "headers": ex.answer_headers, "body": answer,
                              "streamed_bytes": ex.answer_stream_bytes or None},
            "decisions": ex.notes, "error_detail": ex.error}


# Bytes counted per kept exchange beyond its bodies: the exchange, its upstream calls, headers, notes
# and the journal's slot (measured with tracemalloc for a small Responses exchange: about 3 KB).
ENTRY_OVERHEAD = 3072
PER_ITEM = 160  # each note, attempt, kept chunk and stream block, as held


def settle(ex: Exchange, most: int) -> int:
    """Make a finished exchange safe to keep as it is, and say how many bytes it holds: bodies the
    proxy built as objects become JSON now (they could change later), a body beyond BODY_CAP keeps
    only its head, and an exchange past `most` keeps its summary and decisions only."""
    size = ENTRY_OVERHEAD + PER_ITEM * len(ex.notes)
    ex.request_body = _kept(ex.request_body)
    ex.answer_body = _kept(ex.answer_body)
    size += _len(ex.request_body) + _len(ex.answer_body) + sum(map(len, ex.answer_stream))
    size += PER_ITEM * len(ex.answer_stream)
    for call in ex.upstreams:
        call.tools = _tool_names(call.body_obj)
        call.body_obj = None
        call.body, call.answer = _kept(call.body), _kept(call.answer)
        size += _len(call.body) + _len(call.answer) + call.chunk_bytes
        size += PER_ITEM * (len(call.chunks) + len(call.attempts) + len(call.calls))
    if size > most:
        ex.cut = True
        ex.request_body, ex.answer_body = _cut(ex.request_body), _cut(ex.answer_body or ex.answer_stream or None)
        ex.answer_stream = []
        for call in ex.upstreams:
            call.body, call.answer = _cut(call.body), _cut(call.answer or call.chunks or None)
            call.chunks = []
        size = ENTRY_OVERHEAD + PER_ITEM * len(ex.notes)
    return size


CUT = "[cut: the exchange was too large for the journal (--journal-max-bytes / 4)]"


def _cut(body: Any) -> str | None:
    return None if body is None else CUT


def _kept(body: Any) -> Any:
    """A body as the journal keeps it: bytes (at most BODY_CAP of them, with the whole size), JSON
    made now of an object (it may change once the request is over)."""
    if body is None or isinstance(body, Truncated):
        return body
    # Kept in objects of their own size (byte_lru.held): orjson's output holds its whole working
    # buffer, which made the journal hold several times what it counted.
    if isinstance(body, Json):
        return Json(held(body.data)) if len(body.data) <= BODY_CAP else Truncated(body.data)
    if isinstance(body, bytes | bytearray | memoryview):
        return held(body) if len(body) <= BODY_CAP else Truncated(bytes(body))
    try:
        raw = orjson.dumps(body, default=_fallback)
    except TypeError:
        return repr(body)[:BODY_CAP]
    return Json(held(raw)) if len(raw) <= BODY_CAP else Truncated(raw)


def _len(body: Any) -> int:
    if body is None:
        return 0
    if isinstance(body, Json):
        return len(body.data)
    if isinstance(body, Truncated):
        return len(body.head)
    return len(body) if isinstance(body, bytes | str) else 0


class Truncated:
    """The first BODY_CAP bytes of a body too large to keep whole, and its whole size."""
    __slots__ = ("head", "size")

    def __init__(self, raw: bytes) -> None:
        self.head, self.size = held(memoryview(raw)[:BODY_CAP]), len(raw)


def _assembled(chunks: list[Any]) -> Any:
    """A stream's chunks as the one answer generateContent would have given (the page shows both)."""
    if not chunks or not all(isinstance(c, dict) for c in chunks):
        return None
    try:
        return merge_chunks(chunks)
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


class Journal:
    """Finished exchanges, bounded by `max_bytes`, each under its client's scope."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, redactor: Redactor | None = None,
                 shared: Callable[[], Any] | None = None) -> None:
        """`shared`: gives the Redis client of the store when it is Redis (or None): the journal is
        then also kept there, for every instance (shared.py)."""
        self.max_bytes = max_bytes
        self.redactor = redactor or Redactor()
        self.shared = Shared(shared, max_bytes, self.render) if shared is not None else None
        self.total = 0
        # id -> (scope, the fields filters look at, the exchange, the bytes it is counted for)
        self._entries: OrderedDict[str, tuple[str, tuple, Exchange, int]] = OrderedDict()
        self._live: set[tuple[str, asyncio.Queue]] = set()
        metrics.SCRAPE_HOOKS.add(self)  # its size is read when /metrics is, not set per request

    def __len__(self) -> int:
        return len(self._entries)

    def export(self) -> None:
        metrics.JOURNAL_BYTES.set(self.total)

    def add(self, ex: Exchange) -> None:
        """Keep a finished exchange as it is: it is made into a document only when someone reads it."""
        size = settle(ex, self.max_bytes // 4)
        gemini_model = ex.upstreams[-1].model if ex.upstreams else ""
        keys = (ex.session or "", ex.protocol, ex.kind, ex.status, ex.client_model or "", gemini_model,
                ex.error is not None)
        self._entries[ex.id] = (ex.scope, keys, ex, size)
        self.total += size
        while self.total > self.max_bytes and self._entries:
            _, (_, _, _, old) = self._entries.popitem(last=False)
            self.total -= old
        if self._live and any(scope == ex.scope for scope, _ in self._live):
            self._deliver(ex.scope, self.redactor.scrub_summary(summarize(ex), ex.secrets)[1])
        if self.shared is not None:
            self.shared.publish(ex)

    def render(self, ex: Exchange) -> tuple[bytes, bytes]:
        """An exchange's summary and whole document, scrubbed of secrets."""
        head, _ = self.redactor.scrub_summary(summarize(ex), ex.secrets)
        details_doc = orjson.dumps(details(ex), default=_fallback)
        return head, self.redactor.scrub(head[:-1] + b"," + details_doc[1:], ex.secrets)

    def _deliver(self, scope: str, summary: dict[str, Any]) -> None:
        for wanted, queue in list(self._live):
            if wanted == scope:
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(summary)

    def list(self, scope: str, limit: int = 100, **filters: str | None) -> list[dict[str, Any]]:
        """The newest `limit` summaries of a scope, newest first, matching every filter given."""
        out = []
        for s, keys, ex, _ in reversed(self._entries.values()):
            if s != scope or not _matches(dict(zip(FILTERED, keys, strict=False)), keys[-1], filters):
                continue
            out.append(self.redactor.scrub_summary(summarize(ex), ex.secrets)[1])
            if len(out) >= limit:
                break
        return out

    async def list_all(self, scope: str, limit: int = 100, **filters: str | None) -> "list[dict[str, Any]]":
        """`list`, over every instance's exchanges when the journal is shared (else this one's)."""
        if self.shared is not None and self.shared.client is not None:
            try:
                return await self.shared.list(scope, limit, lambda s: _matches(s, bool(s.get("error")), filters))
            except Exception as e:  # Redis down: what this instance saw
                log.info("the shared journal is unavailable (%s); listing this instance's exchanges", e)
        return self.list(scope, limit, **filters)

    async def get_any(self, scope: str, exchange_id: str) -> bytes | None:
        """`get`, falling back on the shared journal for another instance's exchange."""
        doc = self.get(scope, exchange_id)
        if doc is None and self.shared is not None and self.shared.client is not None:
            try:
                doc = await self.shared.get(scope, exchange_id)
            except Exception as e:
                log.info("the shared journal is unavailable (%s)", e)
        return doc

    def get(self, scope: str, exchange_id: str) -> bytes | None:
        """One exchange's whole document, scrubbed of secrets, or None (unknown, or another scope's)."""
        entry = self._entries.get(exchange_id)
        if entry is None or entry[0] != scope:
            return None
        return self.render(entry[2])[1]

    @contextlib.asynccontextmanager
    async def live(self, scope: str) -> AsyncIterator[asyncio.Queue]:
        """Summaries of new exchanges of `scope` as they finish."""
        entry = (scope, asyncio.Queue(LIVE_QUEUE))
        self._live.add(entry)
        if self.shared is not None:
            self.shared.follow(self._deliver)
        try:
            yield entry[1]
        finally:
            self._live.discard(entry)


FILTERED = ("session", "protocol", "kind", "status", "client_model", "gemini_model")


def _matches(summary: dict[str, Any], failed: bool, filters: dict[str, str | None]) -> bool:
    for name, wanted in filters.items():
        if not wanted:
            continue
        if name == "model":
            if wanted not in (summary.get("client_model") or "") and wanted not in (summary.get("gemini_model") or ""):
                return False
        elif name == "status":
            status = summary.get("status") or 0
            ok = status < 400 and not failed
            if wanted in ("ok", "error") and (wanted == "ok") != ok:
                return False
            if wanted.isdigit() and str(status) != wanted:
                return False
        elif str(summary.get(name) or "") != wanted:
            return False
    return True


def _fallback(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value[:BODY_CAP]).decode("utf-8", "replace")
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    return repr(value)[:1000]
