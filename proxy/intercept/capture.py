"""`Capture`: tap an owned flow's answer for functionCall parts as it streams through untouched
(SSE) or whole (JSON), and record them as the session's next round."""

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import msgspec
from mitmproxy import http

from proxy import fast_json, metrics
from proxy.errors import ProxyError
from proxy.intercept import headers
from proxy.intercept.capture_calls import SSETap
from proxy.intercept.flow_selection import META, FlowState
from proxy.intercept.refusal import gemini_error_response
from proxy.session.session_tools import ToolRound
from proxy.store.base import SessionStore

log = logging.getLogger(__name__)


async def record_round(store: SessionStore, flow: http.HTTPFlow, session: str, rnd: ToolRound) -> bool:
    """Keep a captured round. When the store cannot, the app must not believe its calls are known:
    a whole answer becomes Gemini's 503 (the app retries); a stream already passed is logged loudly
    (its placeholder turn will be refused later, never rewritten wrongly)."""
    try:
        await store.add_round(session, rnd)
        metrics.child(metrics.TOOL_CALLS, "intercepted").inc(len(rnd.calls))
        return True
    except ProxyError as e:
        log.error("could not keep %d captured call(s) of session %s: %s", len(rnd.calls), session, e.message)
        if flow.response is not None and not flow.response.stream:
            flow.response = gemini_error_response(e)
        return False


def _after(first: Callable[[bytes], Any], tap: SSETap) -> Callable[[bytes], Any]:
    """The tap behind an earlier rewriter (TextCalls): it reads what the app receives. mitmproxy
    calls a stream callable with b"" at the end; a rewriter may answer a list (`[]`: nothing yet)."""
    def run(data: bytes) -> Any:
        out = first(data)
        out = out if isinstance(out, bytes) else b"".join(out)
        if data:
            return tap(out) if out else []
        tail = tap(out) if out else b""
        tap(b"")
        return tail
    return run


def may_call(body: bytes) -> bool:
    """Whether a whole answer may hold a functionCall part (else walking its parts finds nothing):
    it names one, or it escapes characters (a key may be written with \\u escapes)."""
    return b"functionCall" in body or b"\\u" in body


_SPAN = msgspec.json.Decoder(msgspec.Raw)


def readable(body: bytes) -> None:
    """Raise ValueError when the answer is not JSON (fast_json.loads's verdict). msgspec reads it as one
    span without making its objects: on an answer the CPU's caches no longer hold, a third of a parse
    (issue 62). What msgspec refuses (a lone surrogate's escape, NaN) the full parse judges."""
    try:
        _SPAN.decode(body)
    except msgspec.DecodeError:
        fast_json.loads(body)


class Capture:
    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        state: FlowState | None = flow.metadata.get(META)
        if state is None or state.relay is not None or flow.response is None or flow.response.status_code != 200:
            return
        if "text/event-stream" in (headers.get(flow.response.headers, b"content-type") or ""):
            tap, before = SSETap(state.capture), flow.response.stream
            flow.response.stream = _after(before, tap) if callable(before) else tap

    async def response(self, flow: http.HTTPFlow) -> None:
        state: FlowState | None = flow.metadata.get(META)
        if state is None or state.relay is not None or flow.response is None:
            return
        del flow.metadata[META]
        if flow.response.status_code != 200:
            return
        if not flow.response.stream:
            body = headers.content(flow.response) or b""
            try:
                if may_call(body):
                    state.capture.feed_body(body)
                else:  # nothing to capture, but an unreadable answer is told all the same
                    readable(body)
            except (json.JSONDecodeError, UnicodeDecodeError, ValueError, RecursionError):
                log.warning("could not read Gemini's answer on %s", flow.request.path)
        if state.capture.calls and state.session:
            calls = [replace(c, model=state.model) if state.model else c for c in state.capture.calls]
            if not await record_round(self.store, flow, state.session, ToolRound(calls)):  # (model_bound.py)
                return
            log.info("captured %d function call(s) for session %s", len(state.capture.calls), state.session)
