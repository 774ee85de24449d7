"""Gemini chunks -> Anthropic Messages stream events, or one `message` object (sans-I/O).

Blocks follow Gemini's parts: thought text -> `thinking` (thinking_delta, then its signature_delta),
text -> `text` (text_delta), a functionCall -> `tool_use` (input_json_delta: real increments where
Gemini streams the arguments, else the whole arguments in one delta -- never `input: {}` alone).
Every thinking block is signed with the proxy's sealed carrier; when the turn called tools, a last
thinking block's signature carries the calls' records (Gemini's thought signatures, ids, names), so
a client that resends the turn -- as Claude Code does, statelessly -- gets them back to Gemini,
even after a restart; a forged or foreign one opens nothing (signatures/carrier.py).
`stop_reason`: end_turn, tool_use, max_tokens, or refusal for a filtered answer; an empty answer or a
cut stream is an `error`, never a finished message.
"""

import json
from typing import Any

from proxy import fast_json, ids
from proxy.anthropic.events import (
    AnthropicEvent,
    BetaRawMessageDeltaEvent,
    ErrorResponse,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
)
from proxy.errors import ProxyError
from proxy.from_gemini.answer_check import AnswerCheck, refuse_unrepresented
from proxy.from_gemini.client_call import client_call, match_name
from proxy.from_gemini.finish_reason import map_finish_reason
from proxy.from_gemini.model_turn import SEARCH_RESULT, ModelTurn
from proxy.from_gemini.partial_args import CallEvent, PartialCalls, StreamedCall
from proxy.from_gemini.server_tools import PartsBeforeCall, hosted_record, search_call
from proxy.signatures.call_record import CallRecord
from proxy.signatures.carrier import CarrierSeal
from proxy.tools.prepare_tools import PreparedTools
from proxy.tools.tool_names import qualified
from proxy.wire.gemini import first_candidate_parts

Event = AnthropicEvent


def tool_use_id() -> str:
    return "toolu_" + ids.call_id().removeprefix("call_")


def usage_of(meta: dict[str, Any] | None, written: bool = False) -> dict[str, Any]:
    """Anthropic's usage: input_tokens excludes the cached prefix (Gemini's cachedContentTokenCount,
    part of its promptTokenCount), which is a cache read -- or, when the cache was made for this
    request (`written`: Gemini billed its creation at the input price), a cache write."""
    meta = meta or {}
    prompt = int(meta.get("promptTokenCount") or 0)
    cached = int(meta.get("cachedContentTokenCount") or 0)
    output = int(meta.get("candidatesTokenCount") or 0) + int(meta.get("thoughtsTokenCount") or 0)
    return {"input_tokens": max(prompt - cached, 0), "output_tokens": output,
            "cache_read_input_tokens": 0 if written else cached,
            "cache_creation_input_tokens": cached if written else 0}


def error_type(status: int) -> str:
    return {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
            404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
            503: "overloaded_error", 529: "overloaded_error"}.get(status, "api_error" if status >= 500
                                                                      else "invalid_request_error")


class AnthropicTranslator:
    def __init__(self, model: str, tools: PreparedTools, seal: CarrierSeal, keep_first_call_only: bool = False,
                 keep_turn: bool = False) -> None:
        self.id = "msg_" + ids.response_id()[5:29]
        self.model = model  # the client's name for it
        self._tools, self._seal, self._first_only = tools, seal, keep_first_call_only
        self.content: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None  # the text or thinking block being streamed
        self._pieces: list[str] = []              # its text, joined once when it closes
        self.calls: list[CallRecord] = []
        self.check = AnswerCheck()
        self._partial = PartialCalls()
        self._streaming: tuple[StreamedCall, dict[str, Any], list[str]] | None = None
        self._before_call = PartsBeforeCall()
        self.hosted: list[CallRecord] = []  # the searches' records (server_tool_use ids -> Gemini's parts)
        self._searches: dict[Any, tuple[str, list[dict[str, Any]]]] = {}  # toolCall id -> (block id, parts)
        self._open_searches: list[str] = []  # the proxy's tool searches awaiting their results, in order
        self._searching: StreamedCall | None = None  # a tool search whose arguments Gemini streams
        self.stop_reason: str | None = None
        self.done = self.failed = False
        # The model turn as Gemini sent it (signatures on their parts), for a thread's held history
        # (threads.py); only kept when asked: a stateless client resends its history itself.
        self.model_turn = ModelTurn() if keep_turn else None
        # `{"applied_edits": [...]}` when the request asked for context editing (context_edits.py):
        # on the message, and on a stream's message_delta, as Anthropic reports it.
        self.context_management: dict[str, Any] | None = None
        self.cache_written = False  # the prompt cache it reads was made for this request (prompt_cache.py)

    # -- events ---------------------------------------------------------------------------------

    def start(self) -> list[Event]:
        return [RawMessageStartEvent(type="message_start", message={
            "id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}})]

    def feed(self, chunk: dict[str, Any]) -> list[Event]:
        if self.done:
            return []
        self.check.feed(chunk)
        out: list[Event] = []
        for raw in first_candidate_parts(chunk):
            refuse_unrepresented(raw, "Anthropic Messages")
            if self.model_turn is not None:
                self.model_turn.add(raw)
            call_events, part = self._partial.feed(raw)
            out += self._call_events(call_events)
            if part is not None:
                out += self._part(part)
        return out

    def finish(self) -> list[Event]:
        if self.done:
            return []
        out = self._call_events(self._partial.finish()) + self._close()
        for block_id, parts in self._searches.values():  # searches Gemini never answered
            self.hosted.append(hosted_record(block_id, parts))
            out += self._whole_block({"type": "web_search_tool_result", "tool_use_id": block_id,
                                      "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"}})
        self._searches.clear()
        problem = self.check.problem()
        if problem:
            return out + self.fail(ProxyError(problem, status=502, type="server_error"))
        status, detail = map_finish_reason(self.check.finish, self.check.block)
        if status == "failed":
            return out + self.fail(ProxyError(detail or "Gemini failed", status=502, type="server_error"))
        if status == "incomplete":
            self.stop_reason = "max_tokens" if detail == "max_output_tokens" else "refusal"
        else:
            self.stop_reason = "tool_use" if self.calls else "end_turn"
        if self.calls or self.hosted:  # the carrier of this turn's calls and searches, for the client to send back
            out += self._signed_block("", self._seal.encode(self.calls + self.hosted))
        self.done = True
        usage = usage_of(self.check.usage, self.cache_written)
        delta = {"stop_reason": self.stop_reason, "stop_sequence": None}
        end: RawMessageDeltaEvent | BetaRawMessageDeltaEvent = (
            RawMessageDeltaEvent(type="message_delta", delta=delta, usage=usage) if self.context_management is None
            else BetaRawMessageDeltaEvent(type="message_delta", delta=delta, usage=usage,
                                          context_management=self.context_management))
        return out + [end, RawMessageStopEvent(type="message_stop")]

    def fail(self, error: ProxyError) -> list[Event]:
        """The stream's failure: Anthropic's `error` event (the SDKs raise on it)."""
        if self.failed:
            return []
        self.done = self.failed = True
        return [ErrorResponse(type="error", error={"type": error_type(error.status), "message": error.message})]

    def model_content(self) -> list[dict[str, Any]]:
        """The model turn for a held history: parts exactly as received (the proxy's searches split it
        into model, user, model turns: search_hops.py); with disable_parallel_tool_use only the first
        client call, the one the client was given."""
        if not self.model_turn:
            return []
        out, calls = [], 0
        for content in self.model_turn.contents():
            parts = []
            for part in content["parts"]:
                fc = part.get("functionCall") if content["role"] == "model" else None
                if isinstance(fc, dict) and match_name(self._tools, fc.get("name", "")) not in self._tools.searches:
                    calls += 1
                    if self._first_only and calls > 1:
                        continue
                parts.append(part)
            out.append({"role": content["role"], "parts": parts})
        return out

    def message(self) -> dict[str, Any]:
        message = {"id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": self.content,
                   "stop_reason": self.stop_reason, "stop_sequence": None,
                   "usage": usage_of(self.check.usage, self.cache_written)}
        if self.context_management is not None:
            message["context_management"] = self.context_management
        return message

    # -- blocks ---------------------------------------------------------------------------------

    def _begin(self, block: dict[str, Any]) -> list[Event]:
        self.content.append(block)
        return [RawContentBlockStartEvent(type="content_block_start", index=len(self.content) - 1,
                                          content_block={**block, **({"input": {}} if "input" in block else {})})]

    def _stop(self) -> Event:
        return RawContentBlockStopEvent(type="content_block_stop", index=len(self.content) - 1)

    def _delta(self, delta: dict[str, Any], index: int | None = None) -> Event:
        """A delta of the last block (or of block `index`)."""
        return RawContentBlockDeltaEvent(type="content_block_delta",
                                         index=len(self.content) - 1 if index is None else index, delta=delta)

    def _close(self) -> list[Event]:
        """End the open text or thinking block (a thinking block gets its signature first)."""
        if self._open is None:
            return []
        block, self._open = self._open, None
        out: list[Event] = []
        if block["type"] == "text":
            block["text"] = "".join(self._pieces)
        else:
            block["thinking"] = "".join(self._pieces)
            block["signature"] = self._seal.encode([])
            out.append(self._delta({"type": "signature_delta", "signature": block["signature"]}))
        self._pieces = []
        return out + [self._stop()]

    def _signed_block(self, thinking: str, signature: str) -> list[Event]:
        out = self._begin({"type": "thinking", "thinking": "", "signature": ""})
        self.content[-1].update(thinking=thinking, signature=signature)
        return out + [self._delta({"type": "signature_delta", "signature": signature}), self._stop()]

    def _text(self, kind: str, text: str) -> list[Event]:
        out: list[Event] = []
        if self._open is None or self._open["type"] != kind:
            out += self._close()
            self._open = {"type": "text", "text": ""} if kind == "text" else \
                {"type": "thinking", "thinking": "", "signature": ""}
            out += self._begin(self._open)
        self._pieces.append(text)
        delta = {"type": "text_delta", "text": text} if kind == "text" else {"type": "thinking_delta", "thinking": text}
        return out + [self._delta(delta)]

    def _part(self, part: dict[str, Any]) -> list[Event]:
        fc = part.get("functionCall")
        if isinstance(fc, dict) and match_name(self._tools, fc.get("name", "")) in self._tools.searches:
            return self._tool_search(part)
        if SEARCH_RESULT in part:
            return self._tool_search_result(part[SEARCH_RESULT])
        if isinstance(fc, dict):
            if self._first_only and self.calls:
                return []  # disable_parallel_tool_use: the first call only
            call = client_call(self._tools, part, tool_use_id())
            self.calls.append(self._before_call.onto(call.record))
            block = {"type": "tool_use", "id": call.call_id, "name": qualified(call.ref.name, call.ref.namespace),
                     "input": call.args}
            out = self._close() + self._begin(block)
            return out + [self._delta({"type": "input_json_delta",
                                       "partial_json": json.dumps(call.args, ensure_ascii=False)}), self._stop()]
        if self._before_call.hold(part):  # a search's parts: its blocks, and the next call's record
            return self._search(part)
        text = part.get("text")
        if not isinstance(text, str) or not text:
            return []
        return self._text("thinking" if part.get("thought") else "text", text)

    def _tool_search(self, part: dict[str, Any]) -> list[Event]:
        """The proxy's tool search (search_hops.py) as Anthropic's: a `server_tool_use` block, its
        result next; Gemini's call goes in the carrier, so a resent turn gives it back to Gemini."""
        call = client_call(self._tools, part, "srvtoolu_" + ids.call_id().removeprefix("call_"))
        self.hosted.append(call.record)
        self._open_searches.append(call.call_id)
        out = self._close() + self._begin({"type": "server_tool_use", "id": call.call_id, "name": call.ref.name,
                                           "input": call.args})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(call.args, ensure_ascii=False)}
        return out + [self._delta(delta), self._stop()]

    def _tool_search_result(self, result: dict[str, Any]) -> list[Event]:
        block_id = self._open_searches.pop(0) if self._open_searches else None
        if block_id is None:
            return []
        content: dict[str, Any] = (
            {"type": "tool_search_tool_result_error", "error_code": "invalid_tool_input",
             "error_message": result["response"]["functionResponse"]["response"].get("error")}
            if result["error_code"] else
            {"type": "tool_search_tool_search_result",
             "tool_references": [{"type": "tool_reference", "tool_name": n} for n in result["found"]]})
        return self._close() + self._whole_block({"type": "tool_search_tool_result", "tool_use_id": block_id,
                                                  "content": content})

    def _whole_block(self, block: dict[str, Any]) -> list[Event]:
        self.content.append(block)
        return [RawContentBlockStartEvent(type="content_block_start", index=len(self.content) - 1,
                                          content_block=block), self._stop()]

    def _search(self, part: dict[str, Any]) -> list[Event]:
        """Google Search as Anthropic's web search: `server_tool_use` for Gemini's toolCall, then
        `web_search_tool_result` for its toolResponse; the record of both parts, exactly as Gemini sent
        them, goes in the carrier, so a resent turn gives them back to Gemini."""
        if isinstance(part.get("toolCall"), dict):
            block_id = "srvtoolu_" + ids.call_id().removeprefix("call_")
            self._searches[part["toolCall"].get("id")] = (block_id, [fast_json.copied(part)])
            query = search_call(part)["action"]["query"]
            out = self._close() + self._begin({"type": "server_tool_use", "id": block_id, "name": "web_search",
                                               "input": {"query": query}})
            return out + [self._delta({"type": "input_json_delta", "partial_json": json.dumps({"query": query})}),
                          self._stop()]
        found = self._searches.pop(part["toolResponse"].get("id"), None)
        if found is None:  # a result without its call in this answer: it rides on the next call's record
            return []
        block_id, parts = found
        parts.append(fast_json.copied(part))
        self.hosted.append(hosted_record(block_id, parts))
        response = part["toolResponse"].get("response")
        results = response.get("results") if isinstance(response, dict) else None
        content = [{"type": "web_search_result", "url": r["url"], "title": r.get("title") or r["url"],
                    "encrypted_content": "", "page_age": None}
                   for r in results or [] if isinstance(r, dict) and isinstance(r.get("url"), str)]
        return self._close() + self._whole_block({"type": "web_search_tool_result", "tool_use_id": block_id,
                                                  "content": content})

    def _call_events(self, call_events: list[CallEvent]) -> list[Event]:
        """A call whose arguments Gemini streams: its block opens with the first fragment, then each
        fragment is an input_json_delta as it comes."""
        out: list[Event] = []
        for ev in call_events:
            if ev.kind == "start":
                if match_name(self._tools, ev.call.name) in self._tools.searches:  # a search: out whole at its end
                    self._searching = ev.call
                    continue
                if self._first_only and self.calls:
                    continue
                ref = self._tools.names.ref(match_name(self._tools, ev.call.name))
                block: dict[str, Any] = {"type": "tool_use", "id": tool_use_id(),
                                         "name": qualified(ref.name, ref.namespace),
                                         "input": {}}
                out += self._close() + self._begin(block)
                self._streaming = (ev.call, block, [])
                continue
            if ev.call is self._searching:
                if ev.kind == "end":
                    self._searching = None
                    out += self._tool_search(ev.call.whole_part())
                continue
            if self._streaming is None or self._streaming[0] is not ev.call:
                continue
            _, block, pieces = self._streaming
            if ev.text:
                pieces.append(ev.text)
                out.append(self._delta({"type": "input_json_delta", "partial_json": ev.text},
                                       self.content.index(block)))
            if ev.kind == "end":
                self._streaming = None
                call = client_call(self._tools, ev.call.whole_part(), block["id"])
                block["input"] = json.loads("".join(pieces) or "{}")
                self.calls.append(self._before_call.onto(call.record))
                out.append(RawContentBlockStopEvent(type="content_block_stop", index=self.content.index(block)))
        return out
