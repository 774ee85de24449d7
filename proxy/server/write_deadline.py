"""A deadline on writes to a client that stopped reading: a write pending for longer than `timeout`
aborts the connection (its pending write fails with a ConnectionError, and the stream behind it is
closed as if the client had gone). One timer per connection, rescheduled, not one per write: an
answer is hundreds of writes. Used by the Responses WebSocket (an HTTP stream's sender,
server/stream.py, keeps the same rule)."""

import asyncio
import contextlib
import logging
from collections.abc import Iterator

log = logging.getLogger(__name__)


class WriteDeadline:
    def __init__(self, transport: asyncio.BaseTransport | None, timeout: float, what: str) -> None:
        self.transport, self.timeout, self.what = transport, timeout, what
        self.loop = asyncio.get_running_loop()
        self.since: float | None = None
        self.handle: asyncio.TimerHandle | None = None
        self.aborted = False

    def _check(self) -> None:
        self.handle = None
        if self.since is None:
            return
        if self.loop.time() - self.since >= self.timeout:
            log.info("%s: the client read nothing for %gs; dropped", self.what, self.timeout)
            self.aborted = True
            if self.transport is not None:
                self.transport.abort()
            return
        self.handle = self.loop.call_later(self.timeout / 2, self._check)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Around one write: the clock runs while it is pending."""
        if self.aborted:
            raise ConnectionResetError(f"the client read nothing for {self.timeout:g}s")
        self.since = self.loop.time()
        if self.handle is None:
            self.handle = self.loop.call_later(self.timeout / 2, self._check)
        try:
            yield
        finally:
            self.since = None

    def close(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
