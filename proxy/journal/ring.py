"""The journal: finished exchanges, newest last, bounded by bytes, each under its client's scope.

A finished exchange is kept as it finished, sealed into one tuple of plain values (kept.py): the
bytes the request made anyway, what could still change made JSON, bodies cut at BODY_CAP. Kept as
objects (an exchange, its calls, their lists and dicts: about 15 tracked objects each), thousands of
exchanges made every collection slower in proportion, a third of the journal's cost per request.
Making the document at once instead (summary and all) cost more than that.

An exchange becomes a document (its bodies embedded as they came: orjson's Fragment, no re-parse)
and is scrubbed of secrets (redact.py) only when it leaves the journal — read by the page, the API or
the CLI, or shared through Redis — never on the request's path: serializing and scanning a 150 KB
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

from proxy import ids, metrics, redact
from proxy.journal.exchange import Exchange, pairs
from proxy.journal.kept import FILTERED, FILTERS, FROZEN, SCOPE, SIZE, fallback, seal, thaw, tools_of
from proxy.journal.shared import Shared
from proxy.journal.splice import Bases
from proxy.redact import Redactor
from proxy.wire.merge_chunks import merge_chunks

log = logging.getLogger(__name__)
from proxy.defaults import JOURNAL_MAX_BYTES as DEFAULT_MAX_BYTES  # noqa: E402 (the options' default)

LIVE_QUEUE = 256        # summaries a slow live reader may fall behind before it misses some
MAX_LIST = 1000         # summaries one list gives at most (each instance's, when the journal is shared)

Kept = tuple  # an entry (kept.py)


def body_value(body: Any, content_type: str = "") -> Any:
    """A kept body as the document embeds it: JSON as it came (a Fragment), else text."""
    if body is None:
        return None
    if type(body) is tuple:  # (whole size, head): cut at BODY_CAP
        return {"truncated": True, "bytes": body[0], "head": body[1].decode("utf-8", "replace")}
    if not isinstance(body, bytes):
        return body  # text
    if not body:
        return None
    if body[:1] in (b"{", b"[") and ("json" in content_type or not content_type):
        try:
            orjson.loads(body)  # only well-formed JSON may be embedded as it is
            return orjson.Fragment(body)
        except orjson.JSONDecodeError:
            pass
    if content_type.startswith(("image/", "audio/", "video/", "application/octet-stream")):
        return {"binary": True, "bytes": len(body), "content_type": content_type}
    return body.decode("utf-8", "replace")


def summarize(ex: Exchange) -> dict[str, Any]:
    """The list's row: what a person scans for (model, calls, status, times, tokens)."""
    ex.identify()
    calls: list[dict[str, Any]] = []
    finish: list[str] = []
    usage, version = None, None
    for call in ex.upstreams:
        call.learn_kept()
        calls += call.calls
        finish += call.finish
        usage, version = call.usage or usage, call.version or version
    upstream_ms = sum(((c.last_byte or c.start) - c.start) for c in ex.upstreams) * 1000
    total_ms = ((ex.end or time.perf_counter()) - ex.start) * 1000
    tools = tools_of(ex.upstreams[0]) if ex.upstreams else []
    return {
        "id": ex.name, "time": ex.time, "kind": ex.kind, "protocol": ex.protocol, "method": ex.method,
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


def _content_type(headers: Any) -> str:
    for name, value in pairs(headers):
        if name.lower() == "content-type":
            return value
    return ""


def details(ex: Exchange) -> dict[str, Any]:
    """The exchange beyond its summary: the four bodies and the decisions."""
    ex.identify()
    b = body_value
    upstream = []
    for call in ex.upstreams:
        chunks = call.chunks
        wire = wire_of(call)
        assembled = _assembled(chunks) if wire == GENERATE_CONTENT else None  # (another API's events: as they are)
        upstream.append({
            "model": call.model, "wire": wire, "stream": call.stream, "attempts": call.attempts, "error": call.error,
            "first_byte_ms": None if call.first_byte is None else round((call.first_byte - call.start) * 1000, 2),
            "last_byte_ms": None if call.last_byte is None else round((call.last_byte - call.start) * 1000, 2),
            "request": b(call.body), "answer": b(call.answer) if call.answer is not None else assembled,
            "chunks": b(chunks) if chunks else None, "chunks_dropped": call.dropped_chunks})
    if ex.answer_stream:  # the events as the client got them (joined by seal)
        answer = ex.answer_stream.decode("utf-8", "replace")
    else:
        answer = b(ex.answer_body, _content_type(ex.answer_headers))
    return {"traceparent": ex.traceparent,
            "client_request": {"headers": redact.headers(pairs(ex.request_headers)),
                               "body": b(ex.request_body, _content_type(ex.request_headers))},
            "upstream": upstream,
            "client_answer": {"status": ex.status, "headers": redact.headers(pairs(ex.answer_headers)),
                              "body": answer, "streamed_bytes": ex.answer_stream_bytes or None},
            "decisions": list(ex.notes), "error_detail": ex.error}


GENERATE_CONTENT = "generate_content"


def wire_of(call: Any) -> str:
    """The API the call spoke: generateContent's, unless its attempts name another (the Interactions
    API, an OpenAI-compatible server's Chat Completions: their bodies are theirs, not Gemini's)."""
    for attempt in call.attempts:
        if type(attempt) is dict and "wire" in attempt:
            return str(attempt["wire"])
    return GENERATE_CONTENT


def _assembled(chunks: Any) -> Any:
    """A stream's chunks as the one answer generateContent would have given (the page shows both)."""
    if type(chunks) is bytes:
        try:
            chunks = orjson.loads(chunks)
        except orjson.JSONDecodeError:
            return None
    if not chunks or type(chunks) is not list or not all(isinstance(c, dict) for c in chunks):
        return None
    try:
        return merge_chunks(chunks)
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


class Journal:
    """Finished exchanges, bounded by `max_bytes`, each under its client's scope."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, redactor: Redactor | None = None,
                 shared: Callable[[], Any] | None = None) -> None:
        """`shared`: gives the Redis client of the store when it is Redis (or None): every instance's
        journal is then read through it (shared.py)."""
        self.max_bytes = max_bytes
        self.redactor = redactor or Redactor()
        self.shared = Shared(shared, self) if shared is not None else None
        self.total = 0
        self._entries: OrderedDict[str, Kept] = OrderedDict()
        self.bases = Bases()  # the bodies the next large ones are kept as splices of (splice.py)
        self._live: set[tuple[str, asyncio.Queue]] = set()
        self.before_read: Callable[[], None] = _nothing  # finishes exchanges still pending (Recorder)
        metrics.SCRAPE_HOOKS.add(self)  # its size is read when /metrics is, not set per request

    def __len__(self) -> int:
        return len(self._entries)

    def export(self) -> None:
        self.before_read()
        metrics.JOURNAL_BYTES.set(self.total)

    def add(self, ex: Exchange) -> None:
        """Keep a finished exchange as it is (frozen): it is made into a document only when someone
        reads it."""
        kept = seal(ex, self.max_bytes // 4, self.bases)
        size = kept[SIZE]
        entries = self._entries
        entries[ex.id] = kept
        self.total += size
        while self.total > self.max_bytes and entries:
            self.drop_oldest()
        scope, summary = kept[SCOPE], None
        if self._live and self._wanted(scope):
            summary = self._summary(thaw(kept[FROZEN]))[1]
            self.deliver(scope, summary)
        shared = self.shared
        if shared is not None:  # (two reads when nobody follows and there is no Redis: this is every request's path)
            if shared.followers and shared.follows(scope):  # another instance's page follows this scope live
                shared.announce(scope, summary or self._summary(thaw(kept[FROZEN]))[1])
            elif shared.listener is None and shared.client_of() is not None:
                shared.start()

    def drop_oldest(self) -> None:
        """Let go of the oldest exchange (and of the bases it kept whole: splice.py)."""
        number, gone = self._entries.popitem(last=False)
        self.total -= gone[SIZE]
        self.bases.evicted(number)

    def clear(self) -> None:
        """Let go of every exchange."""
        self._entries.clear()
        self.bases.clear()
        self.total = 0

    def _summary(self, ex: Exchange) -> tuple[bytes, dict[str, Any]]:
        head = orjson.dumps(summarize(ex), default=fallback)
        return self.redactor.scrub_summary(head, ex.secrets)

    def document(self, kept: Kept) -> bytes:
        """A kept exchange's whole document, scrubbed of secrets."""
        ex = thaw(kept[FROZEN])
        head, _ = self._summary(ex)
        rest = orjson.dumps(details(ex), default=fallback)
        return self.redactor.scrub(head[:-1] + b"," + rest[1:], ex.secrets)

    def _wanted(self, scope: str) -> bool:
        return any(wanted == scope for wanted, _ in self._live)

    def followed(self) -> set[str]:
        """The scopes someone here follows live."""
        return {scope for scope, _ in self._live}

    def deliver(self, scope: str, summary: dict[str, Any]) -> None:
        """A new exchange's summary (this instance's, or another's: shared.py), to those following its scope."""
        for wanted, queue in list(self._live):
            if wanted == scope:
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(summary)

    def list(self, scope: str, limit: int = 100, **filters: str | None) -> list[dict[str, Any]]:
        """The newest `limit` summaries of a scope (1 to MAX_LIST), newest first, matching every filter given."""
        self.before_read()
        limit, out = max(1, min(MAX_LIST, limit)), []
        for kept in reversed(self._entries.values()):
            if kept[SCOPE] != scope or not _brief_matches(kept[FILTERS], filters):
                continue
            out.append(self._summary(thaw(kept[FROZEN]))[1])
            if len(out) >= limit:
                break
        return out

    async def list_all(self, scope: str, limit: int = 100, **filters: str | None) -> "list[dict[str, Any]]":
        """`list`, over every instance's exchanges when the journal is shared (else this one's): each
        instance that is up lists its own, newest first, and the newest `limit` of them all are kept."""
        rows = self.list(scope, limit, **filters)
        if self.shared is not None and self.shared.client is not None:
            try:
                replies = await self.shared.ask("list", scope, limit=limit, filters=filters)
            except Exception as e:  # Redis down: what this instance saw
                log.info("the shared journal is unavailable (%s); listing this instance's exchanges", e)
                return rows
            for reply in replies:
                try:
                    theirs = orjson.loads(self.redactor.scrub(reply))  # scrubbed by its instance; by ours too
                except orjson.JSONDecodeError:
                    continue
                rows += [row for row in theirs if type(row) is dict] if type(theirs) is list else ()
            if replies:
                rows.sort(key=_newest_first)
                del rows[limit:]
        return rows

    async def get_any(self, scope: str, exchange_id: str) -> bytes | None:
        """`get`, falling back on the shared journal for another instance's exchange."""
        doc = self.get(scope, exchange_id)
        if doc is None and self.shared is not None and self.shared.client is not None:
            try:
                replies = await self.shared.ask("get", scope, id=exchange_id)
            except Exception as e:
                log.info("the shared journal is unavailable (%s)", e)
                return None
            for reply in replies:
                if reply:
                    return self.redactor.scrub(reply)  # scrubbed by its instance; by this one's secrets too
        return doc

    def get(self, scope: str, exchange_id: str) -> bytes | None:
        """One exchange's whole document, scrubbed of secrets, or None (unknown, or another scope's)."""
        self.before_read()
        kept = self._entries.get(exchange_id)
        if kept is None:  # this process's exchanges are kept under their number
            number = ids.exchange_number_of(exchange_id)
            kept = self._entries.get(number) if number is not None else None
        if kept is None or kept[SCOPE] != scope:
            return None
        return self.document(kept)

    @contextlib.asynccontextmanager
    async def live(self, scope: str) -> AsyncIterator[asyncio.Queue]:
        """Summaries of new exchanges of `scope` as they finish."""
        entry = (scope, asyncio.Queue(LIVE_QUEUE))
        self._live.add(entry)
        try:
            if self.shared is not None:
                await self.shared.follow(scope)  # (a follower that leaves meanwhile is forgotten all the same)
            yield entry[1]
        finally:
            self._live.discard(entry)


def _nothing() -> None:
    pass


def _newest_first(row: dict[str, Any]) -> float:
    when = row.get("time")
    return -when if type(when) in (int, float) else 0.0


def _brief_matches(keys: Any, filters: dict[str, str | None]) -> bool:
    """Whether an entry's filter values (kept.FILTERS: FILTERED's, then whether it failed) match."""
    return _matches(dict(zip(FILTERED, keys, strict=False)), keys[-1], filters)


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
