"""`InteractionsTraffic`: an app's Interactions API calls (`POST /{version}/interactions` on the
Gemini hosts) get the bound session's tools, their placeholder steps rewritten with the captured
calls and the results the front-end recorded, and their function_call steps captured from the JSON
answer or from the SSE stream as it passes through (never buffered, bytes unchanged).

Placeholders, as for generateContent (placeholders.py): a `model_output` step that is only the
placeholder text stands for a captured round (its calls, then their results); with
`previous_interaction_id` (the calls are in Google's stored interaction), a `user_input` step that
is only the placeholder stands for the latest round's results. No round to put there is a refusal.
"""

import json
import logging
from typing import Any

from mitmproxy import http

from proxy import fast_json
from proxy.errors import ProxyError
from proxy.intercept.capture import record_round
from proxy.intercept.flow_selection import destination
from proxy.intercept.options import FlowOptions, Options
from proxy.intercept.refusal import gemini_error_response
from proxy.pattern_rules import matches
from proxy.schema.gemini_to_json_schema import gemini_to_json_schema
from proxy.session.session_tools import ToolContext, ToolRound
from proxy.signatures.call_record import CallRecord
from proxy.store.base import SessionStore
from proxy.upstream.interactions.request import generation_of
from proxy.wire.interactions import StepAssembler, UnreadableArguments
from proxy.wire.sse import SSEDecoder

log = logging.getLogger(__name__)
STATE = "gemini_tool_proxy.interaction"
CREATE_PATHS = frozenset(f"/{v}/interactions" for v in ("v1", "v1beta", "v1alpha"))


class StepCapture:
    """function_call steps of an interaction (whole, or from its events), each with the signature
    of the thought step before it."""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []
        self._signature: str | None = None
        self._assembler = StepAssembler()

    def step(self, step: dict[str, Any]) -> None:
        kind = step.get("type")
        if kind == "thought":
            self._signature = step.get("signature") or self._signature
        elif kind == "function_call" and isinstance(step.get("name"), str) and isinstance(step.get("id"), str):
            args = step.get("arguments") if isinstance(step.get("arguments"), dict) else {}
            self.calls.append(CallRecord(step["id"], step["name"], step["name"], step["id"], self._signature, args))
            self._signature = None
        elif kind == "model_output":
            self._signature = None

    def interaction(self, body: dict[str, Any]) -> None:
        for step in body.get("steps") or []:
            if isinstance(step, dict):
                self.step(step)

    def event(self, event: dict[str, Any]) -> None:
        kind, index = event.get("event_type"), event.get("index")
        if kind == "step.start" and isinstance(event.get("step"), dict):
            self._assembler.start(index, event["step"])
        elif kind == "step.delta" and isinstance(event.get("delta"), dict):
            self._assembler.delta(index, event["delta"])
        elif kind == "step.stop":
            try:
                step = self._assembler.stop(index)
            except UnreadableArguments as e:
                log.warning("%s", e)
                step = e.step
            if step is not None:
                self.step(step)


class EventTap:
    """A mitmproxy stream callable: bytes pass unchanged, events are read on the side; never raises."""

    def __init__(self, capture: StepCapture) -> None:
        self.capture, self._decoder, self._broken = capture, SSEDecoder(), False

    def __call__(self, data: bytes) -> bytes:
        if self._broken:
            return data
        try:
            for payload in self._decoder.feed(data) if data else self._decoder.close():
                if payload.strip() != "[DONE]":
                    event = json.loads(payload)
                    if isinstance(event, dict):
                        self.capture.event(event)
        except Exception:
            self._broken = True
            log.exception("Interactions tap stopped; the stream still passes through")
        return data


def session_tools(tools: list[dict[str, Any]] | None, tctx: ToolContext, merge: bool) -> list[dict[str, Any]]:
    """The session's declarations as Interactions function tools, instead of the app's or with them."""
    mine = []
    for d in tctx.declarations:
        fn: dict[str, Any] = {"type": "function", "name": d["name"]}
        if d.get("description"):
            fn["description"] = d["description"]
        params = d.get("parametersJsonSchema")
        if params is None and d.get("parameters") is not None:
            params = gemini_to_json_schema(d["parameters"])
        if params is not None:
            fn["parameters"] = params
        mine.append(fn)
    if not merge:
        return mine
    names = {t["name"] for t in mine}
    return [t for t in tools or [] if not (t.get("type") == "function" and t.get("name") in names)] + mine


def _only_text(step: dict[str, Any], kind: str, text: str) -> bool:
    content = step.get("content") or []
    return (step.get("type") == kind and bool(content)
            and all(isinstance(c, dict) and c.get("type") == "text" for c in content)
            and "".join(c.get("text", "") for c in content).strip() == text)


def _results(rnd: ToolRound) -> list[dict[str, Any]]:
    out = []
    for call in rnd.calls:
        if call.call_id not in rnd.results:
            raise ProxyError(f"No tool output found for function call {call.call_id} ({call.name}); send it before "
                             "the next turn.", param="input")
        out.append({"type": "function_result", "call_id": call.gemini_id or call.call_id, "name": call.gemini_name,
                    "result": rnd.results[call.call_id]})
    return out


def _calls(rnd: ToolRound) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for call in rnd.calls:
        if call.signature:
            out.append({"type": "thought", "signature": call.signature})
        out.append({"type": "function_call", "id": call.gemini_id or call.call_id, "name": call.gemini_name,
                    "arguments": call.args or {}})
    return out


def placeholder_steps(steps: list[Any], placeholder: str, chained: bool) -> list[int]:
    """Positions of the steps that stand for captured rounds."""
    return [i for i, s in enumerate(steps) if isinstance(s, dict) and (
        _only_text(s, "model_output", placeholder) or (chained and _only_text(s, "user_input", placeholder)))]


def rewrite_steps(steps: list[Any], rounds: list[ToolRound], placeholder: str, chained: bool) -> list[Any]:
    """Placeholder steps -> the captured rounds (the latest placeholders get the latest rounds)."""
    marks = placeholder_steps(steps, placeholder, chained)
    if not marks:
        return steps
    usable = [r for r in rounds if r.calls]
    if len(usable) < len(marks):
        raise ProxyError("Tool results were provided, but no captured function call history was available for "
                         "replay. Refusing to forward a malformed tool-result turn.")
    aligned = dict(zip(marks, usable[len(usable) - len(marks):], strict=True))
    out: list[Any] = []
    for i, step in enumerate(steps):
        if i in aligned:
            out += (_calls(aligned[i]) if step["type"] == "model_output" else []) + _results(aligned[i])
        else:
            out.append(step)
    return out


class InteractionsTraffic:
    def __init__(self, store: SessionStore, options: Options) -> None:
        self.store, self.options = store, options

    async def request(self, flow: http.HTTPFlow) -> None:
        if flow.response or flow.error or not flow.live or flow.request.method != "POST":
            return
        if flow.request.path.split("?", 1)[0] not in CREATE_PATHS:
            return
        host = destination(flow)
        o = self.options.flow
        if host is None or not matches(host, o.intercept_hosts):
            return
        try:
            body = json.loads(flow.request.get_content(strict=False) or b"")
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError, RecursionError):
            return  # Google will answer it in its own words
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return  # agents and odd shapes pass through
        session = flow.request.headers.pop(o.session_header, None) or o.default_session
        steps = body.get("input")
        if isinstance(steps, str):
            steps = [{"type": "user_input", "content": [{"type": "text", "text": steps}]}]
        needed = len(placeholder_steps(steps, o.placeholder, bool(body.get(
            "previous_interaction_id")))) if isinstance(steps, list) else 0
        try:
            tctx = await self.store.get_tool_context(session, rounds=needed) if session else None
        except ProxyError as e:
            flow.response = gemini_error_response(e)
            return
        if tctx is not None:
            try:
                body = self._rewritten(body, tctx, o)
            except ProxyError as e:
                log.warning("refused intercepted interaction for session %s: %s", session, e.message)
                flow.response = gemini_error_response(e, "FAILED_PRECONDITION")
                return
            flow.request.set_content(fast_json.dumps(body))
        if body.get("stream"):
            flow.request.headers["accept-encoding"] = "identity"  # the tap must see plain bytes
        flow.metadata[STATE] = (session, StepCapture())

    @staticmethod
    def _rewritten(body: dict[str, Any], tctx: ToolContext, o: FlowOptions) -> dict[str, Any]:
        body = fast_json.clone(body)
        if tctx.declarations:
            body["tools"] = session_tools(body.get("tools"), tctx, o.merge_tools)
            if tctx.tool_config:
                choice = generation_of({"toolConfig": tctx.tool_config}).get("tool_choice")
                body.setdefault("generation_config", {})["tool_choice"] = choice
        steps = body.get("input")
        if isinstance(steps, list):
            body["input"] = rewrite_steps(steps, tctx.rounds, o.placeholder,
                                          bool(body.get("previous_interaction_id")))
        elif isinstance(steps, str) and body.get("previous_interaction_id") and \
                steps.strip() == o.placeholder:
            body["input"] = rewrite_steps([{"type": "user_input", "content": [{"type": "text", "text": steps}]}],
                                          tctx.rounds, o.placeholder, True)
        return body

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        state = flow.metadata.get(STATE)
        if state is None or flow.response is None or flow.response.status_code != 200:
            return
        if "text/event-stream" in flow.response.headers.get("content-type", ""):
            flow.response.stream = EventTap(state[1])

    async def response(self, flow: http.HTTPFlow) -> None:
        state = flow.metadata.pop(STATE, None)
        if state is None or flow.response is None or flow.response.status_code != 200:
            return
        session, capture = state
        if not flow.response.stream:
            try:
                body = json.loads(flow.response.get_content(strict=False) or b"")
                if isinstance(body, dict):
                    capture.interaction(body)
            except (json.JSONDecodeError, UnicodeDecodeError, ValueError, RecursionError):
                log.warning("could not read the interaction on %s", flow.request.path)
        if capture.calls and session:
            if not await record_round(self.store, flow, session, ToolRound(capture.calls)):
                return
            log.info("captured %d function call(s) from an interaction for session %s", len(capture.calls), session)

