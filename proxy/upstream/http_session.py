"""What every upstream HTTP client shares: a checked base URL and one lazily made, reusable
aiohttp session with a bounded connect time (the Gemini client, the OpenAI-compatible client)."""

import aiohttp
from yarl import URL


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
