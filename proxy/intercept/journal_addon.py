"""`JournalStart` and `JournalEnd`: intercepted Gemini flows in the journal (journal/), as the app sent
them, as they went to Gemini after the session's rewrite, and as they came back.

Two addons because mitmproxy calls each hook on the addons in order: the start sees a request before
any rewrite, the end sees it as it leaves and the answer as the app gets it. Only flows the rewrite
owns (Gemini generate calls on the intercepted hosts) and the account quota calls it reads
(quota.py) are recorded; the rest pass untouched."""

from time import perf_counter
from typing import Any

import orjson
from mitmproxy import http

from proxy.intercept import headers
from proxy.intercept.flow_selection import META, REFUSED, FlowState
from proxy.intercept.quota import QUOTA, quota_target
from proxy.journal.exchange import BODY_CAP, CURRENT, Exchange
from proxy.journal.recorder import Recorder
from proxy.server.auth import SCOPED_NAME
from proxy.wire.gemini import error_of
from proxy.wire.sse import SSEDecoder

EXCHANGE = "gtp_journal_exchange"
STATE = "gtp_journal_state"


class JournalStart:
    """The flow's exchange begins before the other addons see the request, and is the current one
    (exchange.CURRENT) while they handle each of its hooks: the rewrite's and the parsers' decisions
    (history repairs, signatures, calls parsed from text) are noted on it. mitmproxy runs each hook
    in a task of its own (proxy/server.py, hook_task), so the current exchange ends with the hook."""

    def __init__(self, recorder: "RecorderRef") -> None:
        self.recorder = recorder

    def request(self, flow: http.HTTPFlow) -> None:
        recorder = self.recorder.get()
        if recorder is not None and flow.response is None:
            # References, not copies: a rewrite replaces the content object rather than changing it.
            # The headers' pairs as read (a tuple: a change to the headers makes a new one).
            ex = recorder.begin("mitm", flow.request.method, _url(flow.request), flow.request.headers.fields,
                                protocol="gemini")
            ex.request_body = flow.request.raw_content  # as the app sent it (JournalEnd compares)
            flow.metadata[EXCHANGE] = ex
            CURRENT.set(ex)

    def _current(self, flow: http.HTTPFlow) -> None:
        CURRENT.set(flow.metadata.get(EXCHANGE))

    responseheaders = response = error = _current


class JournalEnd:
    def __init__(self, recorder: "RecorderRef") -> None:
        self.recorder = recorder

    def request(self, flow: http.HTTPFlow) -> None:
        recorder = self.recorder.get()
        ex: Exchange | None = flow.metadata.pop(EXCHANGE, None)
        state: FlowState | None = flow.metadata.get(META)
        refused: FlowState | None = flow.metadata.pop(REFUSED, None)  # answered by the proxy: nothing sent
        state = state or refused or _quota_state(flow)
        if recorder is None or ex is None or state is None or state.relay is not None:
            return  # not a flow the rewrite owns (or the relay's, which the front-end records): not kept
        ex.session, ex.client_model = state.session, state.model
        if state.session and SCOPED_NAME.match(state.session):
            ex.scope = state.session.split(":", 1)[0]  # a keyed client's session: that client's exchange
        if refused is not None and flow.response is not None:  # kept with the refusal (its error: the
            flow.metadata[EXCHANGE], flow.metadata[STATE] = ex, state  # rewrite's) by the response hook
            return
        sent = flow.request.raw_content
        ex.upstream(state.model, sent, stream=state.target.stream)  # its tools' names are read from it when read
        if sent is not ex.request_body:
            ex.note("rewrite", f"the request was rewritten for session {state.session!r}: the session's tools and "
                               "history went to Gemini (compare the two request bodies)")
        flow.metadata[EXCHANGE], flow.metadata[STATE] = ex, state

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        ex: Exchange | None = flow.metadata.get(EXCHANGE)
        if ex is None or flow.response is None or not ex.upstreams:
            return
        call = ex.upstreams[-1]
        call.first_byte = call.last_byte = perf_counter()
        call.attempts.append({"start": call.start, "end": call.first_byte, "status": flow.response.status_code,
                              "key": None})
        before = flow.response.stream
        if callable(before):
            decoder = SSEDecoder()

            def tee(data: bytes) -> Any:
                token = CURRENT.set(ex)  # called by mitmproxy's connection, outside any hook
                try:
                    out = before(data)
                finally:
                    CURRENT.reset(token)
                if data:
                    ex.streamed(data)
                    call.last_byte = perf_counter()
                    for payload in decoder.feed(data):
                        chunk = _parsed(payload.encode())
                        if chunk is not None:
                            call.chunk(_inner(chunk, flow.metadata.get(STATE)))
                return out
            flow.response.stream = tee

    def response(self, flow: http.HTTPFlow) -> None:
        self._finish(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        ex: Exchange | None = flow.metadata.get(EXCHANGE)
        if ex is not None and flow.error is not None:
            ex.error = {"message": flow.error.msg}
        self._finish(flow)

    def done(self) -> None:
        """mitmdump stops: the exchanges finish_later() holds are kept (and shared) now."""
        recorder = self.recorder.get()
        if recorder is not None:
            recorder.finish_pending()

    def _finish(self, flow: http.HTTPFlow) -> None:
        ex: Exchange | None = flow.metadata.pop(EXCHANGE, None)
        state: FlowState | None = flow.metadata.pop(STATE, None)
        recorder = self.recorder.get()
        if ex is None or recorder is None:
            return
        call = ex.upstreams[-1] if ex.upstreams else None  # (none: the proxy refused it)
        if flow.response is not None:
            ex.status = flow.response.status_code
            ex.answer_headers = flow.response.headers.fields
            if not flow.response.stream:
                body = headers.content(flow.response) or b""
                ex.answer_body = body[: BODY_CAP + 1]
                if ex.status >= 400 and ex.error is None:  # Gemini's refusal, as the app got it: its message
                    ex.error = {"message": _message(body), "status": ex.status}
                if call is not None:
                    call.answer = ex.answer_body  # learnt from (calls, usage) when read
                    if len(body) > BODY_CAP:  # only its head is kept: learnt from now, whole
                        call.learn(_inner(_parsed(body), state))
            if call is not None:
                call.last_byte = perf_counter()
        if state is not None and state.capture.calls:
            ex.note("capture", f"captured {len(state.capture.calls)} call(s) for session {state.session!r}",
                    calls=[getattr(c, "name", None) for c in state.capture.calls][:50])
        recorder.finish_later(ex)


# The URLs of requests seen, by what mitmproxy makes them of (Request.url): an app sends a few over and
# over, and a lookup costs a fraction of making one on a flow whose code and data the CPU's caches no
# longer hold, which at an app's pace is every flow (issue 62). A path that may hold a key is never kept
# here. Full, it stops growing.
_URLS: dict[tuple[bytes, bytes, str, int, bytes], str] = {}
_URLS_MAX = 1024


def _url(request: http.Request) -> str:
    d = request.data
    key = (d.method, d.scheme, d.host, d.port, d.path)
    found = _URLS.get(key)
    if found is None:
        found = request.url
        if len(_URLS) < _URLS_MAX and b"key=" not in d.path:
            _URLS[key] = found
    return found


def _quota_state(flow: http.HTTPFlow) -> FlowState | None:
    """An account quota call (intercept/quota.py): kept too, with what it reported."""
    kind = flow.metadata.get(QUOTA)
    return FlowState(quota_target(kind), "", None) if kind else None


class RecorderRef:
    """The recorder the options made (they may change it at run time); None when nothing records."""

    def __init__(self) -> None:
        self.recorder: Recorder | None = None

    def get(self) -> Recorder | None:
        r = self.recorder
        return r if r is not None and r.active else None


def _parsed(raw: bytes | None) -> Any:
    try:
        return orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return None


def _message(body: bytes | None) -> str:
    """A refusal's message (Gemini's error shape, the proxy's too: intercept/refusal.py)."""
    error = error_of(_parsed(body))
    return str(error.get("message")) if error is not None else "an error without a message"


def _inner(doc: Any, state: FlowState | None) -> Any:
    """Cloud Code wraps the Gemini request and each answer in {"request": ...} / {"response": ...}."""
    if isinstance(doc, dict) and state is not None and state.target.kind == "cloudcode":
        return doc.get("request") or doc.get("response") or doc
    return doc
