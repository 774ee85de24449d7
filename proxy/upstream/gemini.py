"""HTTP client for the Gemini API (or any server speaking it: the mock, a local gateway).

Time is bounded at every step (defaults below, options of the same names): connecting, waiting
for the first byte and between meaningful data (a whole SSE event; comments or trickled bytes do
not count), and the whole exchange. Refusals Gemini marks as passing (429, 500, 503) and failed
connections are retried (retry.py) while nothing has reached the client yet.
"""

import asyncio
import contextvars
import json
import logging
import math
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from proxy import __version__, fast_json, metrics
from proxy.errors import ProxyError, UpstreamError
from proxy.from_gemini.merge_hops import (
    added_parts,
    continuation_of,
    continued_body,
    hop_refusal,
    merge_hops,
    summed_usage,
)
from proxy.journal import exchange
from proxy.journal.exchange import UpstreamCall, upstream_call
from proxy.upstream.credentials import ApiKey, Credential, CredentialError
from proxy.upstream.http_session import (
    DEFAULT_POOL_TIMEOUT,
    POOL_WAIT,
    HttpSession,
    PoolWait,
    Trickled,
    checked_base_url,
    read_whole,
)
from proxy.upstream.key_pool import KeyPool, keys_from_env
from proxy.upstream.retry import CHAIN_DEADLINE, FALLING_BACK, RETRYABLE_STATUS, RetryPolicy, retry_hint
from proxy.wire.gemini import error_of
from proxy.wire.model_name import model_resource
from proxy.wire.sse import SSEDecoder

log = logging.getLogger(__name__)
LOOKUP: Any = object()  # send()'s journal record: looked up (exchange.upstream_call)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
DEFAULT_CONNECT_TIMEOUT = 10.0
# Idle time allowed between meaningful data of a stream (and before its first byte): thinking
# models pause before their first token, rarely for more than a minute.
DEFAULT_READ_TIMEOUT = 120.0
# The whole exchange, retries included: a long agent turn streams for minutes, never for this long.
DEFAULT_TOTAL_TIMEOUT = 900.0
PROXY_TOKEN = f"gemini-tool-proxy/{__version__}"
# The calling client's identification, forwarded with the proxy's token appended (set per request by
# the Gemini-native routes; a context variable, so wrappers between route and upstream need not know).
CLIENT_HEADERS: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("client_headers",
                                                                                          default=None)
FORWARDED_HEADERS = ("user-agent", "x-goog-api-client")
# What a passed-through path may be made of: API path segments, never `.`/`..` or escapes.
PATH_SEGMENT = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9_.:\-]{1,256}$")
# Request headers a passed-through call keeps (uploads describe themselves in x-goog-upload-*).
PASSED_HEADERS = ("content-type", "x-goog-upload-protocol", "x-goog-upload-command", "x-goog-upload-offset",
                  "x-goog-upload-header-content-length", "x-goog-upload-header-content-type",
                  "x-goog-upload-file-name")
# Answer headers passed back (the upload URL comes back in x-goog-upload-url).
RETURNED_HEADERS = ("content-type", "x-goog-upload-url", "x-goog-upload-status", "x-goog-upload-chunk-granularity",
                    "x-goog-upload-control-url", "x-goog-upload-size-received")


# Upstream URLs kept built, per upstream (one per model and kind of call).
MAX_URLS = 256

# An upstream URL, or the URL for the credential a request is sent with (Vertex's names its project).
Target = URL | Callable[[Credential | None], URL]


def client_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The client's User-Agent / x-goog-api-client with the proxy's token appended."""
    return {name: f"{headers[name]} {PROXY_TOKEN}" for name in FORWARDED_HEADERS if headers.get(name)}


@dataclass(frozen=True)
class Forwarded:
    """A passed-through call's answer, as Gemini gave it."""
    status: int
    headers: dict[str, str]
    body: bytes


class GeminiUpstream(HttpSession):
    # The API this upstream speaks, on the journal's record of each attempt when not generateContent's.
    WIRE: str | None = None
    # Who stops a long answer at its decode limit, and the sign of it (continuation hops: _next_hop).
    STOPPED_BY = ("Gemini", "finishReason CONTINUATION")

    def __init__(self, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None, api_version: str = "v1beta",
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, read_timeout: float = DEFAULT_READ_TIMEOUT,
                 total_timeout: float = DEFAULT_TOTAL_TIMEOUT, retry: RetryPolicy | None = None,
                 keys: list[str] | None = None, pool_size: int = 0, pool_timeout: float = DEFAULT_POOL_TIMEOUT
                 ) -> None:
        base = checked_base_url(base_url, "the Gemini base URL")
        self.base_url = str(base)
        # The server's own keys, used in turn when the client brings none (key_pool.py).
        self.pool = KeyPool(keys if keys else [api_key] if api_key else keys_from_env(dict(os.environ)))
        self.api_key = api_key if api_key is not None else os.environ.get("GEMINI_API_KEY")
        self.api_version = api_version
        self.read_timeout, self.total_timeout = read_timeout, total_timeout
        self.retry = retry or RetryPolicy()
        # By (model, stream, base URL): built once (yarl's joins cost about 1 % of a small request).
        self._urls: dict[tuple[str, bool, str], URL] = {}
        super().__init__(connect_timeout, pool_size, pool_timeout)

    def _url(self, model: str, stream: bool) -> Target:
        """Built from validated parts only: the model is checked against Gemini's grammar (a 400
        before any request otherwise) and becomes one path segment; the query is ours alone."""
        url = self._urls.get((model, stream, self.base_url))
        if url is not None:
            return url
        collection, model_id = model_resource(model)
        method = "streamGenerateContent" if stream else "generateContent"
        url = URL(self.base_url).joinpath(self.api_version, collection, f"{model_id}:{method}")
        url = url.with_query(alt="sse") if stream else url
        if len(self._urls) >= MAX_URLS:  # model names come from clients: a bounded few
            self._urls.clear()
        self._urls[(model, stream, self.base_url)] = url
        return url

    async def _headers(self, key: Credential | None) -> dict[str, str]:
        headers = {"content-type": "application/json", "user-agent": PROXY_TOKEN, **(CLIENT_HEADERS.get() or {})}
        if key is not None:
            headers.update(await key.headers())
        return headers

    def _pool_full(self) -> UpstreamError:
        """No upstream connection came free within --pool-timeout: a 503 the client may retry."""
        message = (f"The proxy's {self.pool_size} connections to Gemini are all in use and none came free within "
                   f"{self.pool_timeout:g}s; retry shortly.")
        error = UpstreamError(message, status=503, type="server_error", code="upstream_connections_busy",
                              gemini_error={"code": 503, "status": "UNAVAILABLE", "message": message})
        error.retry_after = 1.0
        error.headers = {"Retry-After": "1"}
        return error

    def _timed_out(self, what: str) -> UpstreamError:
        return UpstreamError(f"Gemini {what} ({self.base_url}).", status=504, type="server_error",
                             gemini_error={"code": 504, "status": "DEADLINE_EXCEEDED",
                                           "message": f"The proxy's deadline passed: Gemini {what}."})

    def _cut_answer(self, e: TimeoutError) -> UpstreamError:
        """A whole answer whose reading stalled or trickled (read_whole) or ran past the deadline."""
        if isinstance(e, Trickled):
            return self._timed_out(e.what())
        return self._timed_out(f"sent nothing more of its answer for {self.read_timeout:g}s"
                               if isinstance(e, aiohttp.ServerTimeoutError) else
                               f"did not finish its answer within the total deadline of {self.total_timeout:g}s")

    async def _post(self, model: str, body: dict[str, Any], api_key: str | None, stream: bool,
                    deadline: float, journal: UpstreamCall | None = LOOKUP) -> aiohttp.ClientResponse:
        return await self.send(self._url(model, stream), body, api_key, stream, deadline, journal, model)

    async def send(self, url: Target, body: dict[str, Any], api_key: str | None,
                   stream: bool, deadline: float, journal: UpstreamCall | None = LOOKUP,
                   model: str = "") -> aiohttp.ClientResponse:
        """POST a body to one of Gemini's URLs (or the URL for the credential used: Vertex's names
        its project), retried while the answer is retryable; a 200 is returned open. `journal`: the
        journal's record of this call (exchange.upstream_call(), looked up unless given); `model`:
        the model asked (pooled keys rest per model). While a fallback model is there to ask
        (retry.FALLING_BACK), a 429 or 503 is raised at once rather than waited out."""
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
                        headers = await self._headers(key)
                    except CredentialError:
                        if key is None or not self.pool.owns(key):
                            raise
                        self.pool.cool(key, None, "refused")
                        if self.pool.ready():  # another credential can go on at once
                            log.warning("upstream credential %s was refused a token; going on with the next",
                                        key.label)
                            continue
                        raise
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
                error = _error_from(resp.status, text, resp.headers)
                metrics.UPSTREAM_ERRORS.labels(str(resp.status), error.type).inc()
                if resp.status == 429 and key and self.pool.owns(key):
                    self.pool.cool(key, error.retry_after, model=model)
                    if self.pool.ready(model):  # another key is ready: no wait, not a retry
                        log.info("Gemini rate-limited key %s; going on with the next key", key.label)
                        continue
                    cooling = self._all_cooling(error, model)
                    if not await self._wait_for_a_key(attempt, deadline, cooling, model):
                        raise cooling
                    attempt += 1
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
                error = UpstreamError(f"Could not reach Gemini at {self.base_url}: {e}", status=502,
                                      type="server_error")
            except aiohttp.ClientError as e:
                raise UpstreamError(f"Could not reach Gemini at {self.base_url}: {e}", status=502,
                                    type="server_error") from e
            wait = self.retry.wait(attempt, error.retry_after)
            if wait is None or loop.time() + wait >= deadline or (FALLING_BACK.get() and error.status in (429, 503)):
                raise error
            log.info("Gemini answered %s; retry %d of %d in %.1fs", error.status, attempt + 1,
                     self.retry.max_retries, wait)
            metrics.RETRIES.inc()
            attempt += 1
            await asyncio.sleep(wait)

    async def _wait_for_a_key(self, attempt: int, deadline: float, cooling: UpstreamError, model: str = "") -> bool:
        """Every pooled key rests: the retry rule still holds (one key and a "retry in 1s" is waited
        out, as the client's own key would be), if the first key is back within the hint cap, the
        retries left and the deadline. Refused credentials are not waited for."""
        if cooling.status != 429 or FALLING_BACK.get():  # (a fallback model is asked instead)
            return False
        wait = self.retry.wait(attempt, self.pool.soonest(model))
        loop = asyncio.get_running_loop()
        if wait is None or loop.time() + wait >= deadline:
            return False
        log.info("every upstream key rests; retry %d of %d in %.1fs, when the first is back", attempt + 1,
                 self.retry.max_retries, wait)
        metrics.RETRIES.inc()
        await asyncio.sleep(wait)
        return True

    def _credential(self, api_key: str | None, model: str = "") -> Credential | None:
        """The client's own key, else the server's next pooled one (every pooled key resting is the
        client's 429), else none (Gemini's own 403 says a key is missing)."""
        if api_key:
            return ApiKey(api_key)
        if not len(self.pool):
            return ApiKey(self.api_key) if self.api_key else None
        key = self.pool.pick(model)
        if key is None:
            raise self._all_cooling(None, model)
        return key

    def _note_key(self, key: Credential | None, outcome: str) -> None:
        if key and self.pool.owns(key):
            self.pool.used(key, outcome)

    def _all_cooling(self, error: UpstreamError | None, model: str = "") -> UpstreamError:
        wait = self.pool.soonest(model)
        if self.pool.refused_all():
            return CredentialError(f"Every upstream credential ({len(self.pool)}) was refused a token by Google's "
                                   f"token endpoint; the first is tried again in {wait:.0f}s.", status=502,
                                   type="server_error", gemini_error={
                                       "code": 502, "status": "UNAVAILABLE",
                                       "message": "Every upstream credential of the proxy was refused a token."})
        out = UpstreamError(f"Gemini error: every upstream key ({len(self.pool)}) is rate-limited; the first is "
                            f"usable again in {wait:.0f}s.", status=429, type="rate_limit_error",
                            code="rate_limit_exceeded",
                            gemini_error=(error.gemini_error if error else None) or {
                                "code": 429, "status": "RESOURCE_EXHAUSTED",
                                "message": f"Every upstream key is rate-limited; retry in {wait:.0f}s."})
        out.retry_after = wait
        out.headers = {"Retry-After": str(max(1, math.ceil(wait)))}
        return out

    def path_url(self, prefix: tuple[str, ...], segments: list[str], query: Mapping[str, str]) -> Target:
        """An upstream URL for a passed-through path: each segment checked, the query re-encoded
        without the caller's `key` (the key travels in a header)."""
        for segment in segments:
            if not PATH_SEGMENT.match(segment):
                raise ProxyError(f"Invalid path segment {segment[:80]!r}: letters, digits, '_', '.', ':' and '-' "
                                 "only.", status=400)
        url = URL(self.base_url).joinpath(*prefix, *segments)
        return url.with_query({k: v for k, v in query.items() if k != "key"})

    async def forward(self, method: str, url: Target, body: bytes, headers: Mapping[str, str],
                      api_key: str | None = None, model: str = "") -> Forwarded:
        """Pass one call through (countTokens, embedContent, models, files, cachedContents...);
        Gemini's answer comes back as it is, errors included. The journal records it as a call of
        the current exchange (`model`: the one the call names, if any)."""
        key = self._credential(api_key)
        sent = {**await self._headers(key), **{k: v for k, v in headers.items() if k.lower() in PASSED_HEADERS}}
        if not body:
            sent.pop("content-type", None)
        call = exchange.new_upstream_call(model, body or None, False)
        tried: dict[str, Any] = {}
        if call is not None:
            call.raw = True
            tried = {"start": time.perf_counter(), "key": key.label if key else None, "method": method}
            call.attempts.append(tried)
        deadline = self._deadline()
        try:
            async with asyncio.timeout_at(deadline):
                async with self._http().request(method, url(key) if callable(url) else url, data=body or None,
                                                headers=sent, timeout=self._idle_limit(self.read_timeout)) as resp:
                    data = await read_whole(resp, self.read_timeout, deadline)
                    kept = {k: v for k, v in resp.headers.items() if k.lower() in RETURNED_HEADERS}
                    if call is not None:
                        tried["status"] = resp.status
                        call.answer, call.first_byte = data, tried["start"]
                        call.last_byte = tried["end"] = time.perf_counter()
                    return Forwarded(resp.status, kept, data)
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
            raise UpstreamError(f"Could not reach Gemini at {self.base_url}: {e}", status=502,
                                type="server_error") from e

    async def count_tokens(self, model: str, body: dict[str, Any], api_key: str | None = None) -> int:
        """Gemini's countTokens for a generateContent body (its generationConfig left out, as
        countTokens takes none); Gemini's refusal is raised as its error."""
        collection, model_id = model_resource(model)
        inner = {"model": f"{collection}/{model_id}", **{k: v for k, v in body.items() if k != "generationConfig"}}
        url = self.path_url(("v1beta",), [collection, f"{model_id}:countTokens"], {})
        fwd = await self.forward("POST", url, fast_json.dumps({"generateContentRequest": inner}), {}, api_key, model)
        try:
            answer = fast_json.loads(fwd.body) if fwd.body else {}
        except ValueError:
            answer = {}
        if fwd.status != 200 or not isinstance(answer, dict) or not isinstance(answer.get("totalTokens"), int):
            err = answer.get("error") if isinstance(answer, dict) else None
            raise UpstreamError.from_gemini(err, fwd.status if fwd.status != 200 else 502, "countTokens gave no count")
        return answer["totalTokens"]

    def _deadline(self) -> float:
        """The total timeout from now, or a fallback chain's shared deadline if sooner."""
        own = asyncio.get_running_loop().time() + self.total_timeout
        chain = CHAIN_DEADLINE.get()
        return own if chain is None else min(own, chain)

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        deadline = self._deadline()
        answer = await self._answer(model, body, api_key, deadline, upstream_call())
        if (token := continuation_of(answer)) is None:
            return answer
        hops, seen = [answer], []  # stopped at the decode limit: the hops that continue it (merge_hops.py)
        while token is not None:  # `seen`: the tokens this answer was continued with
            hop = continued_body(body, token)
            call = self._next_hop(model, hop, token, seen, len(hops), added_parts(answer), False)
            answer = await self._answer(model, hop, api_key, deadline, call)
            hops.append(answer)
            seen.append(token)
            token = continuation_of(answer)
        return merge_hops(hops)

    def _next_hop(self, model: str, hop: dict[str, Any], token: str, seen: list[str], hops: int, added: bool,
                  stream: bool) -> UpstreamCall | None:
        """The journal's call for `hop`, the request that continues an answer stopped at the decode
        limit, with its decision; refused when the hop before made no progress (handed back a token
        in `seen`, or `added` nothing) or the answer took MAX_HOPS."""
        source, sign = self.STOPPED_BY
        if (refusal := hop_refusal(source, token, seen, hops, added)) is not None:
            raise refusal
        exchange.note("continuation", f"{source} stopped the answer at its per-request decode limit ({sign}): "
                                      f"hop {hops + 1} continues it")
        return exchange.new_upstream_call(model, hop, stream)

    async def _answer(self, model: str, body: dict[str, Any], api_key: str | None, deadline: float,
                      call: UpstreamCall | None) -> dict[str, Any]:
        """One whole answer (kept as read by the journal's `call`)."""
        resp = await self._post(model, body, api_key, False, deadline, call)
        try:
            raw = await read_whole(resp, self.read_timeout, deadline)
            answer = await fast_json.loads_cooperatively(raw)
            if call is not None:
                # As read (an object of its own size), with the object parsed from it: learnt from
                # when someone reads the exchange, unless a wrapper changes the answer (observed.py).
                call.answer, call.parsed, call.last_byte = raw, answer, time.perf_counter()
        except TimeoutError as e:
            resp.close()
            raise self._cut_answer(e) from e
        except (json.JSONDecodeError, UnicodeDecodeError, aiohttp.ClientError) as e:
            resp.close()
            raise UpstreamError(f"Gemini sent an unreadable answer: {e}", status=502, type="server_error") from e
        resp.release()  # read to the end: the connection can serve the next request
        return answer

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        """Open the stream (raising UpstreamError before any chunk) and return a chunk iterator."""
        deadline = self._deadline()
        call = upstream_call()
        resp = await self._post(model, body, api_key, stream=True, deadline=deadline, journal=call)
        hops, seen = 1, []  # how many so far, and the tokens the answer was continued with

        async def go_on(token: str, added: bool) -> tuple[aiohttp.ClientResponse, UpstreamCall | None]:
            nonlocal hops
            hop = continued_body(body, token)
            journal = self._next_hop(model, hop, token, seen, hops, added, True)
            hops += 1
            seen.append(token)
            return await self._post(model, hop, api_key, stream=True, deadline=deadline, journal=journal), journal

        return self._chunks(resp, deadline, journal=call, go_on=go_on)

    async def _chunks(self, resp: aiohttp.ClientResponse, deadline: float,
                      parse: Callable[[str], dict[str, Any] | None] | None = None,
                      journal: UpstreamCall | None = None,
                      go_on: Callable[[str], Any] | None = None) -> AsyncIterator[dict[str, Any]]:
        """Gemini's chunks as they arrive (`parse`: another reading of each event's data; None skips
        it). Only a whole event resets the idle clock, and only time
        spent waiting on Gemini counts (not the time the client takes to read what was sent).
        `journal`: where each is kept as it came (the proxy may rewrite it: text calls). `go_on`: opens
        the hop that continues a stream Gemini stopped at its decode limit (merge_hops.py), whose
        chunks follow on: the stop's CONTINUATION finish is cleared and later hops' usage includes
        the hops before (as google-genai passes them on)."""
        loop = asyncio.get_running_loop()
        decoder = SSEDecoder()
        last, ended = loop.time(), False
        token, usage, before = None, None, None  # the stop's token and usage; the usage of the hops before
        added = False  # whether this hop's chunks carried any part
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
                        yield {"error": {"code": 504, "status": "DEADLINE_EXCEEDED", "message": f"Gemini {what}."}}
                        return
                    payloads = decoder.feed(data) if data else decoder.close()
                    for payload in payloads:
                        chunk = (parse or _parse_chunk)(payload)
                        if chunk is not None:
                            if journal is not None:
                                journal.came(chunk, len(payload))
                            if go_on is not None:
                                added = added or added_parts(chunk)
                                cands = chunk.get("candidates")  # (not a search of the payload: O(1) in its size)
                                if cands.__class__ is list and cands and cands[0].__class__ is dict and \
                                        "continuationToken" in cands[0] and (stop := continuation_of(chunk)):
                                    token, usage, chunk = stop, chunk.get("usageMetadata"), _cleared(chunk)
                                if before is not None and "usageMetadata" in chunk:  # a hop after the first
                                    chunk = {**chunk, "usageMetadata": summed_usage(before, chunk["usageMetadata"])}
                            yield chunk
                        last = loop.time()
                    if not data:
                        break
                if token is None or go_on is None:
                    ended = True
                    break
                resp.release()
                try:
                    resp, journal = await go_on(token, added)
                except ProxyError as e:  # no progress, too many hops, or the hop's request refused
                    ended = True  # (released above)
                    yield {"error": {"code": e.status, "status": "UNAVAILABLE", "message": e.message}}
                    return
                decoder, last = SSEDecoder(), loop.time()
                before, token, usage, added = summed_usage(before, usage), None, None, False
        except (aiohttp.ClientError, ValueError) as e:
            yield {"error": {"code": 502, "status": "UNAVAILABLE", "message": f"Gemini stream broke off: {e}"}}
        finally:
            # Cut short (the client went away, a deadline passed): drop the connection and its buffers.
            resp.release() if ended else resp.close()


def _cleared(chunk: dict[str, Any]) -> dict[str, Any]:
    """A hop's stop at the decode limit as passed on: its CONTINUATION finish cleared (the answer goes on)."""
    cands = chunk["candidates"]
    return {**chunk, "candidates": [{k: v for k, v in cands[0].items() if k != "finishReason"}, *cands[1:]]}


def _parse_chunk(payload: str) -> dict[str, Any]:
    try:
        chunk = fast_json.loads(payload)
    except json.JSONDecodeError:
        return {"error": {"code": 502, "status": "INTERNAL", "message": "Gemini sent an unreadable stream chunk"}}
    return chunk if isinstance(chunk, dict) else {"error": {"code": 502, "message": "unexpected stream chunk"}}


def _error_from(status: int, text: str, headers: Any = None) -> UpstreamError:
    try:
        err = error_of(json.loads(text))
    except json.JSONDecodeError:
        err = None
    error = UpstreamError.from_gemini(err, status, fallback=text[:500])
    hint = retry_hint(err, {k.lower(): v for k, v in (headers or {}).items()})
    if hint is not None:
        error.retry_after = hint
        error.headers = {**error.headers, "Retry-After": str(max(1, math.ceil(hint)))}
    return error
