"""What every upstream HTTP client shares: a checked base URL, one lazily made, reusable aiohttp
session with a bounded connect time (the Gemini client, the OpenAI-compatible client), and the
reading of a whole answer under the streams' rule of meaningful progress."""

import asyncio

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


class HttpSession:
    def __init__(self, connect_timeout: float) -> None:
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout)
        self._session: aiohttp.ClientSession | None = None

    def _idle_limit(self, read_timeout: float) -> aiohttp.ClientTimeout:
        """For a request answered whole (not a stream): nothing read from the socket for `read_timeout`
        seconds, before the first byte or between two, ends it (aiohttp.ServerTimeoutError). A stream
        keeps its own clock, which only whole events reset."""
        return aiohttp.ClientTimeout(total=None, sock_connect=self._timeout.sock_connect, sock_read=read_timeout)

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout, auto_decompress=True)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
