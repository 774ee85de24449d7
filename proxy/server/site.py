"""Run the front-end on a socket with limits against slow and abundant clients.

aiohttp alone waits on a client as long as it likes: no deadline for headers or body, no cap on
connections (at the fd limit every client fails and asyncio logs each failed accept), and its own
protocol errors (an 8,190-byte header) come as text/plain. Here:
- a client has `client_timeout` to send its headers (aiohttp's keep-alive timer, which also closes
  a connection that sends nothing) and again for its body (server/errors.read_json), and a stream
  it stops reading is dropped after the same time (server/stream.py);
- above `max_connections` a new connection gets one 503 and is closed, before fds run out;
- aiohttp's own errors are JSON both SDK families can read.
"""

import asyncio
import dataclasses
import json
import logging
import resource
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, cast

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

log = logging.getLogger(__name__)
from proxy.defaults import (  # noqa: E402, F401 (the options' defaults)
    DEFAULT_BACKGROUND_LEASE,
    DEFAULT_BACKGROUND_PER_KEY,
    DEFAULT_CLIENT_TIMEOUT,
    DEFAULT_SHUTDOWN_TIMEOUT,
)


def default_max_connections() -> int:
    """Half the fds left after a reserve: each client connection may hold one upstream connection."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft = 65536 if soft == resource.RLIM_INFINITY else soft
    return max(16, (soft - 128) // 2)


def raise_fd_limit() -> None:
    """Use the hard fd limit (a process may): more clients before the cap refuses any."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 65536
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(target, 65536), hard))


@dataclass(frozen=True)
class ServerLimits:
    client_timeout: float = DEFAULT_CLIENT_TIMEOUT
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT
    max_connections: int = field(default_factory=default_max_connections)
    background_lease: float = DEFAULT_BACKGROUND_LEASE
    max_in_flight_per_key: int = 0  # requests one client key may have running at once (0: no cap)
    max_background_per_key: int = 0  # background runs one client key may have running at once (0: no cap)

    @classmethod
    def configured(cls, client_timeout: float, shutdown_timeout: float, max_connections: int | None,
                   background_lease: float, upstream_connections: int | None = None,
                   max_in_flight_per_key: int | None = None,
                   max_background_per_key: int = DEFAULT_BACKGROUND_PER_KEY) -> "ServerLimits":
        """From the options (`serve`'s or the addon's): no cap given (None or 0) is the default cap; a
        client key's share of requests in flight is by default half the upstream connections."""
        cap = {"max_connections": max_connections} if max_connections else {}
        limits = cls(client_timeout=client_timeout, shutdown_timeout=shutdown_timeout,
                     background_lease=background_lease, max_background_per_key=max_background_per_key, **cap)
        share = (max(1, limits.pool_size(upstream_connections) // 2) if max_in_flight_per_key is None
                 else max_in_flight_per_key)
        return dataclasses.replace(limits, max_in_flight_per_key=share)

    def pool_size(self, upstream_connections: int | None) -> int:
        """Connections to an upstream at once: as many as client connections, unless told."""
        return upstream_connections or self.max_connections


def neutral_error(status: int, message: str) -> dict[str, Any]:
    """An error object for when the caller's protocol is unknown (no request line yet, or one
    aiohttp could not parse): one object both OpenAI's and Gemini's SDKs read (`message`, `type`;
    `code`, `status`)."""
    return {"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error",
                      "param": None, "code": status,
                      "status": "UNAVAILABLE" if status == 503 else "INVALID_ARGUMENT"}}


def _raw_answer(status: int, body: dict[str, Any], retry_after: int) -> bytes:
    """A whole HTTP/1.1 answer, for a connection refused before aiohttp sees it."""
    data = json.dumps(body).encode()
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(data)}\r\nconnection: close\r\nretry-after: {retry_after}\r\n\r\n")
    return head.encode() + data


class _Refuse(asyncio.Protocol):
    """A connection over the cap: one 503, then closed (its fd is back at once)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's classes
        message = f"The proxy is at its limit of {self.limit} connections; retry shortly."
        transport.write(_raw_answer(503, neutral_error(503, message), retry_after=1))
        transport.close()


class GuardedHandler(RequestHandler):
    """aiohttp's request handler, with its protocol errors (bad request line, header too large...)
    answered as JSON instead of text/plain, and counted by its site while its connection lives."""

    def __init__(self, site: "GuardedSite", server: web.Server) -> None:
        super().__init__(server, loop=server._loop, **server._kwargs)  # what Server.__call__ does
        self.site = site

    def connection_lost(self, exc: BaseException | None) -> None:
        self.site.open_connections -= 1
        super().connection_lost(exc)

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if request.writer.output_size > 0:
            raise ConnectionError("the answer had started; the connection is dropped")
        if status == 500:
            log.error("unexpected error reading a request", exc_info=exc)
            text = "The proxy failed while reading this request."
        else:  # the client's mistake (a header over the limit, a malformed request line): no traceback
            text = (message or str(exc or "") or "Bad request.").strip()
            log.info("refused a malformed request (%s): %s", status, text[:200])
        out = web.json_response(neutral_error(status, text), status=status)
        out.force_close()
        return out


class GuardedSite(web.TCPSite):
    def __init__(self, runner: web.AppRunner, host: str, port: int, limits: ServerLimits) -> None:
        super().__init__(runner, host, port)
        self.limits = limits
        # Counted when asyncio asks for the protocol: it accepts a batch before any connection_made,
        # so aiohttp's own list of connections lags behind a burst.
        self.open_connections = 0

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner, as TCPSite.start does
        server = self._runner.server
        assert server is not None
        limit = self.limits.max_connections

        def protocol() -> asyncio.Protocol:
            if self.open_connections >= limit:
                return _Refuse(limit)
            self.open_connections += 1
            return GuardedHandler(self, server)

        self._server = await asyncio.get_running_loop().create_server(
            protocol, self._host, self._port, backlog=self._backlog, reuse_address=self._reuse_address)

    @property
    def bound_port(self) -> int:
        assert self._server is not None
        return self._server.sockets[0].getsockname()[1]


async def start_site(app: web.Application, host: str, port: int, limits: ServerLimits
                     ) -> tuple[web.AppRunner, GuardedSite]:
    """Start `app` on host:port; the runner's cleanup is the bounded shutdown (make_app's on_shutdown
    ends open streams first)."""
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=limits.client_timeout,
                           shutdown_timeout=FINAL_PHASE)
    await runner.setup()
    site = GuardedSite(runner, host, port, limits)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    return runner, site


# The last part of a shutdown: handlers told to stop have this long to write their failure events.
FINAL_PHASE = 2.0
