"""The journal shared by every instance on one Redis (`--store redis://...`): each instance keeps
its own exchanges (ring.py) and publishes their entries, scrubbed and packed (packed.py), to Redis,
where they are kept bounded by bytes (journal.lua, one call per batch) and announced on a channel;
the page, the API and the CLI of any instance then list, open and follow the exchanges of all of
them, rendering an entry when they read it, as they do their own.

Publishing runs on a background task, after the answer went out, in batches (one round trip each,
so the store's one round trip per request stays about one): an entry is scrubbed of secrets before
it leaves the process, and the request never waits on Redis. A backlog beyond MAX_PENDING exchanges
(Redis slow or down) drops the oldest and says so in the log once.
"""

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from proxy import ids
from proxy.journal.packed import Unpackable, unpack

log = logging.getLogger(__name__)
SCRIPT = (Path(__file__).with_name("journal.lua")).read_text()
MAX_PENDING = 512  # exchanges waiting to be published
BATCH = 64  # exchanges published in one round trip
FLUSH_AFTER = 0.1  # seconds a publication waits for others to share its round trip
LIST_WINDOW = 5000  # newest exchanges looked through for a list (all scopes together)
READ_BATCH = 200  # briefs, or entries, read in one round trip


class Shared:
    def __init__(self, client_of: Callable[[], Any], max_bytes: int,
                 pack: Callable[[tuple], tuple[str, str, bytes, bytes]], prefix: str = "gtp:") -> None:
        """`pack`: an entry's id, scope, brief and packed self, scrubbed (ring.Journal.packed)."""
        self.client_of, self.max_bytes, self.pack, self.prefix = client_of, max_bytes, pack, prefix
        self.keys = {name: f"{prefix}jk:{name}" for name in ("ids", "brief", "entry", "scope", "live")}
        self.instance = ids.exchange_id(ids.exchange_number())  # tells this instance's announcements from the others'
        self.pending: collections.deque = collections.deque()
        self.dropped = 0
        self._flusher: asyncio.Task | None = None
        self._listener: asyncio.Task | None = None
        self._script: Any = None
        self._script_client: Any = None

    @property
    def client(self) -> Any:
        return self.client_of()

    def _run(self, client: Any) -> Any:
        if self._script is None or self._script_client is not client:
            self._script, self._script_client = client.register_script(SCRIPT), client
        return self._script

    def publish(self, ex: Any) -> None:
        """Queue a finished exchange for Redis (called on the loop, never waits)."""
        if self.client is None:
            return
        if len(self.pending) >= MAX_PENDING:
            self.pending.popleft()
            self.dropped += 1
            if self.dropped == 1:
                log.warning("the shared journal falls behind (Redis slow or down): the oldest unpublished "
                            "exchanges are dropped from it (this instance keeps them)")
        self.pending.append(ex)
        if self._flusher is None or self._flusher.done():
            with contextlib.suppress(RuntimeError):  # no running loop (a direct caller): nothing to publish on
                self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        """Publish what is pending, a batch at a time in one script call, gathered for FLUSH_AFTER."""
        await asyncio.sleep(FLUSH_AFTER)
        while self.pending:
            client = self.client
            if client is None:
                return
            batch = [self.pending.popleft() for _ in range(min(len(self.pending), BATCH))]
            try:
                args: list[Any] = [self.prefix, self.max_bytes, self.instance]
                for kept in batch:
                    args += self.pack(kept)  # id, scope, brief, entry
                await self._run(client)(args=args)  # one call, one round trip, for the batch
            except Exception as e:  # Redis down: the exchanges stay in this instance's journal only
                log.info("could not publish %d exchange(s) to the shared journal: %s", len(batch), e)

    async def list(self, scope: str, limit: int, matches: Callable[[Any], bool]) -> list[tuple]:
        """The newest `limit` entries of `scope` whose brief (the filters' values, kept.FILTERS) matches."""
        client, keys = self.client, self.keys
        newest = await client.lrange(keys["ids"], 0, LIST_WINDOW - 1)
        if not newest:
            return []
        scopes = await client.hmget(keys["scope"], newest)
        mine = [i for i, s in zip(newest, scopes, strict=True) if s is not None and s.decode() == scope]
        chosen: list[bytes] = []
        for start in range(0, len(mine), READ_BATCH):
            batch = mine[start:start + READ_BATCH]
            for exchange_id, brief in zip(batch, await client.hmget(keys["brief"], batch), strict=True):
                if brief is not None and matches(orjson.loads(brief)):
                    chosen.append(exchange_id)
            if len(chosen) >= limit:
                break
        chosen = chosen[:limit]
        out: list[tuple] = []
        for start in range(0, len(chosen), READ_BATCH):
            out += filter(None, map(self._unpack, await client.hmget(keys["entry"], chosen[start:start + READ_BATCH])))
        return out

    async def get(self, scope: str, exchange_id: str) -> tuple | None:
        """An exchange's entry, unless it is another scope's."""
        client = self.client
        owner = await client.hmget(self.keys["scope"], exchange_id)
        if owner and owner[0] is not None and owner[0].decode() == scope:
            return self._unpack(await client.hget(self.keys["entry"], exchange_id))
        return None

    def _unpack(self, packed: bytes | None) -> tuple | None:
        if packed is None:
            return None
        try:
            return unpack(packed)
        except Unpackable as e:  # another version's, or damaged: left out
            log.info("an entry of the shared journal could not be read: %s", e)
            return None

    def follow(self, deliver: Callable[[str, tuple], None], wanted: Callable[[str], bool]) -> None:
        """Deliver other instances' new entries as they are announced, those of a scope someone follows
        (`wanted`) only (one subscription a process)."""
        if self.client is None or (self._listener is not None and not self._listener.done()):
            return
        self._listener = asyncio.get_running_loop().create_task(self._listen(deliver, wanted))

    async def _listen(self, deliver: Callable[[str, tuple], None], wanted: Callable[[str], bool]) -> None:
        while True:
            client = self.client
            if client is None:
                return
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(self.keys["live"])
                    async for message in pubsub.listen():
                        if message.get("type") != "message":
                            continue
                        scope, instance, exchange_id = message["data"].decode().split("\n", 2)
                        if instance != self.instance and wanted(scope):
                            kept = self._unpack(await client.hget(self.keys["entry"], exchange_id))
                            if kept is not None:
                                deliver(scope, kept)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.info("the shared journal's live feed broke (%s); following again in 1s", e)
                await asyncio.sleep(1)

    def close(self) -> None:
        for task in (self._listener, self._flusher):
            if task is not None and not task.done():
                task.cancel()
