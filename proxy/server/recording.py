"""The front-end's side of the journal: each request becomes an exchange (journal/), its client side
filled in here; the upstream wrappers fill in Gemini's side and the routes' decisions arrive as
`journal.exchange.note()` calls. The observe middleware (app.py) starts and ends it: outside the
error middleware, so it sees every answer as the client got it, errors rendered in their protocol.

On the request's path this only takes references (the raw body aiohttp read, the answer's headers
and body); everything derived from them is worked out once the answer is on its way
(Recorder.finish)."""

import time

from aiohttp import web

from proxy import metrics
from proxy.journal.exchange import Exchange, Json
from proxy.journal.recorder import Recorder
from proxy.server.auth import SCOPE

RAW_BODY = web.RequestKey("raw_body", bytes)  # the request's body once read_json parsed it (well-formed JSON)


def start(recorder: Recorder | None, request: web.Request, request_id: str, session: str | None
          ) -> Exchange | None:
    """The request's exchange, or None when nothing records it (the caller leaves out UNRECORDED paths)."""
    if recorder is None or not recorder.active:
        return None
    return recorder.begin("frontend", request.method, request.raw_path, request.raw_headers, request_id=request_id,
                          session=session)


def end(recorder: Recorder, ex: Exchange, request: web.Request, resp: web.StreamResponse | None, status: int,
        record: metrics.RequestRecord) -> None:
    """The request is over: its exchange is finished with the others that end about now (the answer
    is on its way; what the request and the answer hold is read then, by completed())."""
    ex.end = time.perf_counter()
    ex.status = status
    ex.complete = (completed, request, resp, record)
    recorder.finish_soon(ex)


def completed(ex: Exchange, request: web.Request, resp: web.StreamResponse | None,
              record: metrics.RequestRecord) -> None:
    ex.scope = request.get(SCOPE, "")
    ex.client_model = record.client_model or None
    raw = request.get(RAW_BODY)
    ex.request_body = Json(raw, exact=True) if raw is not None else None  # as aiohttp read it: its own size
    if resp is not None:
        ex.answer_headers = resp.headers
        if isinstance(resp, web.Response) and isinstance(resp.body, bytes):
            ex.answer_body = resp.body  # as sent (ring.body_value embeds it as JSON once it checks it is)
    if record.failed and ex.error is None:
        ex.error = {"message": "the stream ended with its protocol's failure event"}


__all__ = ["RAW_BODY", "completed", "end", "start"]
