"""The ledger: every Gemini answer's usage, counted per key id x model x UTC day (counters.py) with
its cost (meter.py), and charged to the client's limits (limits.py) when it has some.

Recorded where the upstream's answer ends (upstream/observed.py), so every front-end, the
WebSocket, background runs, tool-search hops and fallback models are counted alike, with the model
that actually answered. A stream that ended early is counted with the last usage Gemini reported.
Writes run beside the answer (a Redis round trip never delays a client) and are awaited at shutdown.
"""

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from proxy import ids, metrics
from proxy.usage.counters import MemoryCounters, RedisCounters
from proxy.usage.limits import Limit, MemoryLimiter, RedisLimiter, Verdict, key_id, limit_for
from proxy.usage.meter import AnswerUsage, Prices, day_of, increments

log = logging.getLogger("gemini_tool_proxy")
# Key ids one process counts under their own name; more (only without client keys, where any key
# a caller sends is passed on) are counted as "other", so random keys cannot grow the counters.
MAX_KEY_IDS = 1024


class LimitsUnavailable(Exception):
    """The shared limits could not be read (Redis down): a limited client is refused, not let through."""


class Ledger:
    def __init__(self, counters: MemoryCounters | RedisCounters | None = None, prices: Prices | None = None,
                 limits: dict[str, Limit] | None = None,
                 limiter: MemoryLimiter | RedisLimiter | None = None, admins: Iterable[str | None] = ()) -> None:
        self.counters = counters or MemoryCounters()
        self.prices = prices or Prices()
        self.limits = limits or {}
        self.limiter = limiter or MemoryLimiter()
        # Who reads every key's usage: the admin keys' scopes (auth.scope_of(key), as serve passes them), never keys.
        self.admins = frozenset(key_id(a) for a in admins if a)
        self.pending: set[asyncio.Task[None]] = set()
        self.lost = 0  # answers whose increments could not be written (the store was down too long)
        self.key_ids: set[str] = set()

    @classmethod
    def open(cls, store_url: str, prices: Prices | None = None, limits: dict[str, Limit] | None = None,
             admins: Iterable[str | None] = ()) -> "Ledger":
        """Counted where the sessions are: this process's memory, or the Redis a fleet shares."""
        if store_url == "memory":
            return cls(MemoryCounters(), prices, limits, MemoryLimiter(), admins)
        return cls(RedisCounters(store_url), prices, limits, RedisLimiter(store_url) if limits else None, admins)

    def limit_of(self, client: str) -> Limit | None:
        return limit_for(self.limits, client) if self.limits else None

    async def admit(self, client: str) -> Verdict | None:
        """The client's admission under its limit (None: it has none); LimitsUnavailable when the
        limits a fleet shares cannot be read."""
        kid = key_id(client or "anonymous")
        limit = self.limit_of(kid)
        if limit is None:
            return None
        try:
            return await self.limiter.admit(kid, limit)
        except Exception as e:  # redis' ConnectionError, TimeoutError, BusyLoadingError...
            if type(e).__module__.startswith("redis"):
                raise LimitsUnavailable(str(e)) from e
            raise

    def answered(self, client: str, model: str, usage: AnswerUsage | None, error: bool,
                 label: str | None = None) -> None:
        """One Gemini answer (or failed request) for `client`: counted, and charged to its limits.
        Its cost is `model`'s; its row is `label`'s (metrics.MODELS: a name no answer made known is
        "other", so a flood of made-up model names cannot grow the counters)."""
        kid, model = key_id(client or "anonymous"), model.removeprefix("models/")
        limit = self.limit_of(kid)
        charged = kid
        if kid not in self.key_ids:
            if len(self.key_ids) < MAX_KEY_IDS:
                self.key_ids.add(kid)
            else:
                kid = "other"
        priced = model
        model = (label or model).removeprefix("models/")
        answer_id = ids.answer_id()
        charge = None
        if limit is not None and usage is not None and (limit.tpm or limit.usd_day or limit.usd_month):
            charge = (charged, usage.input + usage.thinking + usage.output)
        # The cost is worked out in the write's task, after the answer has gone out: genai-prices takes
        # ~0.1 ms an answer, a third of a small request's time in the proxy (bench_tails.py, profile_serve.py).
        task = asyncio.get_running_loop().create_task(self._write(kid, model, (priced, usage, error), answer_id,
                                                                  charge))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def _write(self, kid: str, model: str, answer: tuple[str, AnswerUsage | None, bool], answer_id: str,
                     charge: tuple[str, int] | None) -> None:
        try:
            inc = increments(*answer, self.prices)
            await self.counters.add(kid, model, day_of(), inc, answer_id)
            if charge is not None:
                await self.limiter.charge(*charge, inc.get("cost_nusd", 0), answer_id=answer_id)
        except (Exception, asyncio.CancelledError) as e:  # noqa: BLE001 - counted and logged; the answer was given
            self.lost += 1
            metrics.USAGE_UNRECORDED.inc()
            log.warning("usage of one answer for %s (%s) not counted: %s", kid, model, e or "shut down first")

    async def rows(self, start: str, end: str, key: str | None = None) -> list[dict[str, Any]]:
        return await self.counters.rows(start, end, key)

    async def flush(self, timeout: float = 2.0) -> None:
        """The writes started so far, finished (a read right after an answer sees it), waiting at most
        `timeout` (a write retries while Redis restarts: a read or a shutdown does not wait that long)."""
        if self.pending:
            await asyncio.wait(list(self.pending), timeout=timeout)

    async def close(self) -> None:
        await self.flush(5.0)
        for task in list(self.pending):
            task.cancel()  # (still retrying: counted lost by _write)
        for part in (self.counters, self.limiter):
            client = getattr(part, "client", None)
            if client is not None:
                await client.aclose()
