"""What every upstream HTTP client shares: a checked base URL, one lazily made, reusable aiohttp
session with a bounded connect time (the Gemini client, the OpenAI-compatible client), and the
reading of a whole answer under the streams' rule of meaningful progress."""

import asyncio
import contextvars
from typing import Any

import aiohttp
from yarl import URL

# A whole answer must bring this much more (or its end) within every --read-timeout: a trickle (a byte
# every 0.5 s) otherwise reset the socket's read timeout for ever and held the client to --total-timeout.
# (A stream's unit of progress is a whole event; a whole answer has none but its bytes.)
PROGRESS_BYTES = 16 * 1024


class Trickled(TimeoutError):
    """A whole answer's body brought less than PROGRESS_BYTES within one read timeout."""

    def __init__(self, received: int, window: float, silent: bool) -> None:
        self.received, self.window, self.silent = received, window, silent
        super().__init__(f"{received} bytes in {window:g}s")

    def what(self) -> str:
        """The upstream's failure, in the words of the 504 (after "Gemini ...")."""
        if self.silent:
            return f"sent nothing more of its answer for {self.window:g}s"
        return (f"sent only {self.received} bytes of its answer in {self.window:g}s (a trickle: at least "
                f"{PROGRESS_BYTES} or the end are expected)")


async def read_whole(resp: aiohttp.ClientResponse, window: float, deadline: float) -> bytes:
    """A whole answer's body: at least PROGRESS_BYTES (or the end) every `window` seconds, else
    Trickled; all of it by `deadline` (the loop's clock), else TimeoutError. One timer per window,
    not per read."""
    loop = asyncio.get_running_loop()
    parts: list[bytes] = []
    size, last = 0, loop.time()
    while True:
        mark, limit = size, min(loop.time() + window, deadline)
        try:
            async with asyncio.timeout_at(limit):
                while size - mark < PROGRESS_BYTES:
                    data = await resp.content.readany()
                    if not data:
                        return parts[0] if len(parts) == 1 else b"".join(parts)
                    parts.append(data)
                    size, last = size + len(data), loop.time()
        except TimeoutError as e:  # this window's, or the socket's read timeout (aiohttp's, the same length)
            if limit >= deadline and not isinstance(e, aiohttp.ServerTimeoutError):
                raise
            raise Trickled(size - mark, window, loop.time() - last >= window * 0.9) from e


def checked_base_url(base_url: str, what: str) -> URL:
    """`http(s)://host[:port][/path]` only: no query or fragment ever reaches a built URL."""
    base = URL(base_url.rstrip("/"))
    if base.scheme not in ("http", "https") or not base.host or base.query_string or base.fragment:
        raise ValueError(f"{what} must be http(s)://host[:port][/path], not {base_url!r}")
    return base


from proxy.defaults import DEFAULT_POOL_TIMEOUT  # noqa: E402, F401 (the options' default)


class PoolWait:
    """One request's wait for a pooled connection (_BoundedWaitConnector): while it is
    queued, its timeout (`scope`, the request's asyncio.timeout) is brought forward to the pool's bound,
    and put back once it has a connection; `queued` says which of the two ended it."""

    def __init__(self, scope: asyncio.Timeout, bound: float) -> None:
        self.scope, self.bound = scope, bound
        self.queued = False
        self.saved: float | None = None


# The current request's PoolWait, for the connector (set around a POST by the upstream's send).
POOL_WAIT: contextvars.ContextVar[PoolWait | None] = contextvars.ContextVar("gtp_pool_wait", default=None)


class _BoundedWaitConnector(aiohttp.TCPConnector):
    """aiohttp's connector, whose callers' timeout is brought forward to the pool's bound while the pool
    is full (PoolWait), and put back once they have a connection. Done here, not with aiohttp's
    connection-queued traces: a session with any trace config sends every trace signal of every
    request (about 30,000 instructions a request), where this is one check."""

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        wait = POOL_WAIT.get()
        if wait is None or not self.limit or len(self._acquired) < self.limit:  # a connection is free
            return await super().connect(req, traces, timeout)
        loop = asyncio.get_running_loop()
        wait.queued, wait.saved = True, wait.scope.when()
        bound = loop.time() + wait.bound
        wait.scope.reschedule(bound if wait.saved is None else min(bound, wait.saved))
        connection = await super().connect(req, traces, timeout)
        wait.queued = False
        wait.scope.reschedule(wait.saved)
        return connection


class HttpSession:
    """`pool_size`: connections open at once to this upstream (aiohttp's default, 100, made every
    client wait behind 100 slow streams); a request waits at most `pool_timeout` for one (PoolWait),
    then is refused with a 503 (the subclass says how: `_pool_full`)."""

    def __init__(self, connect_timeout: float, pool_size: int = 0, pool_timeout: float = DEFAULT_POOL_TIMEOUT
                 ) -> None:
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout)
        self._session: aiohttp.ClientSession | None = None
        self.pool_size, self.pool_timeout = pool_size, pool_timeout

    def pool_state(self) -> tuple[int, int, int]:
        """(connections in use, the pool's size, requests waiting for one); size 0: no limit. aiohttp's
        own counts (private attributes)."""
        connector = self._session.connector if self._session is not None and not self._session.closed else None
        if connector is None:
            return 0, self.pool_size, 0
        waiters = getattr(connector, "_waiters", {})
        return len(getattr(connector, "_acquired", ())), self.pool_size, sum(len(w) for w in waiters.values())

    def _idle_limit(self, read_timeout: float) -> aiohttp.ClientTimeout:
        """For a request answered whole (not a stream): nothing read from the socket for `read_timeout`
        seconds, before the first byte or between two, ends it (aiohttp.ServerTimeoutError). A stream
        keeps its own clock, which only whole events reset."""
        return aiohttp.ClientTimeout(total=None, sock_connect=self._timeout.sock_connect, sock_read=read_timeout)

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = _BoundedWaitConnector(limit=self.pool_size, limit_per_host=0)
            self._session = aiohttp.ClientSession(timeout=self._timeout, auto_decompress=True, connector=connector)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
