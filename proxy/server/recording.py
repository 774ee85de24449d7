"""The front-end's side of the journal: each request becomes an exchange (journal/), its client side
filled in here; the upstream wrappers fill in Gemini's side and the routes' decisions arrive as
`journal.exchange.note()` calls. The front middleware (front/app.py) starts and ends it: outside the
error rendering (errors.answered), so it sees every answer as the client got it, errors rendered in their protocol.

On the request's path this only takes references: the client's scope and the raw body aiohttp read
are set on the exchange where they become known (auth.admit, errors.read_json), the answer's
headers and body once the answer is on its way (Recorder.finish), with everything derived from them."""

import time

from aiohttp import web

from proxy import ids, metrics
from proxy.journal import exchange
from proxy.journal.exchange import Exchange
from proxy.journal.recorder import Recorder

# The error of an answer that ended with its protocol's failure event after it started (its 200 stays).
STREAM_FAILED = "the stream ended with its protocol's failure event"


def start(recorder: Recorder | None, request: web.Request, request_id: str, session: str | None
          ) -> Exchange | None:
    """The request's exchange, or None when nothing records it (the caller leaves out UNRECORDED paths)."""
    if recorder is None or not recorder.active:
        return None
    # Recorder.begin without its call: this is every request's path.
    return Exchange(ids.exchange_number(), "frontend", request.method, request.raw_path, request.raw_headers,
                    request_id, session)


def end(recorder: Recorder, ex: Exchange, request: web.Request, resp: web.StreamResponse | None, status: int,
        record: metrics.RequestRecord) -> None:
    """The request is over: its exchange is finished with the others that end about now (the answer
    is on its way; what the answer holds is read then, by completed())."""
    ex.end = time.perf_counter()
    ex.status = status
    ex.complete = (completed, resp, record)
    recorder.finish_soon(ex)


def begin_run(recorder: Recorder | None, name: str) -> Exchange | None:
    """A background run's own exchange (server/background.py), begun in the request that starts it: the
    run calls Gemini after that request's exchange is finished, and a finished exchange is kept as it
    was (kept.seal). It carries the request's client side; each exchange names the other in a note.
    None when nothing records the request."""
    parent = exchange.CURRENT.get()
    if recorder is None or parent is None:
        return None
    run = Exchange(ids.exchange_number(), "background", parent.method, parent.path, parent.request_headers,
                   parent.request_id, parent.session, parent.protocol, parent.scope, _client_model())
    run.request_body, run.secrets = parent.request_body, parent.secrets
    run.note("background", f"the run of {name}, started by exchange {parent.name}", started_by=parent.name)
    parent.note("background", f"{name} runs on after this answer: exchange {run.name} records its upstream calls",
                run=run.name)
    return run


def end_run(recorder: Recorder, run: Exchange, cancelled: bool) -> None:
    """The run is over: its exchange is finished. Its status is what a client polling the run learns:
    200 when it completed, the error's status when it failed, 499 when it was cancelled."""
    run.end = time.perf_counter()
    if cancelled and run.error is None:
        run.error = {"message": "the run was cancelled before it ended", "status": 499, "type": "cancelled"}
        run.note("error", run.error["message"])
    run.status = 200 if run.error is None else run.error.get("status") or 500
    recorder.finish_soon(run)


def begin_message(recorder: Recorder | None, request: web.Request, text: str) -> Exchange | None:
    """One message of a WebSocket (the Responses API's) and its answer, an exchange of its own: a
    socket lives for an hour, and its exchange (the upgrade's, 101) ends only when it closes. Its
    request is the message as received; its answer the events sent for it (Exchange.streamed, one
    per line). None when nothing records the socket."""
    socket = exchange.CURRENT.get()
    if recorder is None or socket is None:
        return None
    ex = Exchange(ids.exchange_number(), "frontend", "WS", request.raw_path, request.raw_headers, socket.request_id,
                  socket.session, socket.protocol, socket.scope)
    ex.request_body = text.encode("utf-8", "surrogatepass")
    return ex


def end_message(recorder: Recorder, ex: Exchange, status: int, failed: bool) -> None:
    """The message has its answer: `status` is an error event's (or 200), `failed` an answer that ended
    with response.failed."""
    ex.end = time.perf_counter()
    ex.status = status
    ex.client_model = _client_model()
    if failed and ex.error is None:
        ex.error = {"message": STREAM_FAILED}
    recorder.finish_soon(ex)


def completed(ex: Exchange, resp: web.StreamResponse | None, record: metrics.RequestRecord) -> None:
    ex.client_model = record.client_model or None
    if resp is not None:
        ex.answer_headers = resp.headers
        body = resp.body if isinstance(resp, web.Response) else None
        if type(body) is bytes:
            ex.answer_body = body  # as sent (ring.body_value embeds it as JSON once it checks it is)
    if record.failed and ex.error is None:
        ex.error = {"message": STREAM_FAILED}


def _client_model() -> str | None:
    """The model the client asked for, as the request's metrics record has it (context.py sets it)."""
    record = metrics.CURRENT.get()
    return record.client_model or None if record is not None else None


__all__ = ["begin_message", "begin_run", "completed", "end", "end_message", "end_run", "start"]
