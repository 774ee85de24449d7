"""`TextCalls`: intercepted traffic to a model that speaks tools as text (`gtp_tool_mode`): the
owned request's tools (the app's, or the session's after Rewrite) are rendered into its prompt in
the model's dialect, and the answer — JSON, or SSE rewritten event by event as it streams — comes
back to the app with ordinary functionCall parts (which Capture then records). A native model with
`gtp_rescue_text_calls` gets complete text calls in its answer turned into calls, its request left
alone. Runs after Rewrite and before Capture."""

import json
import logging
from typing import Any

from mitmproxy import http

from proxy.dialects.parse_answer import AnswerParser, held_back
from proxy.dialects.render_request import render_request, tool_specs
from proxy.intercept.capture_calls import unwrap
from proxy.intercept.flow_selection import META, FlowState
from proxy.intercept.options import Options
from proxy.wire.gemini_keys import to_camel_request
from proxy.wire.sse import SSEDecoder

log = logging.getLogger(__name__)
PARSER = "gemini_tool_proxy.text_calls"


def _rewrite_chunk(parser: AnswerParser, chunk: Any) -> Any:
    """One answer chunk, Cloud Code's `{"response": ...}` wrapper kept."""
    if isinstance(chunk, dict) and isinstance(chunk.get("response"), dict) and "candidates" not in chunk:
        return {**chunk, "response": parser.chunk(chunk["response"])}
    return parser.chunk(chunk) if isinstance(chunk, dict) else chunk


class SSERewriter:
    """A mitmproxy stream callable: each SSE event re-encoded with its text parsed. Never raises (an
    exception would kill the app's connection): if rewriting fails, the rest passes as it came."""

    def __init__(self, parser: AnswerParser) -> None:
        self.parser, self.decoder, self.broken = parser, SSEDecoder(), False

    def __call__(self, data: bytes) -> bytes | list[bytes]:
        """Bytes to send on; `[]` when everything is held back (an empty bytes object would end
        an HTTP/1 chunked body)."""
        if self.broken:
            return data
        try:
            out = []
            for payload in self.decoder.feed(data) if data else self.decoder.close():
                try:
                    chunk = _rewrite_chunk(self.parser, json.loads(payload))
                except json.JSONDecodeError:
                    out.append(f"data: {payload}\r\n\r\n")
                    continue
                if held_back(unwrap(chunk)):
                    continue
                out.append(f"data: {json.dumps(chunk, ensure_ascii=False)}\r\n\r\n")
            return "".join(out).encode() if out else []
        except Exception:
            self.broken = True
            log.exception("text-call rewriting stopped; the rest of the stream passes as it came")
            return data


class TextCalls:
    def __init__(self, options: Options) -> None:
        self.options = options
        # model -> (its dialect, its rescue dialect) under these tool modes (the options' current ones):
        # two pattern lookups per flow otherwise, for the few models an app names
        self._modes: Any = None
        self._dialects: dict[str, tuple[Any, Any]] = {}

    def _dialects_of(self, model: str) -> tuple[Any, Any]:
        modes = self.options.rules.text_calls
        if modes is not self._modes or len(self._dialects) >= 256:
            self._modes, self._dialects = modes, {}
        found = self._dialects.get(model)
        if found is None:
            found = self._dialects[model] = (modes.dialect(model), modes.rescue_dialect(model))
        return found

    def request(self, flow: http.HTTPFlow) -> None:
        state: FlowState | None = flow.metadata.get(META)
        if state is None or state.relay is not None or flow.response is not None:
            return
        modes = self.options.rules.text_calls
        d, rescue = self._dialects_of(state.model)
        if d is None and rescue is None:
            return
        try:
            body = json.loads(flow.request.get_content(strict=False) or b"")
        except (ValueError, UnicodeDecodeError):
            return
        cloudcode = state.target.kind == "cloudcode"
        inner = to_camel_request(body["request"] if cloudcode else body)
        if d is None:
            flow.metadata[PARSER] = AnswerParser(rescue, tool_specs(inner), rescue=True)
            return
        flow.metadata[PARSER] = AnswerParser(d, tool_specs(inner), think_open=modes.thinks_open(state.model))
        rendered = render_request(inner, d, single_call=modes.single(state.model))
        flow.request.set_content(json.dumps({**body, "request": rendered} if cloudcode else rendered,
                                            ensure_ascii=False).encode())
        flow.request.headers["accept-encoding"] = "identity"  # the rewriter must see plain bytes

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        parser: AnswerParser | None = flow.metadata.get(PARSER)
        if parser is None or flow.response is None or flow.response.status_code != 200:
            return
        if "text/event-stream" in flow.response.headers.get("content-type", ""):
            flow.response.stream = SSERewriter(parser)

    def response(self, flow: http.HTTPFlow) -> None:
        parser: AnswerParser | None = flow.metadata.pop(PARSER, None)
        if parser is None or flow.response is None or flow.response.status_code != 200 or flow.response.stream:
            return
        try:
            data = json.loads(flow.response.get_content(strict=False) or b"")
        except (ValueError, UnicodeDecodeError):
            log.warning("could not read Gemini's answer on %s to parse text calls", flow.request.path)
            return
        data = [_rewrite_chunk(parser, c) for c in data] if isinstance(data, list) else _rewrite_chunk(parser, data)
        flow.response.set_content(json.dumps(data, ensure_ascii=False).encode())
