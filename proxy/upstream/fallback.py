"""Fallback chains: `--fallback 'gemini-3.1-pro*=gemini-3-flash-preview,gemini-2.5-flash'` (repeatable,
first matching pattern wins; config file `fallback`, addon `gtp_fallback`).

When Gemini refuses the model asked for as passing — 429 / RESOURCE_EXHAUSTED (every pooled key
resting for it included), 503 / UNAVAILABLE / "overloaded" — before any byte of the answer reached
the client, the next model of its chain is asked. For a stream "before any byte" is its opening
and its first chunk: the first chunk is read before the stream is handed on, and an error chunk
there moves to the next model too. Never after: a stream that fails later fails in its protocol.

The client keeps the model name it asked for; the answer's header `x-gtp-served-model` and the
journal (a `fallback` note per model tried, its error, and the one that answered) say which model
served it, and the call records kept from the answer name that model (Context.keep_calls: their
signatures are bound to it). The body is made fit for the other model: its thought signatures are
left out (they are bound to the model that made them: signatures/model_bound.py), the sentinel given
where a Gemini 3 model needs one; `thinkingConfig` becomes a `thinkingLevel` for Gemini 3 or a
`thinkingBudget` for 2.5 (to_gemini/reasoning.py); a body reading an explicit cache
(`cachedContent`, bound to one model) is sent whole, without it (server/prompt_cache.py).

Bounded: the models of a chain share the request's deadline (--total-timeout, from the first try)
and its retries (--max-retries: each model after the first is one; retry.RETRIES_SPENT); while
another model follows, a 429/503 goes to it at once rather than being waited out (retry.FALLING_BACK).
"""

import asyncio
import contextvars
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from proxy.errors import ProxyError, UpstreamError
from proxy.journal import exchange
from proxy.pattern_rules import rule_for
from proxy.signatures.model_bound import without_signatures
from proxy.signatures.sentinel import requires_signatures, sign_unsigned_turns
from proxy.to_gemini.reasoning import budget_in_range
from proxy.upstream.base import Upstream
from proxy.upstream.http import CHAIN_DEADLINE, FALLING_BACK, RETRIES_SPENT
from proxy.wire.model_name import check_model_name

SERVED_HEADER = "x-gtp-served-model"
FALLBACK_STATUS = frozenset({429, 503})
FALLBACK_WORDS = ("RESOURCE_EXHAUSTED", "overloaded")
# Gemini 3's thinkingLevel as a 2.5 thinkingBudget (to_gemini/reasoning.py's pairs), and back.
LEVEL_BUDGETS = {"MINIMAL": 512, "LOW": 1024, "MEDIUM": 8192, "HIGH": 24576, "XHIGH": 32768}


@dataclass
class Served:
    """Which model answered a request whose model has a chain (`asked`: the model the request named)."""
    asked: str
    model: str
    tried: list[str] = field(default_factory=list)  # "MODEL: STATUS message" of each model that failed


SERVED: contextvars.ContextVar[Served | None] = contextvars.ContextVar("gtp_served", default=None)
# (the body naming a cachedContent, the same request without it): set by prompt_cache.py.
FULL_BODY: contextvars.ContextVar[tuple[dict[str, Any], dict[str, Any]] | None] = contextvars.ContextVar(
    "gtp_full_body", default=None)


def parse_fallback(specs: list[str] | tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """`["gemini-3.1-pro*=gemini-3-flash-preview,gemini-2.5-flash"]` -> [(pattern, models)]; a bad
    entry is a ValueError naming it."""
    rules = []
    for spec in specs:
        pattern, sep, chain = spec.partition("=")
        models = [m.strip() for m in chain.split(",")]
        if not sep or not pattern.strip() or not all(models):
            raise ValueError(f"--fallback must be PATTERN=MODEL[,MODEL...] (e.g. 'gemini-3.1-pro*=gemini-2.5-flash'),"
                             f" not {spec!r}")
        try:
            checked = tuple(check_model_name(m, "--fallback") for m in models)
        except ProxyError as e:
            raise ValueError(f"--fallback {spec!r}: {e.message}") from None
        rules.append((pattern.strip(), checked))
    return rules


def served_model(asked: str) -> str:
    """The model that answered the latest call for `asked` on this request (`asked` if no other did)."""
    served = SERVED.get()
    name = asked.removeprefix("models/")
    return served.model if served is not None and served.asked == name else asked


def falls_back(status: int, status_name: str, message: str) -> bool:
    return status in FALLBACK_STATUS or any(w.lower() in f"{status_name} {message}".lower() for w in FALLBACK_WORDS)


def _error_falls_back(e: UpstreamError) -> bool:
    gemini = e.gemini_error if isinstance(getattr(e, "gemini_error", None), dict) else {}
    return falls_back(e.status, str(gemini.get("status") or ""), e.message)


def _chunk_error(chunk: Any) -> dict[str, Any] | None:
    err = chunk.get("error") if isinstance(chunk, dict) else None
    return err if isinstance(err, dict) else None


def thinking_for(config: dict[str, Any], model: str) -> dict[str, Any]:
    """A thinkingConfig as `model` takes it: a level on Gemini 3, a budget (in its range) on 2.5."""
    out = {k: v for k, v in config.items() if k not in ("thinkingLevel", "thinkingBudget")}
    level, budget = config.get("thinkingLevel"), config.get("thinkingBudget")
    if requires_signatures(model):  # the Gemini 3 family
        if isinstance(level, str):
            out["thinkingLevel"] = "LOW" if level.upper() == "MINIMAL" and "pro" in model else level
        elif isinstance(budget, int) and budget != -1:  # (-1, dynamic: Gemini 3's own default)
            out["thinkingLevel"] = "LOW" if budget <= 1024 else "MEDIUM" if budget <= 8192 else "HIGH"
    elif isinstance(budget, int):
        out["thinkingBudget"] = budget if budget == -1 else budget_in_range(model, budget)
    elif isinstance(level, str) and level.upper() in LEVEL_BUDGETS:
        out["thinkingBudget"] = budget_in_range(model, LEVEL_BUDGETS[level.upper()])
    return out


def body_for(body: dict[str, Any], model: str) -> dict[str, Any] | None:
    """`body` (made for another model) as `model` may be sent it, or None when it cannot be: it reads
    an explicit cache and the request without it is not known."""
    if "cachedContent" in body:
        full = FULL_BODY.get()
        if full is None or full[0] is not body:
            return None
        body = full[1]
    out = dict(body)
    contents = body.get("contents")
    if isinstance(contents, list):
        copied = [{**c, "parts": [dict(p) if isinstance(p, dict) else p for p in c["parts"]]}
                  if isinstance(c, dict) and isinstance(c.get("parts"), list) else c for c in contents]
        copied = without_signatures(copied)
        sign_unsigned_turns(copied, model)  # (on the copies: the sentinel where Gemini 3 needs one)
        out["contents"] = copied
    gen = body.get("generationConfig")
    if isinstance(gen, dict) and isinstance(gen.get("thinkingConfig"), dict):
        out["generationConfig"] = {**gen, "thinkingConfig": thinking_for(gen["thinkingConfig"], model)}
    return out


async def _empty() -> AsyncIterator[dict[str, Any]]:
    return
    yield


async def _after(first: dict[str, Any], rest: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    try:
        yield first
        async for chunk in rest:
            yield chunk
    finally:
        aclose = getattr(rest, "aclose", None)
        if aclose is not None:
            await aclose()


class FallbackUpstream:
    def __init__(self, inner: Upstream, rules: list[tuple[str, tuple[str, ...]]], max_retries: int,
                 total_timeout: float) -> None:
        self.inner, self.rules = inner, rules
        self.max_retries, self.total_timeout = max_retries, total_timeout

    def chain(self, model: str) -> list[str]:
        """`model`, then the models it falls back to (itself left out)."""
        name = model.removeprefix("models/")
        rest = rule_for(name, self.rules) or ()
        return [model, *(m for m in rest if m != name)]

    async def close(self) -> None:
        await self.inner.close()

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        return await self._run(model, body, api_key, False)

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        return await self._run(model, body, api_key, True)

    async def _run(self, model: str, body: dict[str, Any], api_key: str | None, stream: bool) -> Any:
        chain = self.chain(model)
        if len(chain) == 1:
            SERVED.set(None)
            return await (self.inner.stream if stream else self.inner.generate)(model, body, api_key)
        asked = model.removeprefix("models/")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.total_timeout
        tried: list[str] = []
        last_error: UpstreamError | None = None
        tokens = (CHAIN_DEADLINE.set(deadline), RETRIES_SPENT.set(0), FALLING_BACK.set(False))
        try:
            for i, name in enumerate(chain):
                sent = body if i == 0 else body_for(body, name)
                if sent is None:
                    exchange.note("fallback", f"{name} not tried: the request reads an explicit cache made for "
                                              f"{asked}, and the request without it is not known")
                    assert last_error is not None  # (i > 0: the model before failed)
                    raise last_error
                more = i + 1 < len(chain) and i + 1 <= self.max_retries
                RETRIES_SPENT.set(i)
                FALLING_BACK.set(more)
                try:
                    if not stream:
                        answer = await self.inner.generate(name, sent, api_key)
                    else:
                        answer = await self._opened(name, sent, api_key, more)
                except UpstreamError as e:
                    if not _error_falls_back(e) or not more or loop.time() >= deadline:
                        if tried:
                            exchange.note("fallback", f"{name} answered {e.status} ({e.message[:200]}); no model "
                                                      f"of the chain for {asked} answered", model=name,
                                          status=e.status, tried=tried)
                        raise
                    last_error = e
                    tried.append(f"{name}: {e.status} {e.message[:200]}")
                    exchange.note("fallback", f"{name} answered {e.status} ({e.message[:200]}) before anything "
                                              f"reached the client; asking {chain[i + 1]}", model=name,
                                  status=e.status)
                    continue
                SERVED.set(Served(asked, name.removeprefix("models/"), tried))
                if i:
                    exchange.note("fallback", f"{name} answered for {asked} (asked as {asked}; the client keeps "
                                              "that name)", model=name, asked=asked, tried=tried)
                return answer
            raise AssertionError("unreachable")  # (the last model's error is raised)
        finally:
            for var, token in zip((CHAIN_DEADLINE, RETRIES_SPENT, FALLING_BACK), tokens, strict=True):
                var.reset(token)

    async def _opened(self, model: str, body: dict[str, Any], api_key: str | None, more: bool
                      ) -> AsyncIterator[dict[str, Any]]:
        """The stream opened; while another model follows, its first chunk read too (nothing has
        reached the client yet): an error there that falls back is raised as the open's would be."""
        chunks = await self.inner.stream(model, body, api_key)
        if not more:
            return chunks
        try:
            first = await anext(chunks)
        except StopAsyncIteration:
            return _empty()
        except BaseException:
            await _close(chunks)
            raise
        err = _chunk_error(first)
        if err is not None:
            code = err.get("code") if isinstance(err.get("code"), int) else 502
            if falls_back(code, str(err.get("status") or ""), str(err.get("message") or "")):
                await _close(chunks)
                raise UpstreamError.from_gemini(err, code, "the stream's first chunk was an error")
        return _after(first, chunks)


async def _close(chunks: Any) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()
