"""Budgets and rate limits per client key (`--limit`, config file `limit`), checked before Gemini is
asked and charged when an answer's usage is known.

`--limit 'ID=rpm:60,tpm:100000,usd_day:5,usd_month:50'`: ID is a client's key id as `/v1/usage` shows
it (`k-` + 12 hex digits; the `c-` spelling of its sessions is the same id), or `*` for every client
without its own entry.

- Requests per minute: GCRA (the generic cell rate algorithm: one "theoretical arrival time" per
  client, a burst of the whole minute's worth).
- Tokens per minute: a sliding window of two fixed minutes (the previous one weighted by how much
  of it is still inside the last 60 s), charged with the tokens Gemini billed.
- USD per UTC day and month: nano-dollar counters charged with each answer's cost.

Admission is one atomic check-and-take: a Lua script in Redis (so a fleet shares it exactly), the
same decision in-process for the memory store (`decide`, tested against the script case by case).
A refusal names the limit and when to retry; budgets are checked, never taken, at admission, so a
request refused for its tokens takes no request place.
"""

import asyncio
import math
import re
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

KINDS = ("rpm", "tpm", "usd_day", "usd_month")
_ID = re.compile(r"\*|[ck]-[0-9a-f]{12}")
NANO = 10**9
MINUTE_MS = 60_000


@dataclass(frozen=True)
class Limit:
    rpm: int | None = None
    tpm: int | None = None
    usd_day: float | None = None
    usd_month: float | None = None


def key_id(client: str) -> str:
    """The id a client key is known by in usage and limits: `k-` + 12 hex digits (a scope's `c-` is
    the same digest)."""
    return "k-" + client[2:] if client.startswith("c-") else client


def parse_limits(specs: list[str] | tuple[str, ...]) -> dict[str, Limit]:
    """`["k-0123456789ab=rpm:60,tpm:100000", "*=rpm:10"]` -> {id: Limit}; a bad one is a ValueError naming it."""
    out: dict[str, Limit] = {}
    for spec in specs:
        who, sep, rest = spec.partition("=")
        who = who.strip()
        if not sep or not _ID.fullmatch(who):
            raise ValueError(f"--limit must look like ID=rpm:N,tpm:N,usd_day:X,usd_month:X with ID a key id "
                             f"(k- and 12 hex digits, as /v1/usage shows it) or '*', not {spec!r}")
        who = key_id(who)
        if who in out:
            raise ValueError(f"--limit {spec!r}: {who} is limited twice")
        values: dict[str, float] = {}
        for part in rest.split(","):
            kind, colon, text = part.strip().partition(":")
            if kind not in KINDS or not colon:
                raise ValueError(f"--limit {spec!r}: {part.strip()!r} is not one of "
                                 f"{', '.join(k + ':N' for k in KINDS)}")
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not (value > 0 and math.isfinite(value)) or (kind in ("rpm", "tpm") and value != int(value)):
                raise ValueError(f"--limit {spec!r}: {kind} must be a positive "
                                 f"{'whole number' if kind in ('rpm', 'tpm') else 'number'}, not {text!r}")
            if kind in values:
                raise ValueError(f"--limit {spec!r}: {kind} given twice")
            values[kind] = int(value) if kind in ("rpm", "tpm") else value
        out[who] = Limit(**values)
    return out


def limit_for(limits: dict[str, Limit], client: str) -> Limit | None:
    return limits.get(key_id(client)) or limits.get("*")


@dataclass(frozen=True)
class State:
    """What admission reads (and, for the request place, writes), in integer ms and nano-dollars."""

    tat_ms: int = 0          # GCRA's theoretical arrival time, ms from now (0: no request pending)
    tokens_now: int = 0      # tokens charged in this minute
    tokens_before: int = 0   # and in the one before
    spent_day: int = 0       # nano-dollars this UTC day
    spent_month: int = 0     # and this UTC month


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit: Limit
    state: State
    refused_by: str = ""          # the kind that refused
    retry_after: float = 0.0      # seconds
    now_in_minute_ms: int = 0

    @property
    def tokens_used(self) -> int:
        """The sliding window's tokens in the last 60 s."""
        left = (MINUTE_MS - self.now_in_minute_ms) / MINUTE_MS
        return int(self.state.tokens_before * left) + self.state.tokens_now

    @property
    def requests_remaining(self) -> int:
        rpm = self.limit.rpm or 0
        return max(0, rpm - math.ceil(self.state.tat_ms * rpm / MINUTE_MS)) if rpm else 0

    def tokens_reset(self) -> float:
        """Seconds until the window holds no tokens (the previous minute out, then this one)."""
        if self.state.tokens_now:
            return (2 * MINUTE_MS - self.now_in_minute_ms) / 1000
        return (MINUTE_MS - self.now_in_minute_ms) / 1000 if self.state.tokens_before else 0.0


def _tokens_wait(tpm: int, s: State, e: int) -> float:
    """Seconds until the sliding window falls below `tpm` (no more tokens charged meanwhile)."""
    if s.tokens_now < tpm:  # the previous minute's share must shrink: before*(1 - e'/60) + now < tpm
        e2 = MINUTE_MS * (1 - (tpm - s.tokens_now) / s.tokens_before) if s.tokens_before else e
        return max(0.0, e2 - e) / 1000 + 0.001
    e2 = MINUTE_MS * (1 - tpm / s.tokens_now)  # in the next minute, this one's share must shrink
    return (MINUTE_MS - e + e2) / 1000 + 0.001


def _next(now: datetime, kind: str) -> float:
    if kind == "usd_day":
        end = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    else:
        end = (now.replace(day=28) + timedelta(days=4)).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (end - now).total_seconds()


def decide(limit: Limit, s: State, now: float) -> tuple[str, float]:
    """('', 0) to admit, else (the refusing kind, seconds to wait): the budgets, then tokens, then
    the request place, as the Lua script orders them."""
    at = datetime.fromtimestamp(now, UTC)
    e = int(now * 1000) % MINUTE_MS
    if limit.usd_day is not None and s.spent_day >= round(limit.usd_day * NANO):
        return "usd_day", _next(at, "usd_day")
    if limit.usd_month is not None and s.spent_month >= round(limit.usd_month * NANO):
        return "usd_month", _next(at, "usd_month")
    if limit.tpm is not None and s.tokens_before * (MINUTE_MS - e) // MINUTE_MS + s.tokens_now >= limit.tpm:
        return "tpm", _tokens_wait(limit.tpm, s, e)
    if limit.rpm is not None:
        interval = MINUTE_MS / limit.rpm
        wait = s.tat_ms - interval * (limit.rpm - 1)
        if wait > 0:
            return "rpm", wait / 1000
    return "", 0.0


def _windows(client: str, now: float, prefix: str) -> list[str]:
    at = datetime.fromtimestamp(now, UTC)
    minute = int(now // 60)
    base = f"{prefix}lim:{client}"
    return [f"{base}:tat", f"{base}:tok:{minute}", f"{base}:tok:{minute - 1}", f"{base}:usd:{at:%Y-%m-%d}",
            f"{base}:usd:{at:%Y-%m}"]


class MemoryLimiter:
    """The limits of one process (the memory store)."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    async def admit(self, client: str, limit: Limit, now: float | None = None) -> Verdict:
        now = time.time() if now is None else now
        tat, cur, prev, day, month = _windows(client, now, "")
        now_ms = now * 1000
        s = State(int(max(0.0, self.values.get(tat, 0.0) - now_ms)), int(self.values.get(cur, 0)),
                  int(self.values.get(prev, 0)), int(self.values.get(day, 0)), int(self.values.get(month, 0)))
        kind, wait = decide(limit, s, now)
        if not kind and limit.rpm is not None:
            self.values[tat] = now_ms + s.tat_ms + MINUTE_MS / limit.rpm
            s = replace(s, tat_ms=int(s.tat_ms + MINUTE_MS / limit.rpm))
        return Verdict(not kind, limit, s, kind, wait, int(now_ms) % MINUTE_MS)

    async def charge(self, client: str, tokens: int, cost_nusd: int, answer_id: str = "",
                     now: float | None = None) -> None:
        now = time.time() if now is None else now
        _, cur, prev, day, month = _windows(client, now, "")
        minute = int(now // 60)
        current = (day.rsplit(":", 1)[1], month.rsplit(":", 1)[1])
        for k in [k for k in self.values if (":tok:" in k and int(k.rsplit(":", 1)[1]) < minute - 1)
                  or (":usd:" in k and k.rsplit(":", 1)[1] not in current)]:
            del self.values[k]  # minutes out of the window, days and months over
        for k, v in ((cur, tokens), (day, cost_nusd), (month, cost_nusd)):
            if v:
                self.values[k] = self.values.get(k, 0) + v


# KEYS: tat, tokens this minute, tokens the minute before, USD this day, USD this month.
# ARGV: now (ms), rpm, tpm, day cap (nano-USD), month cap (nano-USD); 0 = not limited.
# Returns {kind refusing ('' admits), tat ms from now, tokens now, tokens before, spent day, spent month}.
ADMIT_LUA = """
local now = tonumber(ARGV[1])
local rpm, tpm, day_cap, month_cap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local ahead = math.max(0, tat - now)
local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
local prev = tonumber(redis.call('GET', KEYS[3]) or '0')
local day = tonumber(redis.call('GET', KEYS[4]) or '0')
local month = tonumber(redis.call('GET', KEYS[5]) or '0')
local e = now % 60000
local kind = ''
if day_cap > 0 and day >= day_cap then kind = 'usd_day'
elseif month_cap > 0 and month >= month_cap then kind = 'usd_month'
elseif tpm > 0 and math.floor(prev * (60000 - e) / 60000) + cur >= tpm then kind = 'tpm'
elseif rpm > 0 then
  local interval = 60000 / rpm
  if ahead - interval * (rpm - 1) > 0 then kind = 'rpm'
  else
    ahead = ahead + interval
    redis.call('SET', KEYS[1], tostring(now + ahead), 'PX', math.ceil(ahead) + 1000)
  end
end
return {kind, tostring(ahead), cur, prev, day, month}
"""

# KEYS: tokens this minute, USD this day, USD this month, the answer's id (charged once).
# ARGV: tokens, nano-USD.
CHARGE_LUA = """
if redis.call('SET', KEYS[4], '1', 'NX', 'EX', 86400) then
  if tonumber(ARGV[1]) > 0 then redis.call('INCRBY', KEYS[1], ARGV[1]); redis.call('EXPIRE', KEYS[1], 150) end
  if tonumber(ARGV[2]) > 0 then
    redis.call('INCRBY', KEYS[2], ARGV[2]); redis.call('EXPIRE', KEYS[2], 2 * 86400)
    redis.call('INCRBY', KEYS[3], ARGV[2]); redis.call('EXPIRE', KEYS[3], 33 * 86400)
  end
  return 1
end
return 0
"""
RETRY_FOR = 30.0


class RedisLimiter:
    """The limits a fleet shares: one script per admission, one per charge."""

    def __init__(self, url: str, prefix: str = "gtp:") -> None:
        import redis.asyncio as aioredis

        self.client = aioredis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.prefix = prefix
        self.admit_script = self.client.register_script(ADMIT_LUA)
        self.charge_script = self.client.register_script(CHARGE_LUA)

    async def admit(self, client: str, limit: Limit, now: float | None = None) -> Verdict:
        """Raises redis' ConnectionError/TimeoutError when Redis is unreachable (the caller refuses)."""
        now = time.time() if now is None else now
        args = [int(now * 1000), limit.rpm or 0, limit.tpm or 0, round((limit.usd_day or 0) * NANO),
                round((limit.usd_month or 0) * NANO)]
        kind, ahead, *rest = await self.admit_script(keys=_windows(client, now, self.prefix), args=args)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        s = State(int(float(ahead)), *(int(x) for x in rest))
        wait = decide(limit, s, now)[1] if kind else 0.0  # (a refusal took nothing: the state it read)
        return Verdict(not kind, limit, s, kind, wait, int(now * 1000) % MINUTE_MS)

    async def charge(self, client: str, tokens: int, cost_nusd: int, answer_id: str = "",
                     now: float | None = None) -> None:
        from redis import exceptions as rexc

        now = time.time() if now is None else now
        _, cur, _, day, month = _windows(client, now, self.prefix)
        keys = [cur, day, month, f"{self.prefix}lim-seen:{answer_id or time.time_ns()}"]
        deadline = time.monotonic() + RETRY_FOR
        while True:  # a charge survives a Redis restart: sent again, applied once (the answer's id)
            try:
                await self.charge_script(keys=keys, args=[tokens, cost_nusd])
                return
            except (rexc.ConnectionError, rexc.TimeoutError, rexc.BusyLoadingError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)

    async def close(self) -> None:
        await self.client.aclose()


def openai_reset(seconds: float) -> str:
    """OpenAI's spelling of a reset time in x-ratelimit-reset-*: `17ms`, `1s`, `6m0s`, `1h2m3s`."""
    if seconds < 1:
        return f"{max(0, math.ceil(seconds * 1000))}ms"
    whole = math.ceil(seconds)
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    return (f"{h}h" if h else "") + (f"{m}m" if h or m else "") + f"{s}s"


def rate_headers(v: Verdict, protocol: str, now: float | None = None) -> dict[str, str]:
    """The rate-limit headers each protocol's own API sends: OpenAI's `x-ratelimit-*` (Responses,
    Chat), Anthropic's `anthropic-ratelimit-*` (RFC 3339 resets); Gemini sends none. Retry-After on
    a refusal, for every protocol (the SDKs' retry loops read it)."""
    now = time.time() if now is None else now
    h: dict[str, str] = {}
    lim = v.limit

    def rfc3339(seconds: float) -> str:
        return datetime.fromtimestamp(now + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    spelling = {"openai": (lambda kind, field: f"x-ratelimit-{field}-{kind}", openai_reset),
                "anthropic": (lambda kind, field: f"anthropic-ratelimit-{kind}-{field}", rfc3339)}.get(protocol)
    if spelling is not None:
        name, reset = spelling
        for kind, cap, remaining, resets in (
                ("requests", lim.rpm, v.requests_remaining, v.state.tat_ms / 1000),
                ("tokens", lim.tpm, max(0, (lim.tpm or 0) - v.tokens_used), v.tokens_reset())):
            if cap is not None:
                h |= {name(kind, "limit"): str(cap), name(kind, "remaining"): str(remaining),
                      name(kind, "reset"): reset(resets)}
    if not v.allowed:
        h["Retry-After"] = str(max(1, math.ceil(v.retry_after)))
    return h


REASONS = {"rpm": "requests per minute", "tpm": "tokens per minute", "usd_day": "USD per day",
           "usd_month": "USD per month"}


def refusal_text(v: Verdict) -> str:
    cap: Any = getattr(v.limit, v.refused_by)
    return (f"This client key's budget of {cap:g} {REASONS[v.refused_by]} ({v.refused_by}, set by --limit) is spent; "
            f"retry in {max(1, math.ceil(v.retry_after))} s.")
