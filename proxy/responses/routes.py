"""The Responses API over HTTP: `POST /v1/responses` (whole, SSE stream, or background), the stored
response's `GET`, `DELETE`, `cancel` and `input_items`, `POST /v1/responses/compact` and
`POST /v1/responses/input_tokens`. A `GET
/v1/responses` that asks for a WebSocket is websocket.py's."""

import asyncio
import logging
from typing import Any

from aiohttp import web

from proxy.errors import ProxyError
from proxy.responses import compact, websocket
from proxy.responses.compaction import as_items
from proxy.responses.turn import Turn, prepare_turn
from proxy.server import background
from proxy.server.answer_turn import answer_turn
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import read_json
from proxy.server.json_answer import json_answer
from proxy.server.translator_writer import sse_events
from proxy.store.base import StoredResponse

log = logging.getLogger(__name__)
TASKS = web.AppKey("response_tasks", dict)  # response id -> its background task (this process)
RUNNING = ("queued", "in_progress")  # a background response's statuses before it ends


async def create_response(request: web.Request) -> web.StreamResponse:
    sent = await read_json(request, shared_tools=True, history="input")
    turn = await prepare_turn(request, sent)
    if turn.req.background:
        return json_answer(await _start_background(request, turn), headers=turn.headers)
    if sent.get("generate") is False or not turn.generates:
        events = turn.without_generation()
        await turn.remember(True)
        if turn.req.stream:  # (Codex's compaction_trigger streams: its events, whole, as SSE)
            frames = sse_events(events)
            body = frames if isinstance(frames, bytes) else b"".join(frames)
            return web.Response(body=body, headers={**turn.headers, "cache-control": "no-cache"},
                                content_type="text/event-stream")
        return json_answer(turn.response, headers=turn.headers)
    return await answer_turn(request, turn.ready(bool(turn.req.stream)))


# -- background -------------------------------------------------------------------------------

async def _start_background(request: web.Request, turn: Turn) -> dict[str, Any]:
    """Store the response as queued, answer at once, and let a task finish it; any instance sharing
    the store can poll it, and cancel it (background.py keeps the lease and hears stop requests)."""
    ctx, rid = turn.ctx, turn.response["id"]
    turn.response["status"] = "queued"
    lease = ctx.limits.background_lease
    release = background.reserve(request)  # over the client's cap: a 429, nothing stored
    try:
        await background.claim(ctx.store, turn.session, rid, lease)
        await ctx.store.put_response(turn.session, _settled(turn, dict(turn.response)))
    except BaseException:
        release()
        raise
    tasks = request.app[TASKS]

    async def settle(response: dict[str, Any]) -> None:
        await ctx.store.put_response(turn.session, _settled(turn, response))

    async def run() -> None:
        try:
            turn.response["status"] = "in_progress"
            answer = await turn.run_whole()
            if answer["status"] == "failed":  # not stored by run_whole: its end is stored here
                background.failed(ProxyError((answer.get("error") or {}).get("message") or "the response failed",
                                             status=500))
                await settle(answer)
        except asyncio.CancelledError:
            if background.shut_down():  # not a client's cancel: the process stops
                error = background.shutdown_error()
                background.failed(error)
                await settle(_ended(turn.response, "failed", error))
            else:
                await settle(_ended(turn.response, "cancelled", None))
            raise
        except ProxyError as e:
            background.failed(e)
            await settle(_ended(turn.response, "failed", e))
        except Exception as e:
            log.exception("background response %s failed", rid)
            error = ProxyError("The proxy failed while running this response; see its log.", status=500)
            error.__cause__ = e
            background.failed(error)
            await settle(_ended(turn.response, "failed", error))
        finally:
            tasks.pop(rid, None)

    tasks[rid] = background.launch(request, ctx.store, turn.session, rid, run(), lease, ctx.recorder, release=release)
    return turn.response


def _ended(response: dict[str, Any], status: str, error: ProxyError | None) -> dict[str, Any]:
    code = "rate_limit_exceeded" if error and error.status == 429 else "server_error"
    return {**response, "status": status, "completed_at": None, "incomplete_details": None,
            "error": {"code": code, "message": error.message} if error else None}


def _settled(turn: Turn, response: dict[str, Any]) -> StoredResponse:
    """A background response as stored before its answer exists: no history yet (it cannot be continued)."""
    return StoredResponse(id=response["id"], response=response, contents=[], parent=turn.req.previous_response_id,
                          input=turn.input)


ABANDONED = ("The instance running this background response stopped before it finished (its lease ran out); "
             "create it again.")


async def _stored(request: web.Request) -> tuple[str, StoredResponse]:
    """The stored response; a background one left running by an instance that is gone is failed first."""
    ctx: Context = request.app[CONTEXT]
    rid = request.match_info["response_id"]
    session = session_of(request)
    stored = await ctx.store.get_response(session, rid)
    # An interaction's id, or an Anthropic thread's answer (anthropic/threads.py), is not a response's.
    if stored is None or "interaction" in stored.response or "anthropic_thread" in stored.response:
        raise ProxyError(f"No response found with id '{rid}'.", status=404, param="response_id",
                         type="invalid_request_error", code="not_found")
    if (stored.response.get("status") in RUNNING and rid not in request.app[TASKS]
            and not await background.lease_alive(ctx.store, session, rid)):
        failed = _ended(stored.response, "failed", ProxyError(ABANDONED, status=503))
        stored = StoredResponse(**{**vars(stored), "response": failed})
        await ctx.store.put_response(session, stored)
    return rid, stored


async def get_response(request: web.Request) -> web.Response:
    _, stored = await _stored(request)
    return json_answer(stored.response)


async def delete_response(request: web.Request) -> web.Response:
    rid, stored = await _stored(request)
    running = stored.response.get("status") in RUNNING
    await background.delete(request.app[CONTEXT].store, session_of(request), rid, running, request.app[TASKS])
    return web.json_response({"id": rid, "object": "response", "deleted": True})


async def cancel_response(request: web.Request) -> web.Response:
    rid, stored = await _stored(request)
    ctx: Context = request.app[CONTEXT]
    session = session_of(request)
    if not stored.response.get("background"):
        raise ProxyError(f"Response '{rid}' was not created with background: true; only a background response "
                         "can be cancelled.", param="response_id", code="not_cancellable")
    if stored.response.get("status") not in RUNNING:
        return json_answer(stored.response)  # already ended: cancelling it changes nothing
    task = request.app[TASKS].get(rid)
    if task is not None:
        task.cancel()
        await asyncio.wait([task])  # its cancelled state is stored when it ends
        _, stored = await _stored(request)
        return json_answer(stored.response)
    async def ended() -> StoredResponse | None:
        _, now = await _stored(request)  # an owner gone meanwhile: failed, as _stored says
        return now if now.response.get("status") not in RUNNING else None

    found = await background.cancel_elsewhere(ctx.store, session, rid, ctx.limits.background_lease, ended)
    if found is not None:
        return json_answer(found.response)
    raise ProxyError(f"Response '{rid}' runs on another instance, which has not confirmed the cancel yet; it will "
                     "stop at its next lease renewal. Poll it.", status=503, param="response_id",
                     code="cancel_pending", headers={"Retry-After": "1"})


async def input_items(request: web.Request) -> web.Response:
    """The response's input items, newest first by default (`order`, `limit`, `after`, `before`)."""
    _, stored = await _stored(request)
    items = as_items(stored.input or [], stored.id)
    query = request.query
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise ProxyError(f"Invalid value for 'order': '{order}'. Supported values are: 'asc' and 'desc'.",
                         param="order", code="invalid_value")
    try:
        limit = int(query.get("limit", "20"))
    except ValueError:
        limit = 0
    if not 1 <= limit <= 100:
        raise ProxyError("Invalid value for 'limit': it must be an integer from 1 to 100.", param="limit",
                         code="invalid_value")
    if order == "desc":
        items.reverse()
    ids = [i.get("id") for i in items]
    for bound in ("after", "before"):
        if bound in query:
            if query[bound] not in ids:
                raise ProxyError(f"No input item with id '{query[bound]}' in this response.", param=bound,
                                 code="invalid_value")
            at = ids.index(query[bound])
            items, ids = (items[at + 1:], ids[at + 1:]) if bound == "after" else (items[:at], ids[:at])
    page = items[:limit]
    return web.json_response({"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                              "last_id": page[-1]["id"] if page else None, "has_more": len(items) > limit})


async def input_tokens(request: web.Request) -> web.Response:
    """`POST /v1/responses/input_tokens`: what a create body would cost in input tokens, counted by
    Gemini's countTokens on the very request the proxy would send (history, tools, instructions)."""
    ctx: Context = request.app[CONTEXT]
    sent = await read_json(request, shared_tools=True)
    if isinstance(sent, dict):
        sent = {**sent, "store": False, "stream": False, "background": False}
    turn = await prepare_turn(request, sent)
    count = await ctx.count_tokens(turn.model, turn.body, api_key_of(request))
    return web.json_response({"object": "response.input_tokens", "input_tokens": count})


async def responses_root(request: web.Request) -> web.StreamResponse:
    """`GET /v1/responses`: only a WebSocket upgrade is served here."""
    if request.headers.get("upgrade", "").lower() == "websocket":
        return await websocket.serve(request)
    raise ProxyError("GET /v1/responses serves the Responses WebSocket only: send 'Upgrade: websocket', or POST "
                     "to create a response.", status=405, type="invalid_request_error",
                     headers={"Allow": "POST"})


def add_routes(app: web.Application) -> None:
    """Under `/v1`, and at the root too: a client whose base URL has no `/v1` (Codex's `base_url`
    without it) reaches the same routes."""
    app[TASKS] = {}
    for base in ("/v1", ""):
        app.router.add_post(f"{base}/responses", create_response)
        app.router.add_get(f"{base}/responses", responses_root)
        app.router.add_post(f"{base}/responses/compact", compact.compact_route)
        app.router.add_post(f"{base}/responses/input_tokens", input_tokens)
        app.router.add_get(f"{base}/responses/{{response_id}}", get_response)
        app.router.add_delete(f"{base}/responses/{{response_id}}", delete_response)
        app.router.add_post(f"{base}/responses/{{response_id}}/cancel", cancel_response)
        app.router.add_get(f"{base}/responses/{{response_id}}/input_items", input_items)
    websocket.add_shutdown(app)  # (background runs end with the requests: app.py's end_requests)
