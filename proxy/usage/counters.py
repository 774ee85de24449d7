"""Usage counters: one hash of FIELDS per (key id, model, UTC day). Memory for one process; Redis
(HINCRBY of every field of an answer in one MULTI/EXEC, the key given a TTL) for a fleet, so two
instances add up exactly.

Redis restarting mid-load: an increment is sent once; when the connection fails before Redis
acknowledged it the increment is retried on a fresh connection until it succeeds or RETRY_FOR
passes. That could count twice only if Redis had applied the MULTI/EXEC and the reply was lost;
each answer's increments therefore carry its id, and a Lua script applies them only when that id is
not yet in a short-lived set (SET NX with a TTL), so a retry is idempotent. Persistence across the
restart itself is Redis's (appendonly, as tests/servers.py runs it)."""

import asyncio
import time
from collections import defaultdict
from typing import Any

from proxy.usage.meter import FIELDS

TTL_SECONDS = 400 * 86400
RETRY_FOR = 30.0
SCRIPT = f"""
if redis.call('SET', KEYS[2], '1', 'NX', 'EX', 86400) then
  for i = 1, #ARGV - 1, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
  redis.call('EXPIRE', KEYS[1], {TTL_SECONDS})
  redis.call('SADD', KEYS[3], KEYS[1]); redis.call('EXPIRE', KEYS[3], {TTL_SECONDS})
  return 1
end
return 0
"""


class MemoryCounters:
    def __init__(self) -> None:
        self.buckets: dict[tuple[str, str, str], dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0))

    async def add(self, key_id: str, model: str, day: str, inc: dict[str, int], answer_id: str = "") -> None:
        b = self.buckets[(key_id, model, day)]
        for f, v in inc.items():
            b[f] += v

    async def rows(self, start: str, end: str, key_id: str | None = None) -> list[dict[str, Any]]:
        return [{"key": k, "model": m, "day": d, **v} for (k, m, d), v in sorted(self.buckets.items())
                if start <= d <= end and (key_id is None or k == key_id)]


class RedisCounters:
    def __init__(self, url: str, prefix: str = "gtp:") -> None:
        import redis.asyncio as aioredis

        self.client = aioredis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self.prefix = prefix
        self.script = self.client.register_script(SCRIPT)
        self.retries = 0  # increments sent again after a failed connection (tests prove a restart hit one)

    async def _retrying(self, call):
        from redis import exceptions as rexc

        deadline = time.monotonic() + RETRY_FOR
        while True:
            try:
                return await call()
            except (rexc.ConnectionError, rexc.TimeoutError, rexc.BusyLoadingError):
                if time.monotonic() > deadline:
                    raise
                self.retries += 1
                await asyncio.sleep(0.05)

    def _bucket(self, key_id: str, model: str, day: str) -> str:
        return f"{self.prefix}u:{day}:{len(key_id)}:{key_id}:{model}"

    async def add(self, key_id: str, model: str, day: str, inc: dict[str, int], answer_id: str = "") -> None:
        args: list[Any] = [x for kv in inc.items() for x in kv]
        keys = [self._bucket(key_id, model, day), f"{self.prefix}u-seen:{answer_id or time.time_ns()}",
                f"{self.prefix}u-days:{day}"]
        await self._retrying(lambda: self.script(keys=keys, args=args))

    async def rows(self, start: str, end: str, key_id: str | None = None) -> list[dict[str, Any]]:
        from datetime import date, timedelta

        out = []
        d, last = date.fromisoformat(start), date.fromisoformat(end)
        while d <= last:
            day = d.isoformat()
            members = await self._retrying(lambda s=f"{self.prefix}u-days:{day}": self.client.smembers(s))
            for bucket in sorted(members):
                rest = bucket.decode()[len(f"{self.prefix}u:{day}:"):]
                n, _, rest = rest.partition(":")
                kid, model = rest[:int(n)], rest[int(n) + 1:]
                if key_id is not None and kid != key_id:
                    continue
                h = await self._retrying(lambda b=bucket: self.client.hgetall(b))
                out.append({"key": kid, "model": model, "day": day,
                            **{f: int(h.get(f.encode(), 0)) for f in FIELDS}})
            d += timedelta(days=1)
        return out
