"""The upstream side's one HTTP engine (HttpEngine), which every peer (gemini/, interactions/,
openai/) runs over: one lazily made, reusable aiohttp session and its bounded pool, the one retrying
POST (send), single calls (request_once), the reading of a whole answer (_read_answer) and the one
SSE event loop (_events). A peer adds only its URLs, headers, error parsing and chunk parsing.

Time is bounded at every step: connecting, waiting for the first byte and between meaningful data
(a whole SSE event; comments or trickled bytes do not count; a whole answer's unit is PROGRESS_BYTES),
and the whole exchange. Refusals marked as passing (429, 500, 503) and failed connections are
retried while nothing has reached the client yet.

When and how long to wait before asking again: exponential backoff with full jitter (the AWS
architecture blog's recommendation, as Google's own client libraries do), capped per wait; a hint
from the peer — `google.rpc.RetryInfo.retryDelay` in the error, or a `Retry-After` header — is
honoured instead. A hint longer than MAX_HINT is not waited out: the client gets the 429 with the
hint as its `Retry-After`, and decides. Along a fallback chain (fallback.py) the retries are counted
across its models: RETRIES_SPENT says how many the models before spent, and while another model is
there to ask (FALLING_BACK) a 429 or 503 goes to it at once rather than being waited out.
"""

import asyncio
import contextvars
import json
import logging
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from proxy import fast_json, metrics
from proxy.errors import ProxyError, UpstreamError
from proxy.journal.exchange import UpstreamCall, upstream_call
from proxy.wire.sse import SSEDecoder

log = logging.getLogger(__name__)

# ---- the retry policy ----

RETRYABLE_STATUS = frozenset({429, 500, 503})
from proxy.defaults import DEFAULT_MAX_RETRIES  # noqa: E402, F401 (the options' default)

BASE_DELAY = 0.5  # seconds before the first retry (times a random factor in [0, 1))
MAX_DELAY = 8.0   # cap of one backoff wait
MAX_HINT = 60.0   # a longer "retry in N s" from Gemini is passed to the client rather than waited out
# Retries the models tried before spent on this request (fallback.py); counted against max_retries.
RETRIES_SPENT: contextvars.ContextVar[int] = contextvars.ContextVar("gtp_retries_spent", default=0)
# A fallback model follows: a 429/503 (or every pooled key resting) is raised at once, not waited out.
FALLING_BACK: contextvars.ContextVar[bool] = contextvars.ContextVar("gtp_falling_back", default=False)
# The deadline a fallback chain's models share (the loop's clock), or None: each call's own.
CHAIN_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("gtp_chain_deadline", default=None)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")  # google.protobuf.Duration in JSON: "13s", "1.5s"


def retry_hint(error: Mapping[str, Any] | None, headers: Mapping[str, str] | None = None) -> float | None:
    """Seconds the peer asked to wait: RetryInfo.retryDelay in the error's details, else Retry-After."""
    for detail in (error or {}).get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            m = _DURATION.match(str(detail.get("retryDelay", "")))
            if m:
                return float(m.group(1))
    value = (headers or {}).get("retry-after", "")
    return float(value) if value.strip().isdigit() else None  # the HTTP-date form is not used by Google


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = DEFAULT_MAX_RETRIES

    def wait(self, attempt: int, hint: float | None) -> float | None:
        """Seconds to wait before retry number `attempt + 1`, or None: give up."""
        if attempt + RETRIES_SPENT.get() >= self.max_retries:
            return None
        if hint is not None:
            return hint if hint <= MAX_HINT else None
        return random.random() * min(MAX_DELAY, BASE_DELAY * 2 ** attempt)


# ---- reading ----

# A whole answer must bring this much more (or its end) within every --read-timeout: a trickle (a byte
# every 0.5 s) otherwise reset the socket's read timeout for ever and held the client to --total-timeout.
# (A stream's unit of progress is a whole event; a whole answer has none but its bytes.)
PROGRESS_BYTES = 16 * 1024


class Trickled(TimeoutError):
    """A whole answer's body brought less than PROGRESS_BYTES within one read timeout."""

    def __init__(self, received: int, window: float, silent: bool) -> None:
        self.received, self.window, self.silent = received, window, silent
        super().__init__(f"{received} bytes in {window:g}s")

    def what(self) -> str:
        """The upstream's failure, in the words of the 504 (after "Gemini ...")."""
        if self.silent:
            return f"sent nothing more of its answer for {self.window:g}s"
        return (f"sent only {self.received} bytes of its answer in {self.window:g}s (a trickle: at least "
                f"{PROGRESS_BYTES} or the end are expected)")


async def read_whole(resp: aiohttp.ClientResponse, window: float, deadline: float) -> bytes:
    """A whole answer's body: at least PROGRESS_BYTES (or the end) every `window` seconds, else
    Trickled; all of it by `deadline` (the loop's clock), else TimeoutError. One timer per window,
    not per read."""
    loop = asyncio.get_running_loop()
    parts: list[bytes] = []
    size, last = 0, loop.time()
    while True:
        mark, limit = size, min(loop.time() + window, deadline)
        try:
            async with asyncio.timeout_at(limit):
                while size - mark < PROGRESS_BYTES:
                    data = await resp.content.readany()
                    if not data:
                        return parts[0] if len(parts) == 1 else b"".join(parts)
                    parts.append(data)
                    size, last = size + len(data), loop.time()
        except TimeoutError as e:  # this window's, or the socket's read timeout (aiohttp's, the same length)
            if limit >= deadline and not isinstance(e, aiohttp.ServerTimeoutError):
                raise
            raise Trickled(size - mark, window, loop.time() - last >= window * 0.9) from e


def checked_base_url(base_url: str, what: str) -> URL:
    """`http(s)://host[:port][/path]` only: no query or fragment ever reaches a built URL."""
    base = URL(base_url.rstrip("/"))
    if base.scheme not in ("http", "https") or not base.host or base.query_string or base.fragment:
        raise ValueError(f"{what} must be http(s)://host[:port][/path], not {base_url!r}")
    return base


from proxy.defaults import DEFAULT_POOL_TIMEOUT  # noqa: E402, F401 (the options' default)


class PoolWait:
    """One request's wait for a pooled connection (_BoundedWaitConnector): while it is
    queued, its timeout (`scope`, the request's asyncio.timeout) is brought forward to the pool's bound,
    and put back once it has a connection; `queued` says which of the two ended it."""

    def __init__(self, scope: asyncio.Timeout, bound: float) -> None:
        self.scope, self.bound = scope, bound
        self.queued = False
        self.saved: float | None = None


# The current request's PoolWait, for the connector (set around a POST by the upstream's send).
POOL_WAIT: contextvars.ContextVar[PoolWait | None] = contextvars.ContextVar("gtp_pool_wait", default=None)


class _BoundedWaitConnector(aiohttp.TCPConnector):
    """aiohttp's connector, whose callers' timeout is brought forward to the pool's bound while the pool
    is full (PoolWait), and put back once they have a connection. Done here, not with aiohttp's
    connection-queued traces: a session with any trace config sends every trace signal of every
    request (about 30,000 instructions a request), where this is one check."""

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        wait = POOL_WAIT.get()
        if wait is None or not self.limit or len(self._acquired) < self.limit:  # a connection is free
            return await super().connect(req, traces, timeout)
        loop = asyncio.get_running_loop()
        wait.queued, wait.saved = True, wait.scope.when()
        bound = loop.time() + wait.bound
        wait.scope.reschedule(bound if wait.saved is None else min(bound, wait.saved))
        connection = await super().connect(req, traces, timeout)
        wait.queued = False
        wait.scope.reschedule(wait.saved)
        return connection


# send()'s journal record: looked up (exchange.upstream_call)
LOOKUP: Any = object()
# What a peer's parse gives for an event that ends the stream's data (`[DONE]`): not journaled,
# handed to its translate like any other event.
END_OF_STREAM: dict[str, Any] = {}


class NextKey(Exception):
    """Raised by a peer's _attempt_headers: the key could not be used (its token refused) and another is
    ready; send() goes on with it at once (not a retry)."""


@dataclass(frozen=True)
class Forwarded:
    """A passed-through call's answer, as the peer gave it."""
    status: int
    headers: dict[str, str]
    body: bytes


def _failure(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "status": status, "message": message}}


class Hops:
    """A stream continued hop by hop (an answer the peer stopped at its decode limit): `passed` sees
    each event of a hop and returns it as passed on; at the end of a hop's data, `stopped` says whether
    the hop stopped at the limit, and `next` opens the hop that continues it — its (response, journal
    record), or a ProxyError: refused."""

    def passed(self, chunk: dict[str, Any]) -> dict[str, Any]:
        return chunk

    def stopped(self) -> bool:
        return False

    async def next(self) -> tuple[aiohttp.ClientResponse, UpstreamCall | None]:
        raise NotImplementedError


class HttpEngine:
    """One peer's HTTP side. `pool_size`: connections open at once to this upstream (aiohttp's
    default, 100, made every client wait behind 100 slow streams); a request waits at most
    `pool_timeout` for one (PoolWait), then is refused with a 503 (_pool_full).

    A peer sets PEER (its name in errors, "Gemini"), WHAT (its base URL's name in a ValueError) and
    WIRE (the API it speaks, on the journal's record of each attempt), and overrides _headers and
    _error; a peer with a key pool overrides _credential, _attempt_headers, _note_key, _key_refused
    and _key_back."""

    PEER = "Gemini"
    WHAT = "the Gemini base URL"
    WIRE: str | None = None

    def __init__(self, base_url: str, connect_timeout: float, read_timeout: float, total_timeout: float,
                 retry: RetryPolicy | None = None, pool_size: int = 0, pool_timeout: float = DEFAULT_POOL_TIMEOUT
                 ) -> None:
        self.base_url = str(checked_base_url(base_url, self.WHAT))
        self.read_timeout, self.total_timeout = read_timeout, total_timeout
        self.retry = retry or RetryPolicy()
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout)
        self._whole_limit: aiohttp.ClientTimeout | None = None  # (_idle_limit's)
        self._session: aiohttp.ClientSession | None = None
        self.pool_size, self.pool_timeout = pool_size, pool_timeout

    # ---- the session and its pool ----

    def pool_state(self) -> tuple[int, int, int]:
        """(connections in use, the pool's size, requests waiting for one); size 0: no limit. aiohttp's
        own counts (private attributes)."""
        connector = self._session.connector if self._session is not None and not self._session.closed else None
        if connector is None:
            return 0, self.pool_size, 0
        waiters = getattr(connector, "_waiters", {})
        return len(getattr(connector, "_acquired", ())), self.pool_size, sum(len(w) for w in waiters.values())

    def _idle_limit(self, read_timeout: float) -> aiohttp.ClientTimeout:
        """For a request answered whole (not a stream): nothing read from the socket for `read_timeout`
        seconds, before the first byte or between two, ends it (aiohttp.ServerTimeoutError). A stream
        keeps its own clock, which only whole events reset. (Made once per value: ClientTimeout is frozen.)"""
        limit = self._whole_limit
        if limit is None or limit.sock_read != read_timeout:  # (sock_connect is the engine's, set once)
            limit = self._whole_limit = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout.sock_connect,
                                                              sock_read=read_timeout)
        return limit

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = _BoundedWaitConnector(limit=self.pool_size, limit_per_host=0)
            self._session = aiohttp.ClientSession(timeout=self._timeout, auto_decompress=True, connector=connector)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _deadline(self) -> float:
        """The total timeout from now, or a fallback chain's shared deadline if sooner."""
        own = asyncio.get_running_loop().time() + self.total_timeout
        chain = CHAIN_DEADLINE.get()
        return own if chain is None else min(own, chain)

    # ---- what a peer says ----

    async def _headers(self, key: Any) -> dict[str, str]:
        return {"content-type": "application/json"}

    async def _attempt_headers(self, key: Any) -> dict[str, str]:
        """The headers of one attempt of send(); NextKey: the key cannot be used, go on with another."""
        return await self._headers(key)

    def _error(self, status: int, text: str, headers: Mapping[str, str]) -> UpstreamError:
        """The peer's refusal (`text`: its body) as an UpstreamError, its retry hint on it."""
        raise NotImplementedError

    def _credential(self, api_key: str | None, model: str = "") -> Any:
        """The key a request goes with (None: none); an UpstreamError when every pooled key rests."""
        return None

    def _note_key(self, key: Any, outcome: str) -> None:
        """A pooled key's request ended: `outcome` "ok" or "error"."""

    async def _key_refused(self, key: Any, error: UpstreamError, attempt: int, deadline: float, model: str
                           ) -> int | None:
        """A refusal of `key` the key pool handles (a pooled key's 429): how many retries it spent going
        on (0: another key at once, 1: waited for one), or raised; None: not the pool's."""
        return None

    def _key_back(self, model: str) -> float | None:
        """Seconds until the key pool's first resting key (for `model`) is back; None: no key pool."""
        return None

    async def _wait_for_a_key(self, attempt: int, deadline: float, cooling: UpstreamError, model: str = "") -> bool:
        """Every pooled key rests: the retry rule still holds (one key and a "retry in 1s" is waited
        out, as the client's own key would be), if the first key is back within the hint cap, the
        retries left and the deadline; whether it was waited for (a retry). Refused credentials are
        not waited for."""
        if cooling.status != 429 or FALLING_BACK.get():  # (a fallback model is asked instead)
            return False
        back = self._key_back(model)
        wait = None if back is None else self.retry.wait(attempt, back)
        loop = asyncio.get_running_loop()
        if wait is None or loop.time() + wait >= deadline:
            return False
        log.info("every upstream key rests; retry %d of %d in %.1fs, when the first is back", attempt + 1,
                 self.retry.max_retries, wait)
        metrics.RETRIES.inc()
        await asyncio.sleep(wait)
        return True

    def _pool_full(self) -> UpstreamError:
        """No upstream connection came free within --pool-timeout: a 503 the client may retry."""
        message = (f"The proxy's {self.pool_size} connections to {self._peer()} are all in use and none came free "
                   f"within {self.pool_timeout:g}s; retry shortly.")
        error = UpstreamError(message, status=503, type="server_error", code="upstream_connections_busy",
                              gemini_error={"code": 503, "status": "UNAVAILABLE", "message": message})
        error.retry_after = 1.0
        error.headers = {"Retry-After": "1"}
        return error

    def _peer(self) -> str:
        """PEER within a sentence ("the OpenAI-compatible upstream")."""
        return "t" + self.PEER[1:] if self.PEER.startswith("The ") else self.PEER

    def _timed_out(self, what: str) -> UpstreamError:
        return UpstreamError(f"{self.PEER} {what} ({self.base_url}).", status=504, type="server_error",
                             gemini_error={"code": 504, "status": "DEADLINE_EXCEEDED",
                                           "message": f"The proxy's deadline passed: {self.PEER} {what}."})

    def _unreachable(self, e: Exception) -> UpstreamError:
        return UpstreamError(f"Could not reach {self._peer()} at {self.base_url}: {e}", status=502, type="server_error")

    def _unreadable(self, e: Exception | str) -> UpstreamError:
        return UpstreamError(f"{self.PEER} sent an unreadable answer: {e}", status=502, type="server_error")

    def _cut_answer(self, e: TimeoutError) -> UpstreamError:
        """A whole answer whose reading stalled or trickled (read_whole) or ran past the deadline."""
        if isinstance(e, Trickled):
            return self._timed_out(e.what())
        return self._timed_out(f"sent nothing more of its answer for {self.read_timeout:g}s"
                               if isinstance(e, aiohttp.ServerTimeoutError) else
                               f"did not finish its answer within the total deadline of {self.total_timeout:g}s")

    # ---- the retrying POST ----

    async def send(self, url: URL | Callable[[Any], URL], body: dict[str, Any], api_key: str | None,
                   stream: bool, deadline: float, journal: UpstreamCall | None = LOOKUP,
                   model: str = "") -> aiohttp.ClientResponse:
        """POST a body to one of the peer's URLs (or the URL for the credential used: Vertex's names
        its project), retried while the answer is retryable; a 200 is returned open. `journal`: the
        journal's record of this call (exchange.upstream_call(), looked up unless given); `model`:
        the model asked (pooled keys rest per model). While a fallback model is there to ask
        (FALLING_BACK), a 429 or 503 is raised at once rather than waited out."""
        data = fast_json.dumps(body)
        loop = asyncio.get_running_loop()
        attempt = 0
        if journal is LOOKUP:
            journal = upstream_call()
        if journal is not None:
            journal.raw, journal.body = True, data  # copied when kept (orjson's output holds its buffer)
        while True:
            try:
                key = self._credential(api_key, model)
            except UpstreamError as cooling:  # every pooled key rests (another request's 429s)
                if not await self._wait_for_a_key(attempt, deadline, cooling, model):
                    raise
                attempt += 1
                continue
            record = metrics.CURRENT.get()
            if record is not None:
                record.key = key.label if key else "none"
            # A stream's headers come at once: its first byte is timed here. A whole answer's read
            # timeout (first byte and between bytes) is the socket's (_idle_limit).
            limit = min(loop.time() + self.read_timeout, deadline) if stream else deadline
            wait = None
            try:
                async with asyncio.timeout_at(limit) as scope:
                    wait = PoolWait(scope, self.pool_timeout)
                    try:
                        headers = await self._attempt_headers(key)
                    except NextKey:
                        continue
                    read_limit = {} if stream else {"timeout": self._idle_limit(self.read_timeout)}
                    tried = None
                    if journal is not None:  # a new attempt on the journal's record: when, with which key's label
                        tried = {"start": time.perf_counter(), "key": key.label if key else None}
                        if self.WIRE is not None:
                            tried["wire"] = self.WIRE
                        journal.attempts.append(tried)
                    token = POOL_WAIT.set(wait)  # read by the connector if the pool is full
                    try:
                        resp = await self._http().post(url(key) if callable(url) else url, data=data,
                                                       headers=headers, **read_limit)
                    finally:
                        POOL_WAIT.reset(token)
                    if tried is not None:
                        tried["status"], tried["end"] = resp.status, time.perf_counter()
                    if resp.status == 200:
                        self._note_key(key, "ok")
                        if journal is not None:
                            journal.first_byte = time.perf_counter()
                        return resp
                    text = await resp.text(errors="replace")
                    resp.release()
                    if tried is not None:
                        tried["error"] = text[:2000]
                error = self._error(resp.status, text, resp.headers)
                metrics.UPSTREAM_ERRORS.labels(str(resp.status), error.type).inc()
                spent = await self._key_refused(key, error, attempt, deadline, model)
                if spent is not None:
                    attempt += spent
                    continue
                self._note_key(key, "error")
                if resp.status not in RETRYABLE_STATUS:
                    raise error
            except TimeoutError as e:
                if wait is not None and wait.queued:  # no pooled connection came free in time
                    metrics.UPSTREAM_ERRORS.labels("pool", "server_error").inc()
                    raise self._pool_full() from e
                idle = isinstance(e, aiohttp.ServerTimeoutError) or (stream and limit < deadline)
                raise self._timed_out(f"did not answer within {self.read_timeout:g}s" if idle
                                      else f"did not answer within the total deadline of {self.total_timeout:g}s"
                                      ) from e
            except aiohttp.ClientConnectionError as e:
                if journal is not None and journal.attempts:
                    journal.attempts[-1].update(error=f"could not connect: {e}", end=time.perf_counter())
                metrics.UPSTREAM_ERRORS.labels("connect", "server_error").inc()
                error = self._unreachable(e)
            except aiohttp.ClientError as e:
                raise self._unreachable(e) from e
            wait = self.retry.wait(attempt, error.retry_after)
            if wait is None or loop.time() + wait >= deadline or (FALLING_BACK.get() and error.status in (429, 503)):
                raise error
            log.info("%s answered %s; retry %d of %d in %.1fs", self.PEER, error.status, attempt + 1,
                     self.retry.max_retries, wait)
            metrics.RETRIES.inc()
            attempt += 1
            await asyncio.sleep(wait)

    # ---- a single call ----

    async def request_once(self, method: str, url: URL, body: bytes, headers: Mapping[str, str],
                           call: UpstreamCall | None, key_label: str | None, kept: Iterable[str]) -> Forwarded:
        """One call, not retried, its answer read whole and returned as it is, errors included;
        `kept`: the answer's headers passed back; `call`: the journal's record of it."""
        tried: dict[str, Any] = {}
        if call is not None:
            call.raw = True
            tried = {"start": time.perf_counter(), "key": key_label, "method": method}
            call.attempts.append(tried)
        deadline = self._deadline()
        try:
            async with asyncio.timeout_at(deadline):
                async with self._http().request(method, url, data=body or None, headers=headers,
                                                timeout=self._idle_limit(self.read_timeout)) as resp:
                    data = await read_whole(resp, self.read_timeout, deadline)
                    passed = {k: v for k, v in resp.headers.items() if k.lower() in kept}
                    if call is not None:
                        tried["status"] = resp.status
                        call.answer, call.first_byte = data, tried["start"]
                        call.last_byte = tried["end"] = time.perf_counter()
                    return Forwarded(resp.status, passed, data)
        except Trickled as e:
            tried["error"] = "timed out"
            raise self._timed_out(e.what()) from e
        except TimeoutError as e:
            tried["error"] = "timed out"
            idle = isinstance(e, aiohttp.ServerTimeoutError)
            raise self._timed_out(f"sent nothing for {self.read_timeout:g}s" if idle else
                                  f"did not answer within the total deadline of {self.total_timeout:g}s") from e
        except aiohttp.ClientError as e:
            tried["error"] = f"could not connect: {e}"
            raise self._unreachable(e) from e

    # ---- a whole answer ----

    async def _read_answer(self, resp: aiohttp.ClientResponse, deadline: float, call: UpstreamCall | None,
                           parsed: bool = True) -> Any:
        """A whole answer, read under the rule of meaningful progress and parsed; kept as read by the
        journal's `call` (with the object parsed from it when `parsed`: the answer passed on as it is).
        Read to the end, the connection serves the next request; cut short, it is dropped."""
        try:
            raw = await read_whole(resp, self.read_timeout, deadline)
            answer = await fast_json.loads_cooperatively(raw)
            if call is not None:
                # As read (an object of its own size), with the object parsed from it: learnt from
                # when someone reads the exchange, unless a wrapper changes the answer (observed.py).
                call.answer, call.last_byte = raw, time.perf_counter()
                if parsed:
                    call.parsed = answer
        except TimeoutError as e:
            resp.close()
            raise self._cut_answer(e) from e
        except (json.JSONDecodeError, UnicodeDecodeError, aiohttp.ClientError) as e:
            resp.close()
            raise self._unreadable(e) from e
        resp.release()
        return answer

    # ---- a stream ----

    async def _events(self, resp: aiohttp.ClientResponse, deadline: float,
                      parse: Callable[[str], dict[str, Any] | None],
                      journal: UpstreamCall | None = None,
                      hops: Hops | None = None,
                      translate: Callable[[dict[str, Any]], Iterable[dict[str, Any]]] | None = None,
                      finish: Callable[[], Iterable[dict[str, Any]]] | None = None
                      ) -> AsyncIterator[dict[str, Any]]:
        """The stream's events as they arrive, each `parse`d from its data (None: skipped). Only a
        whole event resets the idle clock, and only time spent waiting on the peer counts (not the
        time the client takes to read what was sent); a silence or the deadline ends it with a 504
        chunk, a broken connection with a 502 one. `journal`: where each parsed event is kept as it
        came (the proxy may rewrite it: text calls). `translate`: what the peer passes on for an
        event (an UpstreamError raised by either ends the stream with its 502); `finish`: what it passes on at
        the end. `hops`: the peer's continuation hops (Hops), whose chunks follow on."""
        loop = asyncio.get_running_loop()
        decoder = SSEDecoder()
        last, ended = loop.time(), False
        try:
            while True:
                while True:
                    limit = min(last + self.read_timeout, deadline)
                    try:
                        async with asyncio.timeout_at(limit):
                            data = await resp.content.readany()
                    except TimeoutError:
                        what = (f"took longer than the total deadline of {self.total_timeout:g}s"
                                if limit == deadline else f"sent nothing meaningful for {self.read_timeout:g}s")
                        yield _failure(504, "DEADLINE_EXCEEDED", f"{self.PEER} {what}.")
                        return
                    payloads = decoder.feed(data) if data else decoder.close()
                    for payload in payloads:
                        try:
                            chunk = parse(payload)
                        except UpstreamError as e:  # an event the peer cannot read
                            yield _failure(502, "INTERNAL", e.message)
                            return
                        if chunk is not None:
                            if journal is not None and chunk is not END_OF_STREAM:
                                journal.came(chunk, len(payload))
                            if hops is not None:
                                chunk = hops.passed(chunk)
                            if translate is None:
                                yield chunk
                            else:
                                try:
                                    out = translate(chunk)
                                except UpstreamError as e:
                                    yield _failure(502, "INTERNAL", e.message)
                                    return
                                for each in out:
                                    yield each
                        last = loop.time()
                    if not data:
                        break
                if hops is None or not hops.stopped():
                    ended = True
                    break
                resp.release()
                try:
                    hop = await hops.next()
                except ProxyError as e:  # no progress, too many hops, or the hop's request refused
                    ended = True  # (released above)
                    yield _failure(e.status, "UNAVAILABLE", e.message)
                    return
                resp, journal = hop
                decoder, last = SSEDecoder(), loop.time()
            for each in finish() if finish is not None else ():
                yield each
        except (aiohttp.ClientError, ValueError) as e:
            yield _failure(502, "UNAVAILABLE", f"{self.PEER} stream broke off: {e}")
        finally:
            # Cut short (the client went away, a deadline passed): drop the connection and its buffers.
            resp.release() if ended else resp.close()
