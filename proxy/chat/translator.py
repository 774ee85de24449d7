"""Gemini chunks -> Chat Completions chunks (stream) or one chat.completion object.

Sans-I/O like gemini_to_responses: `feed(chunk)` returns the chunks to send, `finish()` the last
ones. Tool calls carry an `index` that keeps counting across chunks (LiteLLM#21331 emitted every
parallel call as index 0); a turn with calls ends with finish_reason "tool_calls".
"""

import copy
import json
import time
from typing import Any

from proxy import ids
from proxy.from_gemini.answer_check import AnswerCheck, refuse_unrepresented
from proxy.from_gemini.client_call import client_call, match_name
from proxy.from_gemini.finish_reason import map_finish_reason
from proxy.from_gemini.partial_args import CallEvent, PartialCalls, StreamedCall
from proxy.from_gemini.server_tools import PartsBeforeCall, chat_annotations
from proxy.from_gemini.usage import map_usage
from proxy.signatures.call_record import CallRecord
from proxy.tools.prepare_tools import PreparedTools
from proxy.tools.tool_names import qualified
from proxy.wire.gemini import first_candidate_parts, grounding_of


class ChatTranslator:
    def __init__(self, model: str, tools: PreparedTools | None = None, keep_first_call_only: bool = False) -> None:
        self.id = "chatcmpl-" + ids.response_id()[5:29]
        self.model, self.created = model, int(time.time())
        self._tools = tools or PreparedTools()
        self._first_only = keep_first_call_only
        self._text: list[str] = []  # pieces, joined once (linear in the answer)
        self._reasoning: list[str] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.calls: list[CallRecord] = []
        self.check = AnswerCheck()
        self._started = False
        self._partial = PartialCalls()  # calls whose arguments Gemini streams (partialArgs)
        self._streaming: tuple[StreamedCall, dict[str, Any]] | None = None  # and the tool_calls entry they fill
        # Google Search's toolCall/toolResponse parts since the last call: Chat has no item for them, so
        # they ride on the next call's record and go back before it (server_tools.py).
        self._before_call = PartsBeforeCall()
        self._grounding: dict[str, Any] | None = None

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    def feed(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        """One Gemini chunk (checked by wire.gemini.checked; a failure goes to the writer's `fail`)."""
        self.check.feed(chunk)
        out: list[dict[str, Any]] = []
        if not self._started:
            self._started = True
            out.append(self._chunk({"role": "assistant", "content": ""}))
        self._grounding = grounding_of(chunk) or self._grounding
        for part in first_candidate_parts(chunk):
            out += self._part(part)
        return out

    def _part(self, raw: dict[str, Any]) -> list[dict[str, Any]]:
        refuse_unrepresented(raw, "Chat Completions")
        call_events, part = self._partial.feed(raw)
        out = self._call_events(call_events)
        return out if part is None else out + self._whole_part(part)

    def _call_events(self, call_events: list[CallEvent]) -> list[dict[str, Any]]:
        """A streamed call: its id and name with the first fragment, then argument deltas as they
        come (never taken back: the arguments are Gemini's as streamed)."""
        out: list[dict[str, Any]] = []
        for ev in call_events:
            if ev.kind == "start":
                if self._first_only and self.tool_calls:
                    continue
                ref = self._tools.names.ref(match_name(self._tools, ev.call.name))
                entry = {"index": len(self.tool_calls), "id": ev.call.first["functionCall"].get("id") or ids.call_id(),
                         "type": "function", "function": {"name": qualified(ref.name, ref.namespace), "arguments": ""}}
                self.tool_calls.append(entry)
                self._streaming = (ev.call, entry)
                out.append(self._chunk({"tool_calls": [copy.deepcopy(entry)]}))
                continue
            if self._streaming is None or self._streaming[0] is not ev.call:
                continue
            entry = self._streaming[1]
            if ev.text:
                entry["function"]["arguments"] += ev.text
                out.append(self._chunk({"tool_calls": [{"index": entry["index"],
                                                        "function": {"arguments": ev.text}}]}))
            if ev.kind == "end":
                self._streaming = None
                call = client_call(self._tools, ev.call.whole_part(), entry["id"])
                self.calls.append(self._before_call.onto(call.record))
        return out

    def _whole_part(self, part: dict[str, Any]) -> list[dict[str, Any]]:
        fc = part.get("functionCall")
        if isinstance(fc, dict):
            if self._first_only and self.tool_calls:
                return []  # parallel_tool_calls=false: the first call only
            call = client_call(self._tools, part)
            delta = {"index": len(self.tool_calls), "id": call.call_id, "type": "function",
                     "function": {"name": qualified(call.ref.name, call.ref.namespace),  # Chat has no namespaces
                                  "arguments": json.dumps(call.args, ensure_ascii=False)}}
            self.tool_calls.append(delta)
            self.calls.append(self._before_call.onto(call.record))
            return [self._chunk({"tool_calls": [delta]})]
        if self._before_call.hold(part):  # a search's parts ride on the next call's record
            return []
        text = part.get("text")
        if not isinstance(text, str) or not text:
            return []
        if part.get("thought"):
            self._reasoning.append(text)
            return [self._chunk({"reasoning_content": text})]
        self._text.append(text)
        return [self._chunk({"content": text})]

    @property
    def text(self) -> str:
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)

    def outcome(self) -> tuple[str, str | None]:
        """(finish_reason, failure message or None)."""
        problem = self.check.problem()
        if problem:
            return "stop", problem
        status, detail = map_finish_reason(self.check.finish, self.check.block)
        if status == "failed":
            return "stop", detail
        if status == "incomplete":
            return ("length" if detail == "max_output_tokens" else "content_filter"), None
        return ("tool_calls" if self.tool_calls else "stop"), None

    def usage(self) -> dict[str, Any]:
        u = map_usage(self.check.usage)
        return {"prompt_tokens": u["input_tokens"], "completion_tokens": u["output_tokens"],
                "total_tokens": u["total_tokens"],
                "prompt_tokens_details": {"cached_tokens": u["input_tokens_details"]["cached_tokens"]},
                "completion_tokens_details": {"reasoning_tokens": u["output_tokens_details"]["reasoning_tokens"]}}

    def finish(self, include_usage: bool) -> list[dict[str, Any]]:
        streamed = self._call_events(self._partial.finish())
        finish, failure = self.outcome()
        if failure:
            return [error_chunk(failure)]
        out = streamed if self._started else [self._chunk({"role": "assistant", "content": ""}), *streamed]
        out.append(self._chunk({}, finish))
        if include_usage:
            out.append({**self._chunk({}), "choices": [], "usage": self.usage()})
        return out

    def completion(self) -> dict[str, Any]:
        finish, _ = self.outcome()
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None, "refusal": None}
        if self.tool_calls:
            message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in self.tool_calls]
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        annotations = chat_annotations(self._grounding, self.text) if self._grounding else None  # (a search's)
        if annotations:
            message["annotations"] = annotations
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": self.usage()}


def error_chunk(message: str, type: str = "server_error", code: str | None = "upstream_error") -> dict[str, Any]:
    """How a Chat stream ends in failure: a bare error object as the last data event (the openai SDKs raise)."""
    return {"error": {"message": message, "type": type, "param": None, "code": code}}
