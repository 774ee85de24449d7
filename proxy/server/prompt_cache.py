"""Prompt-cache breakpoints (Anthropic `cache_control`) served by a Gemini explicit cache: the cached
prefix -- system prompt, tools, tool config and the turns before a breakpoint -- becomes a
`cachedContents` entry, created on first use and named by the requests that repeat the prefix.

- Only where it can work: the model takes explicit caches (model_rules.EXPLICIT_CACHE: not Gemini 4,
  not below the model's minimum), the upstream is Gemini's Developer API (not Vertex, whose caches
  live under a project; not the Interactions API, which caches implicitly), and nothing rewrites the
  request after it is built (a text-calls dialect, a forced choice's retry with a directive), and
  the Google key is the same from one request to the next (the client's own, or a single server key).
- Which prefix: the longest one already cached is read -- at a breakpoint of this request, or where
  an earlier request of the same system prompt and tools made one (its "lineage": a conversation
  only grows, so the prefix an earlier turn cached is a prefix of this one, where Claude Code's
  breakpoint has moved on). A longer cache is made at the request's longest breakpoint that passes
  the model's minimum when none is found, or when what the found cache leaves out is at least what
  it holds: Gemini bills a cache's creation at the standard input price (and its storage by the
  hour), so a cache pays only when it is read again, and this rule makes a conversation's caches
  grow geometrically, each paid back by the next request (docs/benchmarks.md). The last turn stays
  out of any cache (a request needs contents of its own).
- Whose: the entry is keyed by a hash of the prefix, the model and its owner (the client's scope and
  its Google key), kept in the session store (shared by every instance; it expires with the cache),
  and recorded as the client's object (object_owners.py): another client key never reads it and can
  neither get, list nor delete it.
- A cache Gemini no longer has (403/404 on the request that names it) is forgotten and the request
  sent again uncached; a cache that cannot be made (too small by Google's count, any refusal) leaves
  the request uncached, and a refusal (a 4xx but 429) is not asked again for that prefix while its
  cache would have lived. Either way the client's answer is the same; only the usage differs.
"""

import datetime
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from proxy import fast_json
from proxy.errors import UpstreamError
from proxy.journal import exchange
from proxy.model_rules import explicit_cache_minimum
from proxy.server import object_owners
from proxy.server.auth import SCOPE
from proxy.server.context import CONTEXT, Context, api_key_of
from proxy.to_gemini.cached_prefix import estimated_tokens, prefix_key, split
from proxy.upstream.fallback import FULL_BODY
from proxy.wire.model_name import model_resource

# The store's session for the cache map ('/' cannot appear in a client's session name).
CACHES = "objects/prompt-caches"
# A cache this close to its expiry is not named any more: the request would outlive it.
MARGIN = 15.0
STALE = (403, 404)
MAX_LINEAGE = 8  # the prefix sizes remembered per system prompt and tools (the caches made along a conversation)


@dataclass
class Prefix:
    """One candidate prefix: the cache it would be, the request beside it, its key, its size, its mark."""

    cache: dict[str, Any]
    rest: dict[str, Any]
    key: str
    tokens: int
    mark: dict[str, Any] | None


@dataclass
class Attached:
    """The cache a request names, and the request without it (sent if Gemini no longer has it)."""

    key: str
    name: str
    created: bool  # made for this request (its tokens are a cache write, not a read)
    full: dict[str, Any]


def _owner(request: web.Request) -> str:
    key = api_key_of(request) or ""
    return f"{request.get(SCOPE) or ''}\0{hashlib.sha256(key.encode()).hexdigest()}"


def _expiry(answer: dict[str, Any], ttl: int) -> float:
    """Gemini's expireTime as epoch seconds (at most the ttl asked for from now)."""
    asked = time.time() + ttl
    raw = answer.get("expireTime")
    if isinstance(raw, str):
        try:
            return min(asked, datetime.datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp())
        except ValueError:
            pass
    return asked


def eligible(ctx: Context, model: str, body: dict[str, Any], api_key: str | None) -> bool:
    """Whether this request may name a cache: see the module's first point. A pool of server keys
    (`--gemini-key` more than once) is no place for one: its keys may be different projects, and a
    cache made with one is not there for the next."""
    fcc = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
    upstream = ctx.explicit_cache(model)
    return (explicit_cache_minimum(model) > 0 and upstream is not None and (bool(api_key) or len(upstream.pool) <= 1)
            and ctx.rules.text_calls.dialect(model) is None and fcc.get("mode") != "ANY")


async def attach(request: web.Request, model: str, body: dict[str, Any], sizes: list[int | None],
                 ttls: list[int]) -> tuple[dict[str, Any], Attached | None]:
    """The body to send (naming a cache where a prefix has or gets one) and the cache it names."""
    ctx: Context = request.app[CONTEXT]
    points: dict[int, int] = {}  # prefix size -> the longest ttl of the breakpoints that end there
    for n, ttl in zip(sizes, ttls, strict=True):
        if n is not None:
            points[n] = max(ttl, points.get(n, 0))
    if not points or not eligible(ctx, model, body, api_key_of(request)):
        return body, None
    collection, model_id = model_resource(model)
    resource, owner, now = f"{collection}/{model_id}", _owner(request), time.time()
    contents = body.get("contents") or []
    root = prefix_key(split(body, 0, resource, 0)[0], owner)  # the system prompt and tools: the lineage's name
    lineage = await ctx.store.get_mark(CACHES, "lineage", root) or {}
    remembered = [n for n in lineage.get("sizes") or [] if type(n) is int and 0 <= n < len(contents)]
    prefixes: dict[int, Prefix] = {}
    for n in sorted({*points, *remembered}):
        cache, rest = split(body, n, resource, points.get(n, 0))
        key = prefix_key(cache, owner)
        prefixes[n] = Prefix(cache, rest, key, estimated_tokens(cache), await ctx.store.get_mark(CACHES, "prefix", key))
    live = [n for n, p in prefixes.items() if p.mark and p.mark.get("name")
            and float(p.mark.get("expires") or 0) > now + MARGIN]
    found = max(live) if live else None
    covered = prefixes[found].tokens if found is not None else 0
    minimum = explicit_cache_minimum(model)
    targets = [n for n in points if (found is None or n > found) and prefixes[n].tokens >= minimum
               and not (prefixes[n].mark and prefixes[n].mark.get("refused")
                        and float(prefixes[n].mark.get("expires") or 0) > now)]
    # A longer cache is made once what the cache read leaves out is at least what it holds: its
    # creation (the whole prefix at the input price) is paid back by the next request that reads it.
    if targets and prefixes[target := max(targets)].tokens >= 2 * covered:
        chosen = prefixes[target]
        name = await _create(request, ctx, model, chosen.cache, chosen.key, points[target])
        if name is not None:
            sizes_kept = [*(n for n in remembered if n != target), target][-MAX_LINEAGE:]
            await ctx.store.put_mark(CACHES, "lineage", root, {"sizes": sizes_kept})
            return {**chosen.rest, "cachedContent": name}, Attached(chosen.key, name, True, body)
    if found is not None:
        read = prefixes[found]
        exchange.note("cache", f"prompt cache: the prefix (the system prompt, tools and {found} content(s)) is read "
                               f"from {read.mark['name']}", cache=read.mark["name"])
        return {**read.rest, "cachedContent": read.mark["name"]}, Attached(read.key, read.mark["name"], False, body)
    if not targets:
        exchange.note("cache", f"prompt cache: no breakpoint's prefix reaches {model}'s minimum of {minimum} tokens; "
                               "sent uncached")
    return body, None


async def _create(request: web.Request, ctx: Context, model: str, cache: dict[str, Any], key: str, ttl: int
                  ) -> str | None:
    rest = ctx.explicit_cache(model)
    assert rest is not None
    url = rest.path_url((rest.api_version,), ["cachedContents"], {})
    try:
        fwd = await rest.forward("POST", url, fast_json.dumps({**cache, "displayName": f"gtp-{key[:16]}"}), {},
                                 api_key_of(request), model)
        answer = fast_json.loads(fwd.body) if fwd.body else {}
    except (UpstreamError, ValueError) as e:
        exchange.note("cache", f"prompt cache: creating the cache failed ({e}); sent uncached")
        return None
    name = answer.get("name") if isinstance(answer, dict) else None
    if fwd.status != 200 or not isinstance(name, str) or not name.startswith("cachedContents/"):
        message = str(((answer.get("error") if isinstance(answer, dict) else None) or {}).get("message") or "")
        if 400 <= fwd.status < 500 and fwd.status != 429:  # (Google's count says too small, the model has no
            # explicit caching, the upstream serves no cachedContents...): not asked again while the cache would live
            await ctx.store.put_mark(CACHES, "prefix", key, {"refused": fwd.status, "expires": time.time() + ttl})
        exchange.note("cache", f"prompt cache: Gemini refused the cache ({fwd.status} {message[:200]}); sent uncached")
        return None
    await object_owners.record(request, "cachedContents", answer)
    await ctx.store.put_mark(CACHES, "prefix", key, {"name": name, "expires": _expiry(answer, ttl)})
    exchange.note("cache", f"prompt cache: created {name} for the prefix (ttl {ttl}s)", cache=name)
    return name


async def _forget(request: web.Request, attached: Attached, e: UpstreamError) -> None:
    ctx: Context = request.app[CONTEXT]
    await ctx.store.put_mark(CACHES, "prefix", attached.key, {"expires": 0})
    exchange.note("cache", f"prompt cache: Gemini no longer has {attached.name} ({e.status}); forgotten, and the "
                           "request sent again uncached", cache=attached.name)


async def _sent(request: web.Request, send: Callable[[dict[str, Any]], Awaitable[Any]], body: dict[str, Any],
                attached: Attached | None) -> Any:
    """`send(body)`; when Gemini no longer has the cache it reads, the cache is forgotten and the whole
    request sent again, uncached."""
    token = FULL_BODY.set((body, attached.full)) if attached is not None else None  # (a fallback model's)
    try:
        return await send(body)
    except UpstreamError as e:
        if attached is None or e.status not in STALE:
            raise
        await _forget(request, attached, e)
    finally:
        if token is not None:
            FULL_BODY.reset(token)
    return await send(attached.full)


async def generate(request: web.Request, model: str, body: dict[str, Any], attached: Attached | None,
                   key: str | None) -> dict[str, Any]:
    upstream = request.app[CONTEXT].upstream
    return await _sent(request, lambda b: upstream.generate(model, b, key), body, attached)


async def stream(request: web.Request, model: str, body: dict[str, Any], attached: Attached | None,
                 key: str | None) -> AsyncIterator[dict[str, Any]]:
    """The stream opened (its failure to open is raised before any chunk, so the retry is unseen)."""
    upstream = request.app[CONTEXT].upstream
    return await _sent(request, lambda b: upstream.stream(model, b, key), body, attached)
