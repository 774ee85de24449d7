"""The front-end's side of the journal: each request becomes an exchange (journal/), its client side
filled in here; the upstream wrappers fill in Gemini's side and the routes' decisions arrive as
`journal.exchange.note()` calls. Inside the observe middleware (request id, session) and outside the
error middleware, so it sees every answer as the client got it, errors rendered in their protocol."""

import asyncio
import time
from typing import Any

from aiohttp import web

from proxy import metrics
from proxy.journal.exchange import CURRENT, Json
from proxy.journal.recorder import UNRECORDED
from proxy.logs import REQUEST_ID, SESSION_ID
from proxy.server.auth import SCOPE, presented_key
from proxy.server.context import CONTEXT

RAW_BODY = web.RequestKey("raw_body", bytes)  # the request's body once read_json parsed it (well-formed JSON)


@web.middleware
async def record_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    recorder = request.app[CONTEXT].recorder
    if recorder is None or not recorder.active or request.path.startswith(UNRECORDED):
        return await handler(request)
    ex = recorder.begin("frontend", request.method, request.path_qs, request.headers,
                        secrets=[presented_key(request)], request_id=REQUEST_ID.get(), session=SESSION_ID.get())
    token = CURRENT.set(ex)
    status, resp = 500, None
    try:
        resp = await handler(request)
        status = resp.status
        return resp
    except web.HTTPException as e:
        status = e.status
        raise
    finally:
        CURRENT.reset(token)
        record = metrics.CURRENT.get()
        ex.status = status
        ex.scope = request.get(SCOPE, "")
        ex.client_model = (record.client_model if record else None) or None
        raw = request.get(RAW_BODY)
        ex.request_body = Json(raw) if raw is not None else None
        if resp is not None:
            ex.answer_headers = {k.lower(): v for k, v in resp.headers.items() if k.lower() != "set-cookie"}
            if isinstance(resp, web.Response) and isinstance(resp.body, bytes):
                # The front-end's own JSON answers are well formed: embedded without another parse.
                json_answer = "json" in resp.headers.get("content-type", "") and resp.body[:1] in (b"{", b"[")
                ex.answer_body = Json(resp.body) if json_answer else resp.body
        if record is not None and record.failed and ex.error is None:
            ex.error = {"message": "the stream ended with its protocol's failure event"}
        ex.end = time.perf_counter()
        # Kept and exported once the answer is on its way: the client never waits on the journal.
        asyncio.get_running_loop().call_soon(recorder.finish, ex)
