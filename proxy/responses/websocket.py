"""The Responses API's WebSocket mode (`GET /v1/responses` with `Upgrade: websocket`; Codex CLI's
default transport, header `OpenAI-Beta: responses_websockets=2026-02-06`).

The client sends `response.create` messages (the create body plus `"type"`), one at a time; each
gets the same events the SSE stream has, one JSON text frame per event, through the same pipeline
(turn.py, server/stream.relay). A connection remembers its most recent response, so the next one
continues it by `previous_response_id` even with `store: false`; a continuation that fails evicts
it. A refusal is an `error` event with its HTTP status (`{"type": "error", "status", "error":
{type, code, message, param}}`, the shape Codex and the openai SDK read) and the socket stays
usable; a stream that fails after it started ends with `response.failed`, never a silent close.

Keys are checked on the upgrade request (the front middleware), so a refused client never gets a
socket. Limits, the front-end's own: a frame is at most its body limit (larger closes the socket
with 1009, "message too big"); a ping every `--client-timeout` seconds, and a peer that sends no
pong within half of that is dropped, and so is a peer that reads nothing for that long while an event
waits to be sent (server/write_deadline.py: the socket is aborted and its Gemini stream closed), as an
HTTP client that stops reading is; a connection with no request for IDLE_SECONDS is closed (1000,
"idle").
"""

import asyncio
import logging
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from proxy import fast_json, metrics
from proxy.errors import ProxyError
from proxy.journal import exchange
from proxy.responses.stream_writer import ResponsesWriter
from proxy.responses.turn import Recent, prepare_turn
from proxy.server import recording
from proxy.server.context import CONTEXT
from proxy.server.errors import parse_body
from proxy.server.stream import INTERNAL, relay
from proxy.server.write_deadline import WriteDeadline
from proxy.server.ws_masking import masked_only

log = logging.getLogger(__name__)

IDLE_SECONDS = 3600.0  # OpenAI ends a Responses WebSocket after 60 minutes; so does the proxy when idle
SOCKETS = web.AppKey("responses_sockets", set)
IGNORED = frozenset({"response.processed"})  # Codex's acknowledgement of a response it has handled


def error_event(e: ProxyError, stream_id: Any = None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "error", "status": e.status,
                             "error": {"type": e.type, "code": e.code, "message": e.message, "param": e.param}}
    if stream_id is not None:
        event["stream_id"] = stream_id
    return event


class _Socket:
    """A socket's state for a shutdown (busy while a response runs, told to close after it) and the
    deadline of its writes."""

    def __init__(self, ws: web.WebSocketResponse, deadline: WriteDeadline) -> None:
        self.ws, self.busy, self.closing = ws, False, False
        self.deadline = deadline


async def serve(request: web.Request) -> web.WebSocketResponse:
    ctx = request.app[CONTEXT]
    ws = web.WebSocketResponse(heartbeat=ctx.limits.client_timeout, max_msg_size=ctx.max_body, autoping=True)
    await ws.prepare(request)
    masked_only(request, ws)  # an unmasked client frame closes the socket with 1002 (RFC 6455 5.1)
    sock = _Socket(ws, WriteDeadline(request.transport, ctx.limits.client_timeout, "WS /v1/responses"))
    request.app[SOCKETS].add(sock)
    recent = Recent()
    try:
        while not ws.closed and not sock.closing:
            try:
                msg = await ws.receive(timeout=IDLE_SECONDS)
            except TimeoutError:
                await ws.close(code=WSCloseCode.OK, message=b"idle")
                break
            if msg.type == WSMsgType.TEXT:
                sock.busy = True
                ex = recording.begin_message(ctx.recorder, request, msg.data)  # each message, an exchange
                token = exchange.CURRENT.set(ex)
                answered: tuple[int, bool] | None = (499, False)  # (status, failed): the client went away
                try:
                    answered = await _message(request, sock, msg.data, recent)
                except ConnectionError:
                    raise
                except Exception as e:  # a bug: said on the socket in its protocol, which keeps serving
                    log.exception("responses websocket: a message failed")
                    exchange.failed(e)
                    answered = (500, False)
                    await _send(sock, [error_event(ProxyError(INTERNAL, status=500, type="server_error",
                                                            code="server_error"))])
                finally:
                    exchange.CURRENT.reset(token)
                    if ex is not None and answered is not None:
                        recording.end_message(ctx.recorder, ex, *answered)
                    sock.busy = False
            elif msg.type == WSMsgType.BINARY:
                await _send(sock, [error_event(ProxyError("Send response.create as a JSON text frame, not binary.",
                                                        code="invalid_frame"))])
            elif msg.type == WSMsgType.ERROR:
                log.info("responses websocket: %s", ws.exception())
                break
            else:  # CLOSE, CLOSING, CLOSED
                break
        if sock.closing:  # the front-end stops: the response that ran has ended (response.failed at worst)
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")
    except asyncio.CancelledError as e:  # the shutdown's grace ran out while the socket waited
        ctx.in_flight.absorb(e)
        await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")
    except ConnectionError as e:
        log.info("responses websocket: the client went away (%s)", type(e).__name__)
        e.__traceback__ = e.__context__ = e.__cause__ = None
    finally:
        sock.deadline.close()
        request.app[SOCKETS].discard(sock)
    return ws


async def _send(sock: _Socket, events: list[dict[str, Any]]) -> None:
    ex = exchange.CURRENT.get()
    for event in events:
        data = fast_json.dumps(event)
        if ex is not None:
            ex.streamed(data + b"\n")
        with sock.deadline.writing():
            await sock.ws.send_str(data.decode())


async def _message(request: web.Request, sock: _Socket, text: str, recent: Recent
                   ) -> tuple[int, bool] | None:
    """Answer one message: (the status of its error event, or 200; whether its answer ended with
    response.failed), or None for an acknowledgement (nothing to record)."""
    stream_id = None
    previous = None
    try:
        msg = await parse_body(text.encode("utf-8", "surrogatepass"), shared_tools=True)
        if not isinstance(msg, dict):
            raise ProxyError("A WebSocket message must be a JSON object with a 'type'.", param="type",
                             code="invalid_type")
        stream_id = msg.get("stream_id") if isinstance(msg.get("stream_id"), str) else None
        kind = msg.get("type")
        if not isinstance(kind, str):
            raise ProxyError("A WebSocket message needs a string 'type' ('response.create').", param="type",
                             code="invalid_type")
        if kind in IGNORED:
            metrics.child(metrics.WEBSOCKET_MESSAGES, kind).inc()
            return None
        if kind != "response.create":
            raise ProxyError(f"Unknown message type {kind!r}: this socket takes 'response.create'.", param="type",
                             code="invalid_value")
        sent = {k: v for k, v in msg.items() if k not in ("type", "stream_id")}
        previous = sent.get("previous_response_id")
        generate = sent.pop("generate", None)
        if sent.get("background"):
            raise ProxyError("background is not available over the WebSocket: POST /v1/responses instead.",
                             param="background", code="invalid_value")
        turn = await prepare_turn(request, sent, recent)
        metrics.child(metrics.WEBSOCKET_MESSAGES, kind).inc()
    except ProxyError as e:
        metrics.child(metrics.WEBSOCKET_MESSAGES, "invalid").inc()
        recent.evict(previous if isinstance(previous, str) else None)
        exchange.failed(e)
        await _send(sock, [error_event(e, stream_id)])
        return e.status, False

    async def send(events: list[dict[str, Any]]) -> None:
        if stream_id is not None:
            for event in events:
                event["stream_id"] = stream_id
        await _send(sock, events)

    try:
        if generate is False or not turn.generates:  # (a compaction_trigger: the compaction item alone)
            events = turn.without_generation()
            await turn.remember(True)  # a store that fails says so here, before anything is sent
            await send(events)
            return 200, False
        chunks = await turn.open_stream()
    except ProxyError as e:  # refused before anything started (Gemini, the store): the error, as over HTTP
        await turn.remember(False)
        exchange.failed(e)
        await _send(sock, [error_event(e, stream_id)])
        return e.status, False
    ctx = request.app[CONTEXT]
    writer = ResponsesWriter(turn.translator, frame=list)
    reached = await relay(chunks, writer, send, turn.remember, ctx.in_flight, "WS /v1/responses")
    return (200 if reached else 499), writer.failed


def add_shutdown(app: web.Application) -> None:
    """When the front-end stops, an idle socket is closed at once (1001, going away) and a busy one
    once its response has ended -- completed within the shutdown's grace, or `response.failed` when
    the grace runs out -- so a client reconnects elsewhere and never sees a silent cut."""
    app[SOCKETS] = set()

    async def close_sockets(_: web.Application) -> None:
        for sock in list(app[SOCKETS]):
            sock.closing = True
            if not sock.busy:
                await sock.ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")

    app.on_shutdown.append(close_sockets)
