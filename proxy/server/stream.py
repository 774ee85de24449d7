"""The one stream pipeline every streaming route uses (Responses, Chat, native SSE and JSON array,
`/v1/gemini`).

It opens the upstream before the response starts (an error then is an ordinary error answer in the
caller's protocol), writes each protocol's events as Gemini's chunks arrive (never buffered whole),
and on *any* failure after the response started writes the protocol's terminal failure — never a
bare cut. The writer (each protocol's stream_writer.py) decides what a clean end means; a client that goes away
closes the upstream.
"""

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Protocol

from aiohttp import web

from proxy import malloc_tuning, metrics
from proxy.errors import ProxyError
from proxy.journal import exchange
from proxy.server.context import CONTEXT
from proxy.wire.gemini import checked

log = logging.getLogger(__name__)
INTERNAL = "The proxy failed while translating Gemini's answer; see its log."


class StreamWriter(Protocol):
    """One protocol's side of a stream; each method returns the bytes to send (maybe none)."""

    content_type: str

    def start(self) -> bytes: ...
    def feed(self, chunk: dict[str, Any]) -> bytes: ...
    def finish(self) -> bytes:
        """All of a clean end but its terminal event (or the failure, if the answer is unusable)."""
    def end(self) -> bytes:
        """The terminal event of a clean end, written once the route has stored the turn."""
    def fail(self, error: ProxyError) -> bytes:
        """The protocol's failure: mid-stream, or after `finish` when storing the turn failed."""
    @property
    def done(self) -> bool:
        """No more chunks are wanted (the answer ended, or failed)."""
    @property
    def failed(self) -> bool:
        """The client was told the answer failed."""


class _Sender:
    """Writes that give up on a client who stopped reading: a write pending for longer than
    `timeout` aborts the connection (and with it every buffer this stream holds), as if the client
    had gone. One timer per stream, rescheduled, not one per write: a 5 MB answer is hundreds of
    writes, and per-write timeouts left as many timer handles behind.

    `keep_alive` (seconds, frame): that frame is written whenever nothing was for that long (Anthropic's
    `ping` while Gemini thinks), from one timer per stream: wrapping each chunk's wait in a task of its
    own to notice the silence made a stream 3-7 times slower under load."""

    def __init__(self, request: web.Request, resp: web.StreamResponse, timeout: float,
                 keep_alive: tuple[float, bytes] | None = None) -> None:
        self.request, self.resp, self.timeout = request, resp, timeout
        self.loop = asyncio.get_running_loop()
        self.writing_since: float | None = None
        self.handle: asyncio.TimerHandle | None = None  # started by the first write
        self.exchange = exchange.CURRENT.get()  # the journal's record of what the client got
        self.keep_alive = keep_alive
        self.last_write = 0.0
        self.pinger: asyncio.TimerHandle | None = None
        self.pinging: asyncio.Task[None] | None = None
        self.ended = False

    def _ping_due(self) -> None:
        assert self.keep_alive is not None
        every, frame = self.keep_alive
        if self.ended:
            return
        quiet = self.loop.time() - self.last_write
        if quiet >= every and self.writing_since is None and self.pinging is None:
            self.last_write = self.loop.time()
            self.pinging = self.loop.create_task(self._ping(frame))
            quiet = 0.0
        self.pinger = self.loop.call_later(max(every - quiet, every / 10), self._ping_due)

    async def _ping(self, frame: bytes) -> None:
        mine = self.loop.time()
        if self.writing_since is None:  # a client that reads no ping either is dropped the same
            self.writing_since = mine
        try:
            if self.exchange is not None:
                self.exchange.streamed(frame)
            await self.resp.write(frame)
        except (ConnectionError, RuntimeError):  # gone, or the answer ended meanwhile: the relay sees it
            pass
        finally:
            if self.writing_since == mine:
                self.writing_since = None
            self.pinging = None

    def _check(self) -> None:
        if self.writing_since is not None and self.loop.time() - self.writing_since >= self.timeout:
            log.info("%s %s: the client read nothing for %gs; dropped", self.request.method, self.request.path,
                     self.timeout)
            if self.request.transport is not None:
                self.request.transport.abort()  # the pending write fails with a ConnectionError
            return
        self.handle = self.loop.call_later(self.timeout / 2, self._check)

    async def __call__(self, data: bytes | Iterable[bytes], eof: bool = False) -> None:
        """Write `data`: bytes, or blocks made one at a time (each written before the next is made)."""
        if self.handle is None:
            self.handle = self.loop.call_later(self.timeout / 2, self._check)
            if self.keep_alive is not None:
                self.pinger = self.loop.call_later(self.keep_alive[0], self._ping_due)
        if eof:
            self.ended = True
        try:
            if not isinstance(data, bytes):
                for block in data:
                    self.writing_since = self.last_write = self.loop.time()
                    if self.exchange is not None:
                        self.exchange.streamed(block)
                    await self.resp.write(block)
                if not eof:
                    return
                data = b""
            self.writing_since = self.last_write = self.loop.time()
            if self.exchange is not None and data:
                self.exchange.streamed(data)
            await (self.resp.write_eof(data) if eof else self.resp.write(data))
        finally:
            self.writing_since = None

    def close(self) -> None:
        self.ended = True
        for handle in (self.handle, self.pinger):
            if handle is not None:
                handle.cancel()


class _HeldHeaders(web.StreamResponse):
    """A stream's status line and headers go out with its first write (relay's start, at once), in one
    packet: sent alone by prepare(), they cost a write and a wake-up of the client on the way to
    the first event. (An aiohttp class attribute, as web.Response sets it; without it, they are
    sent by prepare() as before.)"""
    _send_headers_immediately = False


async def run_stream(request: web.Request, open_upstream: Awaitable[AsyncIterator[dict[str, Any]]],
                     writer: StreamWriter, headers: dict[str, str] | None = None,
                     on_end: Callable[[bool], Awaitable[None]] | None = None,
                     keep_alive: tuple[float, bytes] | None = None) -> web.StreamResponse:
    """Stream `open_upstream`'s chunks through `writer` as an HTTP response (SSE or a JSON array);
    `keep_alive`: (seconds, frame) written whenever the stream was quiet that long (_Sender)."""
    ctx = request.app[CONTEXT]
    resp = _HeldHeaders(headers={"content-type": writer.content_type, "cache-control": "no-cache",
                                 "x-accel-buffering": "no", **(headers or {})})
    send = _Sender(request, resp, ctx.limits.client_timeout, keep_alive)
    started = _Start(writer)
    chunks = await started.while_waiting(open_upstream)
    try:
        await resp.prepare(request)
    except BaseException:
        await _close(chunks, writer, on_end)
        raise
    try:
        if await relay(chunks, writer, send, on_end, ctx.in_flight, f"{request.method} {request.path}", started.take):
            await send(b"", eof=True)
        return resp
    except ConnectionError:
        return resp  # the client went away during the last write: nothing more can reach it
    finally:
        send.close()


class _Start:
    """The writer's opening events (Responses' created and in_progress each carry the whole response
    with its echoed tools), made while Gemini is working on the request rather than after its
    answer begins: they are on the way to the first event otherwise."""

    def __init__(self, writer: StreamWriter) -> None:
        self.writer = writer
        self.frames: Any = None
        self.error: Exception | None = None

    async def while_waiting(self, open_upstream: Awaitable[Any]) -> Any:
        # Called back once the request has gone out: the upstream's first wait is for Gemini's
        # headers (aiohttp writes a pooled connection's request without waiting, eager_start).
        handle = asyncio.get_running_loop().call_soon(self._make)
        try:
            return await open_upstream
        finally:
            handle.cancel()

    def _make(self) -> None:
        try:
            frames = self.writer.start()
            self.frames = frames if isinstance(frames, bytes) else list(frames)
        except Exception as e:  # raised by take(), in relay, where it reaches the client in its protocol
            self.error = e

    def take(self) -> Any:
        """The opening events: made early, or now (the upstream opened without a wait)."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        frames, self.frames = self.frames, None
        return self.writer.start() if frames is None else frames


async def relay(chunks: AsyncIterator[dict[str, Any]], writer: StreamWriter, send: Callable[[Any], Awaitable[None]],
                on_end: Callable[[bool], Awaitable[None]] | None, in_flight: Any, what: str,
                start: Callable[[], Any] | None = None) -> bool:
    """The pipeline itself, for any transport (`send` writes what the writer gives: SSE bytes, or a
    WebSocket's events). `on_end(True)` stores the turn once the answer is whole and before the client
    is told it ended well: if storing fails (the store is down, the turn too large), the client is told
    the answer failed. On any other end `on_end(False)` runs. False when the client went away.
    `start`: gives the writer's opening events (run_stream's, made while Gemini worked)."""
    ok = False
    try:
        try:
            await send(writer.start() if start is None else start())
            async for chunk in chunks:
                await send(writer.feed(checked(chunk)))
                if writer.done:
                    break
            await send(writer.finish())
            if not writer.failed and on_end is not None:
                stored, on_end = on_end, None
                await stored(True)
            await send(writer.end())
            ok = True
        except ProxyError as e:
            log.info("%s: stream failed: %s", what, e.message)
            exchange.failed(e)
            await send(writer.fail(e))
        except asyncio.CancelledError as e:  # a shutdown: the stream ends with its failure event
            await send(writer.fail(in_flight.absorb(e)))
        except ConnectionError as e:
            # The client went away: nothing can reach it. Not re-raised: the exception's traceback
            # and its context (asyncio's timeout frames) would keep this whole answer in a
            # reference cycle until the next full garbage collection.
            log.info("%s: the client went away (%s)", what, type(e).__name__)
            e.__traceback__ = e.__context__ = e.__cause__ = None
            return False
        except Exception as e:
            log.exception("stream failed on %s", what)
            exchange.failed(e)
            await send(writer.fail(ProxyError(INTERNAL, status=500, type="server_error", code="server_error")))
        return True
    finally:
        ok = ok and not writer.failed
        await _close(chunks, writer, on_end, ok)


async def _close(chunks: AsyncIterator[dict[str, Any]], writer: StreamWriter,
                 on_end: Callable[[bool], Awaitable[None]] | None, ok: bool = False) -> None:
    await chunks.aclose()  # type: ignore[attr-defined]
    malloc_tuning.trim_soon()  # a long answer's buffers are free now: give the pages back
    if not ok:
        metrics.stream_failed()
    if on_end is not None:  # not stored: the answer failed, or the client went away
        await on_end(False)
