"""The journal shared by every instance on one Redis (`--store redis://...`): each instance keeps its
own exchanges (ring.py), and Redis carries the questions and answers between the instances. Any
instance's page, API and CLI list and open the exchanges of every instance that is up, and follow
them live.

Nothing of an exchange goes to Redis on the request's path. A journal is written on every request
and read once in a while: publishing every exchange (scrubbed and packed: 50 us of CPU per small
request, a fifth of the proxy's) paid on each request for what a person reads now and then.

- A list, or one exchange, asked of the shared journal is asked of every instance at once, on one
  channel. Each answers with what it holds of the asker's scope, rendered and scrubbed as its own page
  would (ring.py), in a Redis list of the asker's that expires. PUBLISH says how many instances heard
  the question: the asker waits for those only, ASK_TIMEOUT at most.
- A page following live announces the scope it follows, again every FOLLOW_EVERY; an instance that
  starts listening asks the followers to announce again. For FOLLOW_TTL after it last heard of a
  follower, an instance publishes the summaries of that scope's new exchanges.

An instance that stopped takes its exchanges with it, as a single instance does when it restarts.
Only scrubbed summaries and documents cross Redis, and none stays there: a reply is deleted once read,
and expires anyway.
"""

import asyncio
import collections
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from proxy import ids

log = logging.getLogger(__name__)
ASK_TIMEOUT = 2.0  # seconds an asker waits for the instances that heard it
REPLY_TTL = 30  # seconds a reply nobody read is kept
FOLLOW_EVERY = 10.0  # seconds between a follower's announcements of what it follows
FOLLOW_TTL = 30.0  # seconds an instance announces a scope's exchanges after last hearing of a follower
MAX_ANNOUNCING = 256  # summaries waiting to be announced (Redis slow or down: the oldest are dropped)
FILTER_NAMES = frozenset({"session", "model", "status", "protocol", "kind"})


class Local(Protocol):
    """What an instance's own journal answers with (ring.Journal)."""

    def list(self, scope: str, limit: int = 100, **filters: str | None) -> list[dict[str, Any]]: ...

    def get(self, scope: str, exchange_id: str) -> bytes | None: ...

    def deliver(self, scope: str, summary: dict[str, Any]) -> None: ...

    def followed(self) -> set[str]: ...


class Shared:
    def __init__(self, client_of: Callable[[], Any], local: Local, prefix: str = "gtp:") -> None:
        self.client_of, self.local = client_of, local
        self.asks, self.announcements = f"{prefix}jk:ask".encode(), f"{prefix}jk:live".encode()
        self.reply_prefix = f"{prefix}jk:reply:"
        self.instance = ids.exchange_id(ids.exchange_number())  # tells this instance's messages from the others'
        self.followers: dict[str, float] = {}  # scopes other instances follow, and until when (monotonic)
        self.listener: asyncio.Task | None = None
        self._ready: asyncio.Event | None = None
        self._broken = False  # the listener lost Redis: asks fail at once until it listens again
        self._announcing: collections.deque = collections.deque(maxlen=MAX_ANNOUNCING)
        self._tasks: set[asyncio.Task] = set()  # answers, announcements, the followers' reminder
        self._publisher: asyncio.Task | None = None
        self._reminder: asyncio.Task | None = None

    @property
    def client(self) -> Any:
        return self.client_of()

    def start(self) -> None:
        """Listen to the other instances (once a process; called on the loop: at start-up, else by the
        first exchange or the first read)."""
        if self.client is None or (self.listener is not None and not self.listener.done()):
            return
        with contextlib.suppress(RuntimeError):  # no running loop (a direct caller): nothing to listen on
            self._ready = asyncio.Event()
            self.listener = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        while self.client is not None:
            try:
                async with self.client.pubsub() as pubsub:
                    await pubsub.subscribe(self.asks, self.announcements)
                    async for message in pubsub.listen():
                        kind = message.get("type")
                        if kind == "subscribe" and message.get("data") == 2:  # both channels: heard from now on
                            assert self._ready is not None
                            self._ready.set()
                            if self._broken:
                                log.warning("the shared journal listens to Redis again")
                            self._broken = False
                            self._spawn(self._say({"op": "hello"}))  # followers, announce again
                        elif kind == "message":
                            self._heard(message["channel"], message["data"])
            except asyncio.CancelledError:
                raise
            except Exception as e:
                if self._ready is not None:
                    self._ready.clear()
                # Once when Redis goes away, once when it is back: not every second while it is down.
                log.log(logging.DEBUG if self._broken else logging.WARNING,
                        "the shared journal lost Redis (%s); it tries again every second, and lists this "
                        "instance's exchanges only until it is back", e)
                self._broken = True
                await asyncio.sleep(1)

    def _heard(self, channel: bytes, data: bytes) -> None:
        try:
            message = orjson.loads(data)
            if type(message) is not dict or message.get("instance") == self.instance:
                return
            scope, op = message.get("scope"), message.get("op")
        except orjson.JSONDecodeError:
            return
        if op == "hello":
            if self.local.followed():
                self._remind()
            return
        if type(scope) is not str:
            return
        if channel == self.announcements:
            if type(message.get("summary")) is dict and scope in self.local.followed():
                self.local.deliver(scope, message["summary"])
        elif op == "follow":
            self.followers[scope] = time.monotonic() + FOLLOW_TTL
        elif op in ("list", "get") and str(message.get("reply", "")).startswith(self.reply_prefix):
            self._spawn(self._answer(op, scope, message))

    async def _answer(self, op: str, scope: str, message: dict[str, Any]) -> None:
        """Answer another instance's question with this instance's part, in its protocol's shape."""
        if op == "list":
            limit = message.get("limit")
            filters = message.get("filters") or {}
            if type(limit) is not int or type(filters) is not dict:
                return
            wanted = {k: v for k, v in filters.items() if k in FILTER_NAMES and type(v) is str}
            reply = orjson.dumps(self.local.list(scope, limit, **wanted))  # (list bounds the limit)
        else:
            exchange_id = message.get("id")
            reply = (self.local.get(scope, exchange_id) if type(exchange_id) is str else None) or b""
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.rpush(message["reply"], reply)
                pipe.expire(message["reply"], REPLY_TTL)
                await pipe.execute()
        except Exception as e:
            log.info("could not answer the shared journal: %s", e)

    async def ask(self, op: str, scope: str, **fields: Any) -> list[bytes]:
        """Ask every other instance that listens (`list` or `get`); their replies, as each sent it. Raises
        when Redis cannot be reached."""
        self.start()
        assert self._ready is not None
        if self._broken and not self._ready.is_set():
            raise ConnectionError("not connected to Redis")
        await asyncio.wait_for(self._ready.wait(), ASK_TIMEOUT)
        client, loop = self.client, asyncio.get_running_loop()
        reply = self.reply_prefix + uuid.uuid4().hex
        heard = await client.publish(self.asks, orjson.dumps({"op": op, "instance": self.instance, "scope": scope,
                                                               "reply": reply, **fields}))
        expected, out = heard - 1, []  # this instance heard it too
        if expected <= 0:
            return out
        deadline = loop.time() + ASK_TIMEOUT
        try:
            while len(out) < expected:
                left = deadline - loop.time()
                if left <= 0:
                    log.info("%d instance(s) did not answer the shared journal within %.0fs",
                             expected - len(out), ASK_TIMEOUT)
                    break
                got = await client.blpop([reply], timeout=max(left, 0.01))  # 0 would wait forever
                if got is not None:
                    out.append(got[1])
                    if op == "get" and got[1]:
                        break  # the exchange's instance answered
        finally:
            await client.delete(reply)
        return out

    def follows(self, scope: str) -> bool:
        """Whether another instance follows `scope` live now (called for every exchange: a lookup)."""
        until = self.followers.get(scope)
        if until is None:
            return False
        if until > time.monotonic():
            return True
        del self.followers[scope]
        return False

    def announce(self, scope: str, summary: dict[str, Any]) -> None:
        """Publish a new exchange's summary to the instances following its scope (never waits)."""
        self._announcing.append(orjson.dumps({"instance": self.instance, "scope": scope, "summary": summary}))
        if self._publisher is None or self._publisher.done():
            self._publisher = self._spawn(self._publish())

    async def _publish(self) -> None:
        while self._announcing and self.client is not None:
            batch = [self._announcing.popleft() for _ in range(len(self._announcing))]
            try:
                async with self.client.pipeline(transaction=False) as pipe:
                    for data in batch:
                        pipe.publish(self.announcements, data)
                    await pipe.execute()
            except Exception as e:  # those following see this instance's exchanges when they list them
                log.log(logging.DEBUG if self._broken else logging.INFO,  # Redis down: said once, by _listen
                        "could not announce %d exchange(s) to the shared journal: %s", len(batch), e)

    async def follow(self, scope: str) -> None:
        """Someone here follows `scope` live (Local.followed): tell the other instances, now (before
        the follower is told it follows) and until nobody here follows it."""
        self.start()
        if self._ready is None:
            return
        try:
            await asyncio.wait_for(self._ready.wait(), ASK_TIMEOUT)
        except TimeoutError:
            log.info("the shared journal is unavailable: following this instance's exchanges only")
            return
        await self._say({"op": "follow", "scope": scope})
        self._remind()

    def _remind(self) -> None:
        if self._reminder is None or self._reminder.done():
            self._reminder = self._spawn(self._announce_follows())

    async def _announce_follows(self) -> None:
        while followed := self.local.followed():
            for scope in followed:
                await self._say({"op": "follow", "scope": scope})
            await asyncio.sleep(FOLLOW_EVERY)

    async def _say(self, message: dict[str, Any]) -> None:
        """Tell every other instance (on the questions' channel), as this instance."""
        try:
            await self.client.publish(self.asks, orjson.dumps({**message, "instance": self.instance}))
        except Exception as e:
            log.log(logging.DEBUG if self._broken else logging.INFO,  # Redis down: said once, by _listen
                    "could not publish to the shared journal: %s", e)

    def _spawn(self, work: Any) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def close(self) -> None:
        for task in (self.listener, *self._tasks):
            if task is not None and not task.done():
                task.cancel()
