"""Budgets and rate limits per client (issue 61 item 2) -- the core only, not yet wired into the routes.

`--limit 'ID=rpm:60,tpm:100000,usd_day:5,usd_month:50'`: ID is a client's id as fair_share.client_of
names it (`c-` + 12 hex digits under --api-key), or `*` for every client without its own entry.

Requests per minute: GCRA (one check-and-update, atomic: a Lua script in Redis, in-process for the
memory store). Tokens per minute and cost per day/month: counters charged once an answer's usage is
known; the check before a request refuses when the budget is already spent.
"""

import math
import re
import time
from dataclasses import dataclass

KINDS = ("rpm", "tpm", "usd_day", "usd_month")
_ID = re.compile(r"\*|[ck]-[0-9a-f]{12}")


@dataclass(frozen=True)
class Limit:
    rpm: int | None = None
    tpm: int | None = None
    usd_day: float | None = None
    usd_month: float | None = None


def parse_limits(specs: list[str] | tuple[str, ...]) -> dict[str, Limit]:
    """`["c-0123456789ab=rpm:60,tpm:100000", "*=rpm:10"]` -> {id: Limit}; a bad one is a ValueError naming it."""
    out: dict[str, Limit] = {}
    for spec in specs:
        who, sep, rest = spec.partition("=")
        who = who.strip()
        if not sep or not _ID.fullmatch(who):
            raise ValueError(f"--limit must look like ID=rpm:N,tpm:N,usd_day:X,usd_month:X with ID a client id "
                             f"(c- and 12 hex digits) or '*', not {spec!r}")
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
    return limits.get(client) or limits.get("*")


# GCRA in Redis: KEYS[1] the client's TAT key; ARGV: now (ms), emission interval (ms), burst tolerance (ms).
# Returns {allowed (1|0), retry_after_ms, reset_ms}.
GCRA_LUA = """
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local tolerance = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - tolerance - interval
if now < allow_at then
  return {0, allow_at - now, tat - now}
end
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil(new_tat - now) + 1000)
return {1, 0, new_tat - now}
"""


class MemoryGCRA:
    """The same algorithm in-process: rate `per_minute`, a burst of the whole minute's worth."""

    def __init__(self) -> None:
        self.tat: dict[str, float] = {}

    def take(self, key: str, per_minute: int, now: float | None = None) -> tuple[bool, float]:
        """(allowed, seconds until the next request would be)."""
        now = time.monotonic() if now is None else now
        interval = 60.0 / per_minute
        tolerance = interval * (per_minute - 1)
        tat = max(self.tat.get(key, now), now)
        allow_at = tat + interval - tolerance - interval
        if now < allow_at:
            return False, allow_at - now
        self.tat[key] = tat + interval
        return True, 0.0


def cost_of(model: str, usage: dict[str, int]) -> float:
    """USD for `usage` ({input_tokens, output_tokens}) on `model`, from genai-prices; 0.0 when it has no price."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # pragma: no cover - a dependency
        return 0.0
    try:
        price = calc_price(Usage(input_tokens=usage.get("input_tokens", 0),
                                 output_tokens=usage.get("output_tokens", 0)), model_ref=model, provider_id="google")
    except LookupError:
        return 0.0
    return float(price.total_price)
