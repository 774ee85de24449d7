"""The requests being handled, so a shutdown can end each in its own protocol.

On SIGTERM the proxy first drains (`draining`: /readyz answers 503 and every answer closes its
connection, while the listener stays open `--drain-seconds` so a load balancer's checks see it and
send no more); then the listening socket closes; requests in flight get a grace period to finish;
those still running are then cancelled, and each turns the cancellation into its protocol's failure
(a 503 error object, `response.failed`, a Chat error chunk, a Gemini error) instead of a bare cut.
"""

import asyncio
import contextlib
from collections.abc import Iterator

from proxy.errors import ProxyError

SHUTTING_DOWN = "The proxy is shutting down; retry the request."


class InFlight:
    def __init__(self) -> None:
        self._running: dict[asyncio.Task, asyncio.Event] = {}
        self.closing = False
        self.draining = False  # SIGTERM came: still serving, but no longer ready (/readyz 503)

    @property
    def idle(self) -> bool:
        """No request is running."""
        return not self._running

    @contextlib.contextmanager
    def track(self) -> Iterator[None]:
        task = asyncio.current_task()
        assert task is not None
        done = asyncio.Event()
        self._running[task] = done
        try:
            yield
        finally:
            self._running.pop(task, None)
            done.set()

    async def stop(self, grace: float) -> None:
        """Refuse new requests, wait up to `grace` seconds, then cancel what still runs."""
        self.closing = True
        waiting = [e.wait() for e in self._running.values()]
        if waiting:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await asyncio.gather(*waiting)
        for task in list(self._running):
            task.cancel(SHUTTING_DOWN)

    def absorb(self, error: BaseException) -> ProxyError:
        """Turn a shutdown's cancellation into the error to report; anything else is re-raised."""
        task = asyncio.current_task()
        if not (self.closing and isinstance(error, asyncio.CancelledError) and task is not None):
            raise error
        task.uncancel()  # this request goes on just long enough to say why it ends
        return self.refusal()

    @staticmethod
    def refusal() -> ProxyError:
        return ProxyError(SHUTTING_DOWN, status=503, type="server_error", code="server_shutting_down",
                          headers={"Retry-After": "1"})
