"""Wraps the front-end's upstream to record, per request, the model asked for, the time spent
waiting on the upstream (metrics.py keeps it apart from the proxy's own time) and the tokens
Gemini reported, by upstream key and model. A model (and a client's own key) that got a whole
answer becomes a known label value (metrics.KnownLabels); other names count as `other`."""

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from proxy import metrics
from proxy.journal.exchange import CURRENT
from proxy.upstream.base import Upstream
from proxy.usage.ledger import Ledger
from proxy.usage.meter import AnswerUsage

USAGE_KINDS = (("promptTokenCount", "input"), ("candidatesTokenCount", "output"), ("thoughtsTokenCount", "thinking"),
               ("cachedContentTokenCount", "cached"))


def _answered(model: str) -> None:
    """The upstream answered `model` whole: its name, and the key's label, are label values now."""
    metrics.MODELS.learn(model)
    record = metrics.CURRENT.get()
    if record is not None:
        metrics.KEYS.learn(record.key)


def _count_usage(model: str, usage: Any) -> None:
    """The request's record gets the answer's token counts now (the access log reads them as the
    request ends); the counters and the usage row are counted after (`_count_answer`)."""
    if not isinstance(usage, dict):
        return
    record = metrics.CURRENT.get()
    if record is not None:
        record.input_tokens = usage.get("promptTokenCount", record.input_tokens)
        record.output_tokens = usage.get("candidatesTokenCount", record.output_tokens)


def _count_tokens(key: str, model: str, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    key, model = metrics.KEYS(key), metrics.MODELS(model)
    for field, kind in USAGE_KINDS:
        value = usage.get(field)
        if isinstance(value, int) and value > 0:
            metrics.child(metrics.TOKENS, key, model, kind).inc(value)


def _calls_in(answer: Any) -> int:
    """The function calls in a Gemini answer or chunk (a streamed call's later pieces carry no name)."""
    n = 0
    for cand in (answer.get("candidates") or []) if isinstance(answer, dict) else []:
        for part in ((cand or {}).get("content") or {}).get("parts") or []:
            call = part.get("functionCall") if isinstance(part, dict) else None
            n += bool(isinstance(call, dict) and call.get("name"))
    return n


def _ledger_note(ledger: Ledger | None, model: str, usage: Any, calls: int, error: bool) -> None:
    """An answer's (or a failure's) token counters and usage row, counted two turns of the loop later:
    the answer is on its way by then (its client never waits on them; a read of the usage, a request
    of its own, comes after). Two, because a whole answer yields once between its check and its
    translation (answer_turn.whole_answer): counted in the next turn, they ran on the path the client
    waits for (about 20 us of a small request's, scripts/critical_path.py)."""
    record = metrics.CURRENT.get()
    key, client = (record.key, record.client) if record is not None else ("", "")
    loop = asyncio.get_running_loop()
    loop.call_soon(loop.call_soon, _count_answer, ledger, key, client, model, usage, calls, error)


def _count_answer(ledger: Ledger | None, key: str, client: str, model: str, usage: Any, calls: int,
                  error: bool) -> None:
    _count_tokens(key, model, usage)
    if ledger is None:
        return
    meta = usage if isinstance(usage, dict) else None
    ledger.answered(client, model, AnswerUsage.from_gemini(meta, calls) if meta is not None or calls else None, error,
                    label=metrics.MODELS(model))


class ObservedUpstream:
    def __init__(self, inner: Upstream, ledger: Ledger | None = None) -> None:
        self.inner = inner
        self.ledger = ledger  # each answer's usage counted per client key (usage/ledger.py)

    async def close(self) -> None:
        await self.inner.close()

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        _note_model(model)
        ex = CURRENT.get()
        if ex is not None:
            ex.upstream(model, body, False)
        call = None
        start = time.perf_counter()
        try:
            answer = await self.inner.generate(model, body, api_key)
        except Exception as e:
            if ex is not None:  # the last call's (a retry has a call of its own: forced_choice.py)
                ex.upstreams[-1].error = getattr(e, "message", None) or repr(e)[:500]
            _ledger_note(self.ledger, model, None, 0, True)
            raise
        finally:
            metrics.add_upstream_time(time.perf_counter() - start)
            if ex is not None:
                call = ex.upstreams[-1]  # the answer's: the last call made
                call.last_byte = time.perf_counter()
        if call is not None:
            if call.answer is None:
                call.answer = answer  # an upstream that recorded no bytes of its own (gemini.py does)
            if answer is not call.parsed:  # not the answer kept as bytes (text calls parsed from it): learnt now
                call.learn(answer)
        _answered(model)
        _count_usage(model, answer.get("usageMetadata"))
        _ledger_note(self.ledger, model, answer.get("usageMetadata"), _calls_in(answer), False)
        return answer

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        _note_model(model)
        ex = CURRENT.get()
        if ex is not None:
            ex.upstream(model, body, True)
        start = time.perf_counter()
        try:
            chunks = await self.inner.stream(model, body, api_key)
        except Exception as e:
            if ex is not None:  # the last call's (a retry has a call of its own: forced_choice.py)
                ex.upstreams[-1].error = getattr(e, "message", None) or repr(e)[:500]
            _ledger_note(self.ledger, model, None, 0, True)
            raise
        finally:
            metrics.add_upstream_time(time.perf_counter() - start)
        # The chunks are the last call's: a retry made while opening the stream has a call of its own.
        return _timed(chunks, model, ex.upstreams[-1] if ex is not None else None, self.ledger)


def _note_model(model: str) -> None:
    record = metrics.CURRENT.get()
    if record is not None:
        record.model = model


async def _timed(chunks: AsyncIterator[dict[str, Any]], model: str, call: Any = None, ledger: Ledger | None = None
                 ) -> AsyncIterator[dict[str, Any]]:
    usage, calls, failed = None, 0, False  # failed: the upstream's stream broke (not the reader stopping)
    try:
        while True:
            start = time.perf_counter()
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                _answered(model)
                break
            except Exception:
                failed = True
                raise
            finally:
                metrics.add_upstream_time(time.perf_counter() - start)
            if isinstance(chunk, dict) and chunk.get("usageMetadata"):
                usage = chunk["usageMetadata"]  # each chunk repeats the running totals: the last counts
            calls += _calls_in(chunk)
            failed = failed or (isinstance(chunk, dict) and "error" in chunk)  # a stream's failure is a chunk
            if call is not None:
                if call.raw:  # the upstream keeps the chunks as they came: what the proxy read from them
                    call.learn(chunk)
                else:
                    call.chunk(chunk)
            yield chunk
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
        _count_usage(model, usage)
        _ledger_note(ledger, model, usage, calls, failed)
