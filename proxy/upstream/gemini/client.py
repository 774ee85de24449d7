"""The Gemini API's client (or any server speaking it: the mock, a local gateway) over the one HTTP
engine (upstream/http.py): its URLs, headers, key pool, errors and chunks, and the continuation hops
of an answer Gemini stopped at its decode limit.
"""

import contextvars
import functools
import json
import logging
import math
import os
import re
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
from yarl import URL

from proxy import __version__, fast_json
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
from proxy.upstream.gemini.credentials import ApiKey, Credential, CredentialError
from proxy.upstream.gemini.key_pool import KeyPool, keys_from_env
from proxy.upstream.http import (
    DEFAULT_POOL_TIMEOUT,
    LOOKUP,
    Forwarded,
    Hops,
    HttpEngine,
    NextKey,
    RetryPolicy,
    retry_hint,
)
from proxy.wire.gemini import error_of
from proxy.wire.model_name import model_resource

__all__ = ["LOOKUP", "Forwarded", "GeminiUpstream", "Target"]

log = logging.getLogger(__name__)

from proxy.defaults import (  # noqa: E402, F401 (the options' defaults)
    DEFAULT_BASE_URL,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
)

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


@functools.lru_cache(maxsize=1024)  # (frozen: one per key, not a dataclass built and its key hashed per request)
def _api_key(key: str) -> ApiKey:
    return ApiKey(key)


class GeminiUpstream(HttpEngine):
    # Who stops a long answer at its decode limit, and the sign of it (continuation hops: _next_hop).
    STOPPED_BY = ("Gemini", "finishReason CONTINUATION")

    def __init__(self, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None, api_version: str = "v1beta",
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, read_timeout: float = DEFAULT_READ_TIMEOUT,
                 total_timeout: float = DEFAULT_TOTAL_TIMEOUT, retry: RetryPolicy | None = None,
                 keys: list[str] | None = None, pool_size: int = 0, pool_timeout: float = DEFAULT_POOL_TIMEOUT
                 ) -> None:
        super().__init__(base_url, connect_timeout, read_timeout, total_timeout, retry, pool_size, pool_timeout)
        # The server's own keys, used in turn when the client brings none (key_pool.py).
        self.pool = KeyPool(keys if keys else [api_key] if api_key else keys_from_env(dict(os.environ)))
        self.api_key = api_key if api_key is not None else os.environ.get("GEMINI_API_KEY")
        self.api_version = api_version
        # By (model, stream, base URL): built once (yarl's joins cost about 1 % of a small request).
        self._urls: dict[tuple[str, bool, str], URL] = {}

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

    async def _attempt_headers(self, key: Credential | None) -> dict[str, str]:
        """A pooled credential refused a token rests, and the next goes on at once (NextKey)."""
        try:
            return await self._headers(key)
        except CredentialError:
            if key is None or not self.pool.owns(key):
                raise
            self.pool.cool(key, None, "refused")
            if self.pool.ready():  # another credential can go on at once
                log.warning("upstream credential %s was refused a token; going on with the next", key.label)
                raise NextKey from None
            raise

    def _error(self, status: int, text: str, headers: Mapping[str, str]) -> UpstreamError:
        return _error_from(status, text, headers)

    async def _post(self, model: str, body: dict[str, Any], api_key: str | None, stream: bool,
                    deadline: float, journal: UpstreamCall | None = LOOKUP) -> aiohttp.ClientResponse:
        return await self.send(self._url(model, stream), body, api_key, stream, deadline, journal, model)

    async def _key_refused(self, key: Credential | None, error: UpstreamError, attempt: int, deadline: float,
                           model: str) -> int | None:
        """A pooled key's 429 rests it (for `model`): another ready key goes on at once; else every key
        rests, and the first one back is waited for (a retry) or the client gets the 429."""
        if error.status != 429 or not key or not self.pool.owns(key):
            return None
        self.pool.cool(key, error.retry_after, model=model)
        if self.pool.ready(model):  # another key is ready: no wait, not a retry
            log.info("Gemini rate-limited key %s; going on with the next key", key.label)
            return 0
        cooling = self._all_cooling(error, model)
        if not await self._wait_for_a_key(attempt, deadline, cooling, model):
            raise cooling
        return 1

    def _key_back(self, model: str) -> float | None:
        return self.pool.soonest(model) if len(self.pool) else None

    def _credential(self, api_key: str | None, model: str = "") -> Credential | None:
        """The client's own key, else the server's next pooled one (every pooled key resting is the
        client's 429), else none (Gemini's own 403 says a key is missing)."""
        if api_key:
            return _api_key(api_key)
        if not len(self.pool):
            return _api_key(self.api_key) if self.api_key else None
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
        return await self.request_once(method, url(key) if callable(url) else url, body, sent, call,
                                       key.label if key else None, RETURNED_HEADERS)

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
        return await self._read_answer(resp, deadline, call)

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        """Open the stream (raising UpstreamError before any chunk) and return a chunk iterator."""
        deadline = self._deadline()
        call = upstream_call()
        resp = await self._post(model, body, api_key, stream=True, deadline=deadline, journal=call)
        return self._events(resp, deadline, _parse_chunk, call, _GeminiHops(self, model, body, api_key, deadline))


class _GeminiHops(Hops):
    """The hops of a stream Gemini stopped at its decode limit (merge_hops.py), whose chunks follow
    on: the stop's CONTINUATION finish is cleared and later hops' usage includes the hops before (as
    google-genai passes them on)."""

    def __init__(self, upstream: GeminiUpstream, model: str, body: dict[str, Any], api_key: str | None,
                 deadline: float) -> None:
        self.upstream, self.model, self.body, self.api_key, self.deadline = upstream, model, body, api_key, deadline
        self.hops, self.seen = 1, []  # how many so far, and the tokens the answer was continued with
        self.token, self.usage, self.before = None, None, None  # the stop's token and usage; the hops before's
        self.added = False  # whether this hop's chunks carried any part

    def passed(self, chunk: dict[str, Any]) -> dict[str, Any]:
        self.added = self.added or added_parts(chunk)
        cands = chunk.get("candidates")  # (not a search of the payload: O(1) in its size)
        if cands.__class__ is list and cands and cands[0].__class__ is dict and \
                "continuationToken" in cands[0] and (stop := continuation_of(chunk)):
            self.token, self.usage, chunk = stop, chunk.get("usageMetadata"), _cleared(chunk)
        if self.before is not None and "usageMetadata" in chunk:  # a hop after the first
            chunk = {**chunk, "usageMetadata": summed_usage(self.before, chunk["usageMetadata"])}
        return chunk

    def stopped(self) -> bool:
        return self.token is not None

    async def next(self) -> tuple[aiohttp.ClientResponse, UpstreamCall | None]:
        token, up = self.token, self.upstream
        assert token is not None
        hop = continued_body(self.body, token)
        journal = up._next_hop(self.model, hop, token, self.seen, self.hops, self.added, True)
        self.hops += 1
        self.seen.append(token)
        self.before, self.token, self.usage, self.added = summed_usage(self.before, self.usage), None, None, False
        resp = await up._post(self.model, hop, self.api_key, stream=True, deadline=self.deadline, journal=journal)
        return resp, journal


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
