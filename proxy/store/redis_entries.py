"""Entries in Redis, shared by every proxy instance pointed at it (`--store redis://HOST:PORT/DB`).

Each operation is one Lua script call (redis_entries.lua), so it is atomic across instances: no
read-modify-write spans an await. The script keeps the in-memory store's guarantees: TTL refreshed
on use, byte budgets per session and in total with least-recently-used eviction, and tombstones so
an evicted conversation is reported as evicted. Times come from Redis's clock, one for all instances.

Redis unreachable: a 503 (`store_unavailable`) in the caller's protocol; redis-py reconnects on the
next call, and scripts are loaded again after a Redis restart. A single Redis (or a primary with
replicas) is supported, not Redis Cluster: a script touches keys of several sessions.

Every request makes one of these calls, so they take a short way through redis-py: the command is
packed by hiredis and sent on one of redis-py's own connections (its connect, auth, TLS, health check
and hiredis reply parser), kept in a free list of this store's. redis-py's client path around that
(its blocking pool's condition and timeouts, its Python command packer, its observability hooks, its
retry wrapper) cost about 50 us of CPU per call, a quarter of what Redis added to a small request
(scripts/bench.sh's Redis row). The rest of redis-py's behaviour is kept here: at most
MAX_CONNECTIONS at once (a request beyond them waits for one, up to SOCKET_TIMEOUT), a connection
that failed is dropped (never one that may still hold a late reply), a refused connection is tried
once more, and a script Redis forgot (NOSCRIPT) is loaded again.
"""

import asyncio
import contextlib
import hashlib
from pathlib import Path
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis import exceptions as rexc
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from proxy.errors import ProxyError
from proxy.store.byte_lru import Key, TooLarge
from proxy.store.entries import Evicted

SCRIPT = (Path(__file__).with_name("redis_entries.lua")).read_text()
DEFAULT_PREFIX = "gtp:"
# A store that does not answer within this long is treated as down (a request must not hang on it).
SOCKET_TIMEOUT = 5.0
MAX_CONNECTIONS = 64  # per process: Redis answers each script in microseconds, so few are needed


class StoreUnavailable(ProxyError):
    pass


def unavailable(e: Exception) -> StoreUnavailable:
    return StoreUnavailable(f"The session store (Redis) is unavailable: {type(e).__name__}: {e}. Nothing was "
                            "changed; retry when it is back.", status=503, code="store_unavailable",
                            type="server_error", headers={"Retry-After": "1"})


class RedisEntries:
    def __init__(self, url: str, max_bytes: int, session_bytes: int, ttl: float, prefix: str = DEFAULT_PREFIX) -> None:
        # Requests beyond the pool wait for a connection (up to the timeout) instead of failing.
        # A pooled connection Redis dropped (a restart) is retried once on a fresh one, so the first
        # requests after Redis is back do not fail; only a refused connection (never a timeout, after
        # which a script may have run) is retried.
        pool = aioredis.BlockingConnectionPool.from_url(url, max_connections=MAX_CONNECTIONS, timeout=SOCKET_TIMEOUT,
                                                        socket_timeout=SOCKET_TIMEOUT,
                                                        socket_connect_timeout=SOCKET_TIMEOUT, health_check_interval=30,
                                                        retry=Retry(NoBackoff(), 1),
                                                        retry_on_error=[rexc.ConnectionError])
        self.client = aioredis.Redis(connection_pool=pool)
        self.sha = hashlib.sha1(SCRIPT.encode()).hexdigest()  # EVALSHA's name for the script
        self._free: list[Any] = []  # idle connections of _call's (redis-py's, made by the pool)
        self._slots = asyncio.Semaphore(MAX_CONNECTIONS)
        self.ttl_ms, self.session_bytes, self.max_bytes, self.prefix = int(ttl * 1000), session_bytes, max_bytes, prefix

    def _key(self, key: Key) -> str:
        session, kind, name = key
        return f"{self.prefix}e:{len(session)}:{session}:{kind}:{name}"

    async def _call(self, key: Key, op: str, *args: bytes | str | int) -> list:
        command = hiredis.pack_command(("EVALSHA", self.sha, 1, self._key(key), op, key[0], self.ttl_ms,
                                        self.session_bytes, self.max_bytes, self.prefix, *args))
        try:
            return await self._round_trip(command)
        except (rexc.ConnectionError, rexc.TimeoutError, rexc.BusyLoadingError, OSError) as e:
            raise unavailable(e) from e
        except rexc.ResponseError as e:
            if "OOM" in str(e) or "READONLY" in str(e) or "MASTERDOWN" in str(e):
                raise unavailable(e) from e
            raise

    async def _round_trip(self, command: bytes) -> Any:
        """Send a packed command on an idle connection (made when there is none) and read its reply."""
        slots = self._slots
        if slots.locked():  # MAX_CONNECTIONS calls under way: wait for one, as long as for Redis
            async with asyncio.timeout(SOCKET_TIMEOUT):
                await slots.acquire()
        else:
            await slots.acquire()  # returns at once
        try:
            conn = self._free.pop() if self._free else self.client.connection_pool.make_connection()
            try:
                reply = await self._send(conn, command)
            except BaseException:  # a reply may still come on it: never reused
                with contextlib.suppress(Exception):
                    await conn.disconnect(nowait=True)
                raise
            self._free.append(conn)
            return reply
        finally:
            slots.release()

    async def _send(self, conn: Any, command: bytes) -> Any:
        retried = loaded = False
        while True:
            try:
                await conn.send_packed_command(command)
                return await conn.read_response()
            except rexc.NoScriptError:  # Redis restarted, or its scripts were flushed: load it again
                if loaded:
                    raise
                loaded = True
                await conn.send_packed_command(hiredis.pack_command(("SCRIPT", "LOAD", SCRIPT)))
                await conn.read_response()
            except rexc.ConnectionError:  # dropped (a restart): once more, on a fresh connection
                if retried:
                    raise
                retried = True
                await conn.disconnect(nowait=True)

    async def check(self) -> None:
        try:
            await self.client.ping()
        except (rexc.AuthenticationError, rexc.AuthorizationError) as e:
            raise ValueError(f"the Redis store refuses this instance: {e}") from None
        except (rexc.ConnectionError, rexc.TimeoutError, rexc.BusyLoadingError, OSError) as e:
            raise unavailable(e) from e
        except rexc.ResponseError as e:
            if "OOM" in str(e) or "READONLY" in str(e) or "MASTERDOWN" in str(e) or "LOADING" in str(e):
                raise unavailable(e) from e
            raise ValueError(f"the Redis store answers: {e}") from None

    @property
    def entry_limit(self) -> int:
        return self.session_bytes

    async def claim(self, scoped: bool) -> None:
        marker = f"{self.prefix}scoped"
        try:
            if scoped:
                await self.client.set(marker, b"1")
            elif await self.client.exists(marker):
                raise ValueError("this store holds sessions of instances with client keys; an instance without "
                                 "keys would reach them by name. Give it the same client keys (--api-key, "
                                 "--api-keys-file) or a store of its own (another database or prefix)")
        except (rexc.ConnectionError, rexc.TimeoutError, rexc.BusyLoadingError, OSError) as e:
            raise unavailable(e) from e

    async def get(self, key: Key) -> list[bytes] | None:
        out = await self._call(key, "get")
        if out[0] == 2:
            raise Evicted(key)
        return out[1:] if out[0] == 1 else None

    async def tail(self, key: Key, count: int) -> list[bytes] | None:
        out = await self._call(key, "tail", count)
        return out[1:] if out[0] == 1 else None

    async def put(self, key: Key, docs: list[bytes]) -> None:
        out = await self._call(key, "put", *docs)
        if out[0] == -1:
            raise TooLarge(f"{out[1]} bytes is more than a session may keep ({self.session_bytes} bytes)")

    async def append(self, key: Key, doc: bytes, keep: int = 0, fresh: bool = True) -> None:
        out = await self._call(key, "append", doc, keep, 1 if fresh else 0)
        if out[0] == 2:
            raise Evicted(key)
        if out[0] == -1:
            raise TooLarge(f"{out[1]} bytes is more than a session may keep ({self.session_bytes} bytes)")

    async def pop(self, key: Key) -> bool:
        return (await self._call(key, "pop"))[0] == 1

    async def firsts(self, keys: list[Key]) -> list[bytes | None]:
        if not keys:
            return []
        out = await self._call(keys[0], "firsts", *(self._key(k) for k in keys[1:]))
        return [doc or None for doc in out]

    async def alive(self, keys: list[Key]) -> bool:
        if not keys:
            return True
        return (await self._call(keys[0], "alive", *(self._key(k) for k in keys[1:])))[0] == 1

    async def stats(self, session: str = "") -> tuple[int, int, int]:
        """(bytes in all, entries in all, bytes of `session`)."""
        out = await self._call((session, "", ""), "stats")
        return int(out[0]), int(out[1]), int(out[2])

    async def usage(self) -> tuple[int, int]:
        total, entries, _ = await self.stats()
        return total, entries

    async def close(self) -> None:
        free, self._free = self._free, []
        for conn in free:
            with contextlib.suppress(Exception):
                await conn.disconnect(nowait=True)
        await self.client.aclose(close_connection_pool=True)
