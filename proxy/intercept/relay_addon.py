"""`Relay`: the addon side of relay mode (relay.py has the broker and the front-end's upstream).

A request whose session is an open relay turn has its body swapped for the turn's real one; the
real answer goes chunk by chunk to the waiting front-end request, and the app gets a benign STOP.
The app's follow-ups within the turn get a fake STOP and never reach Google."""

import json
import logging
from typing import Any

from mitmproxy import http

from proxy.intercept.capture_calls import unwrap
from proxy.intercept.flow_selection import META, FlowState, GeminiRequest, select
from proxy.intercept.options import Options
from proxy.intercept.relay import RelayBroker, RelayTurn, fake_stop
from proxy.wire.sse import SSEDecoder

log = logging.getLogger(__name__)


class Relay:
    def __init__(self, broker: RelayBroker, options: Options) -> None:
        self.broker, self.options = broker, options

    def request(self, flow: http.HTTPFlow) -> None:
        o = self.options.flow
        req = select(flow, o.intercept_hosts, o.session_header, o.default_session, o.placeholder)
        turn = self.broker.get(req.session) if req is not None else None
        if req is None or turn is None:
            return
        sse = flow.request.query.get("alt") == "sse"
        target = req.target
        if turn.state != "waiting":
            flow.response = http.Response.make(
                200, fake_stop(o.placeholder, sse, target.kind == "cloudcode", target.stream and not sse),
                {"content-type": "text/event-stream" if sse else "application/json"})
            return
        turn.state = "forwarded"
        self._swap(flow, req, turn)
        flow.metadata[META] = FlowState(target, turn.model, turn.marker, relay=turn)

    @staticmethod
    def _swap(flow: http.HTTPFlow, req: GeminiRequest, turn: RelayTurn) -> None:
        """Keep what only the app can know (Cloud Code's session id, safety settings); the rest is the turn's."""
        kept = {k: v for k, v in req.inner.items() if k in ("sessionId", "safetySettings", "labels")}
        real = {**kept, **turn.body}
        if req.target.kind == "cloudcode":
            body: dict[str, Any] = {**req.body, "model": turn.model, "request": real}
        else:
            body = real
            if req.target.model and req.target.model != turn.model:
                flow.request.path = flow.request.path.replace(f"/{req.target.model}:", f"/{turn.model}:", 1)
        flow.request.set_content(json.dumps(body, ensure_ascii=False).encode())
        flow.request.headers["accept-encoding"] = "identity"

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        state: FlowState | None = flow.metadata.get(META)
        if state is None or state.relay is None or flow.response is None or flow.response.status_code != 200:
            return
        if "text/event-stream" in flow.response.headers.get("content-type", ""):
            flow.response.headers.pop("content-length", None)
            flow.response.stream = self._tap(state, state.relay)

    def _tap(self, state: FlowState, turn: RelayTurn) -> Any:
        """Stream callable: real chunks go to the waiting front-end request, the app gets a fake STOP."""
        decoder, wrapped = SSEDecoder(), state.target.kind == "cloudcode"

        def tap(data: bytes) -> bytes | list[bytes]:
            try:
                for payload in (decoder.feed(data) if data else decoder.close()):
                    turn.push("chunk", unwrap(json.loads(payload)))
            except Exception:  # never raise inside mitmproxy's stream machinery
                log.exception("relay tap")
            if data:
                return []  # nothing for the app yet (b"" would be an empty chunk: end of body in HTTP/1)
            turn.push("end")
            turn.state = "done"
            return fake_stop(self.options.flow.placeholder, True, wrapped)

        return tap

    def response(self, flow: http.HTTPFlow) -> None:
        state: FlowState | None = flow.metadata.get(META)
        if state is None or state.relay is None or flow.response is None:
            return
        del flow.metadata[META]
        turn = state.relay
        if flow.response.stream:  # an SSE answer: the tap already handed everything over
            return
        sse = flow.request.query.get("alt") == "sse"
        content = flow.response.get_content(strict=False) or b""
        if flow.response.status_code != 200:
            turn.push("error", (flow.response.status_code, _error_of(flow.response.status_code, content)))
        else:
            try:
                data = json.loads(content)
                for chunk in data if isinstance(data, list) else [data]:
                    turn.push("chunk", unwrap(chunk))
            except (json.JSONDecodeError, RecursionError):
                turn.push("error", (502, {"code": 502, "message": "unreadable answer from Gemini"}))
            turn.push("end")
        turn.state = "done"
        wrapped, stream_json = state.target.kind == "cloudcode", state.target.stream and not sse
        flow.response = http.Response.make(200, fake_stop(self.options.flow.placeholder, sse, wrapped, stream_json),
                                           {"content-type": "text/event-stream" if sse else "application/json"})

    def error(self, flow: http.HTTPFlow) -> None:
        state: FlowState | None = flow.metadata.pop(META, None)
        if state is not None and state.relay is not None and state.relay.state != "done":
            state.relay.push("error", (502, {"code": 502, "status": "UNAVAILABLE",
                                             "message": f"the relayed request failed: {flow.error}"}))
            state.relay.state = "done"


def _error_of(status: int, content: bytes) -> dict[str, Any]:
    try:
        err = json.loads(content).get("error") or {}
    except (json.JSONDecodeError, AttributeError, RecursionError):
        err = {}
    return err if isinstance(err, dict) and err else {"code": status, "message": content[:500].decode(errors="replace")}
