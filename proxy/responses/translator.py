"""Gemini generateContent chunks -> OpenAI Responses output items and SSE events.

A sans-I/O state machine in the manner of h11: `start()`, then `feed(chunk)` for each Gemini
response chunk as it arrives, then `finish()`; each returns the Responses events to send. The
whole (non-streaming) answer is the same machine fed one chunk, read from `.response`.
Event order and fields follow docs/wire.md#responses-events and the invariants the openai SDK's
stream accumulator enforces (one open text/reasoning item at a time; text deltas inside a content
part). A web_search_call item stays open from Gemini's toolCall to its toolResponse.
"""

import copy
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from proxy import fast_json, ids
from proxy.from_gemini.answer_check import AnswerCheck, refuse_unrepresented
from proxy.from_gemini.client_call import client_call, match_name
from proxy.from_gemini.finish_reason import failure_code, map_finish_reason
from proxy.from_gemini.model_turn import SEARCH_RESULT, ModelTurn
from proxy.from_gemini.partial_args import CallEvent, PartialCalls, StreamedCall
from proxy.from_gemini.server_tools import (
    PartsBeforeCall,
    citations,
    grounding_queries,
    hosted_record,
    search_call,
    search_item,
    server_part_key,
    web_sources,
)
from proxy.from_gemini.usage import added_usage, map_usage
from proxy.responses.events import (
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseCustomToolCallInputDeltaEvent,
    ResponseCustomToolCallInputDoneEvent,
    ResponseFailedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseIncompleteEvent,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputTextAnnotationAddedEvent,
    ResponseReasoningSummaryPartAddedEvent,
    ResponseReasoningSummaryPartDoneEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningSummaryTextDoneEvent,
    ResponsesEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseWebSearchCallCompletedEvent,
    ResponseWebSearchCallInProgressEvent,
    ResponseWebSearchCallSearchingEvent,
)
from proxy.signatures.call_record import CallRecord
from proxy.signatures.carrier import CarrierSeal
from proxy.tools.prepare_tools import PreparedTools
from proxy.tools.tool_names import ToolRef
from proxy.wire.gemini import first_candidate_parts, grounding_of

Event = ResponsesEvent
log = logging.getLogger(__name__)


@dataclass
class _StreamingItem:
    call: StreamedCall
    call_id: str
    item: dict[str, Any] | None  # None for a custom tool: its input goes out whole


@dataclass
class _Search:
    """A web_search_call item between Gemini's toolCall and its toolResponse."""

    item: dict[str, Any]
    index: int
    parts: list[dict[str, Any]] = field(default_factory=list)


class ResponsesTranslator:
    def __init__(self, response: dict[str, Any], tools: PreparedTools | None = None,
                 keep_first_call_only: bool = False, carrier: CarrierSeal | None = None,
                 snapshots: bool = True, sources: bool = False) -> None:
        self.response = response  # the Response object; output/status/usage are filled in here
        self.response.update(status="in_progress", output=[], usage=None, error=None, incomplete_details=None,
                             completed_at=None)
        self._tools = tools or PreparedTools()
        # parallel_tool_calls=false: Gemini has no such switch, so later calls of a turn are dropped
        # from the output and from the history kept for the next turn (translators.md §3).
        self._first_call_only = keep_first_call_only
        self._carrier = carrier  # given for include=["reasoning.encrypted_content"]: see signatures/carrier.py
        self._seq = 0
        self._open: dict[str, Any] | None = None  # the item currently streaming (message/reasoning)
        self.calls: list[CallRecord] = []
        self.model_turn = ModelTurn()  # the model turn as Gemini sent it, for history
        self.check = AnswerCheck()
        self._partial = PartialCalls()  # calls whose arguments Gemini streams (partialArgs)
        self._streaming: _StreamingItem | None = None  # the function_call item they stream into
        self.hosted: list[CallRecord] = []  # web_search_call items' records (server_tools.py)
        self._searches: dict[Any, _Search] = {}  # toolCall id -> its item, until its toolResponse
        self._before_call = PartsBeforeCall()  # server-side parts since the last function call
        self._open_searches: list[str] = []  # the proxy's tool searches awaiting their results, in order
        self._grounding: dict[str, Any] | None = None  # the latest groundingMetadata
        self.done = False
        # Events carry copies of the response as it was, for callers that keep events around. The
        # server needs none: its stream writer serializes each call's events before the next call
        # (and no call mutates the response after adding an event that holds it), and a whole answer
        # sends only `response`; copying echoed tools and output three times cost a large request.
        self._snapshots = snapshots
        self._sources = sources  # include=["web_search_call.action.sources"]
        # Done items that come before Gemini's: the compaction item of a compaction on create (turn.py),
        # and the usageMetadata of the summary it took (billed too, so counted in the usage).
        self.preface: list[dict[str, Any]] = []
        self.preface_usage: dict[str, Any] | None = None

    # -- public API ---------------------------------------------------------------------------

    def start(self) -> list[Event]:
        snapshot = self._snapshot()
        if self.preface:  # (the server's snapshot is the response itself, written after the items join it)
            snapshot = {**snapshot, "output": []}
        events: list[Event] = [
            ResponseCreatedEvent(type="response.created", sequence_number=self._next(), response=snapshot),
            ResponseInProgressEvent(type="response.in_progress", sequence_number=self._next(), response=snapshot)]
        for item in self.preface:
            events += self._add_item(item) + self._done_item(item)
        return events

    def feed(self, chunk: dict[str, Any]) -> list[Event]:
        """One Gemini chunk (checked by wire.gemini.checked; a failure goes to `fail`)."""
        if self.done:
            return []
        self.check.feed(chunk)
        self._grounding = grounding_of(chunk) or self._grounding
        events: list[Event] = []
        for part in first_candidate_parts(chunk):
            events += self._part(part)
        return events

    def finish(self) -> list[Event]:
        if self.done:
            return []
        events = self._call_events(self._partial.finish())
        self._annotate()
        events += self._close_open() + self._end_searches()
        if self._sources and self._grounding:  # searches that ended before Gemini named its sources
            for o in self.response["output"]:
                if o["type"] == "web_search_call" and "sources" not in o.get("action", {}):
                    o["action"] = {**o.get("action", {}), "sources": web_sources(self._grounding)}
        if self._carrier and (self.calls or self.hosted):
            item = {"id": ids.reasoning_id(), "type": "reasoning", "summary": [],
                    "encrypted_content": self._carrier.encode(self.calls + self.hosted)}
            events += self._add_item(item) + self._done_item(item)
        self.response["usage"] = map_usage(added_usage(self.check.usage, self.preface_usage))
        problem = self.check.problem()
        if problem:
            return events + self.fail(problem)
        status, detail = map_finish_reason(self.check.finish, self.check.block)
        if status == "failed":
            msg = detail or "Gemini failed"
            if self.check.finish_message:
                msg = f"{msg}: {self.check.finish_message}"
            return events + self.fail(msg, failure_code(self.check.finish))
        self.response["status"] = status
        if status == "completed":
            self.response["completed_at"] = int(time.time())
        if status == "incomplete":
            self.response["incomplete_details"] = {"reason": detail}
        self.done = True
        if status == "completed":
            return events + [ResponseCompletedEvent(
                type="response.completed", sequence_number=self._next(), response=self._snapshot())]
        return events + [ResponseIncompleteEvent(
            type="response.incomplete", sequence_number=self._next(), response=self._snapshot())]

    def complete_empty(self) -> list[Event]:
        """A response made without asking Gemini (`generate: false`): created and completed, no output
        but its preface (a compaction_trigger's compaction item, its summary's usage)."""
        events = self.start()
        self.response.update(status="completed", completed_at=int(time.time()))
        if self.preface_usage:
            self.response["usage"] = map_usage(self.preface_usage)
        self.done = True
        return events + [ResponseCompletedEvent(
            type="response.completed", sequence_number=self._next(), response=self._snapshot())]

    def fail(self, message: str, code: str = "server_error") -> list[Event]:
        """End the response as failed (upstream error mid-stream, or an unusable finish)."""
        if self.done:
            return []
        events = self._close_open()
        self.response.update(status="failed", error={"code": code, "message": message})
        if self.response.get("usage") is None and self.check.usage:
            self.response["usage"] = map_usage(self.check.usage)
        self.done = True
        return events + [ResponseFailedEvent(
            type="response.failed", sequence_number=self._next(), response=self._snapshot())]

    def revoke(self, message: str, code: str = "server_error") -> list[Event]:
        """A whole answer that could not be kept (the store failed): ended as failed after all, since
        a response that was not stored must never be reported completed."""
        self.response.update(status="failed", error={"code": code, "message": message})
        self.response.update(incomplete_details=None, completed_at=None)
        self.done = True
        return [ResponseFailedEvent(type="response.failed", sequence_number=self._next(), response=self._snapshot())]

    def model_content(self) -> list[dict[str, Any]]:
        """The model turn for history: parts exactly as received (signatures on the same parts); the
        searches the proxy ran within it split it into model, user (their results), model turns."""
        return fast_json.clone(self.model_turn.contents()) if self.model_turn else []

    # -- parts --------------------------------------------------------------------------------

    def _part(self, raw: dict[str, Any]) -> list[Event]:
        refuse_unrepresented(raw, "Responses")
        call_events, part = self._partial.feed(raw)
        events = self._call_events(call_events)
        if part is None:
            return events
        return events + self._whole_part(part)

    def _whole_part(self, part: dict[str, Any]) -> list[Event]:
        if "functionCall" in part and self._first_call_only and self.calls:
            return []
        self.model_turn.add(part)
        if "functionCall" in part:
            return self._tool_search(part) if self._is_search(part) else self._function_call(part)
        if SEARCH_RESULT in part:
            return self._tool_search_output(part[SEARCH_RESULT])
        server = server_part_key(part)
        if server is not None:
            return self._search_started(part) if server[0] == "toolCall" else self._search_answered(part)
        text = part.get("text")
        if not isinstance(text, str) or text == "":
            return []
        if part.get("thought"):
            return self._reasoning_delta(text)
        return self._text_delta(text)

    def _text_delta(self, text: str) -> list[Event]:
        events: list[Event] = []
        if self._open is None or self._open["type"] != "message":
            events += self._close_open()
            item: dict[str, Any] = {"id": ids.message_id(), "type": "message", "role": "assistant",
                                    "status": "in_progress", "content": []}
            events += self._add_item(item)
            events.append(ResponseContentPartAddedEvent(
                type="response.content_part.added", sequence_number=self._next(), item_id=item["id"],
                output_index=self._index, content_index=0, part={"type": "output_text", "text": "", "annotations": []}))
            self._open = {**item, "_text": []}
        self._open["_text"].append(text)
        events.append(ResponseTextDeltaEvent(
            type="response.output_text.delta", sequence_number=self._next(), item_id=self._open["id"],
            output_index=self._index, content_index=0, delta=text, logprobs=[]))
        return events

    def _reasoning_delta(self, text: str) -> list[Event]:
        events: list[Event] = []
        if self._open is None or self._open["type"] != "reasoning":
            events += self._close_open()
            item: dict[str, Any] = {"id": ids.reasoning_id(), "type": "reasoning", "summary": []}
            events += self._add_item(item)
            events.append(ResponseReasoningSummaryPartAddedEvent(
                type="response.reasoning_summary_part.added", sequence_number=self._next(), item_id=item["id"],
                output_index=self._index, summary_index=0, part={"type": "summary_text", "text": ""}))
            self._open = {**item, "_text": []}
        self._open["_text"].append(text)
        events.append(ResponseReasoningSummaryTextDeltaEvent(
            type="response.reasoning_summary_text.delta", sequence_number=self._next(), item_id=self._open["id"],
            output_index=self._index, summary_index=0, delta=text))
        return events

    def _function_call(self, part: dict[str, Any]) -> list[Event]:
        events = self._close_open()
        call = client_call(self._tools, part)
        ref = call.ref
        if ref.kind == "custom":
            events += self._custom_call(call.call_id, ref, call.args)
        else:
            args = json.dumps(call.args, ensure_ascii=False)
            item = self._call_item(call.call_id, ref, call.record.gemini_name)
            events += self._add_item(item)
            # Gemini sends a call whole (no argument deltas on the Developer API): one delta carries it.
            events.append(ResponseFunctionCallArgumentsDeltaEvent(
                type="response.function_call_arguments.delta", sequence_number=self._next(), item_id=item["id"],
                output_index=self._index, delta=args))
            events.append(ResponseFunctionCallArgumentsDoneEvent(
                type="response.function_call_arguments.done", sequence_number=self._next(), item_id=item["id"],
                output_index=self._index, arguments=args))
            events += self._done_item({**item, "status": "completed", "arguments": args})
        self.calls.append(self._before_call.onto(call.record))
        return events

    # -- tool search (tools/deferral.py, server/search_hops.py) ----------------------------------

    def _is_search(self, part: dict[str, Any]) -> bool:
        return match_name(self._tools, part["functionCall"].get("name", "")) in self._tools.searches

    def _tool_search(self, part: dict[str, Any], call_id: str | None = None) -> list[Event]:
        """A tool_search_call item: the client runs it (Codex: the answer ends with it, like a
        function call) or the proxy does, its tool_search_output coming next (search_hops.py)."""
        call = client_call(self._tools, part, call_id)
        client = self._tools.searches[match_name(self._tools, call.record.gemini_name)] == "client"
        item = {"id": "tsc_" + ids.function_item_id()[3:], "type": "tool_search_call", "call_id": call.call_id,
                "status": "completed", "execution": "client" if client else "server", "arguments": call.args}
        if client:
            self.calls.append(self._before_call.onto(call.record))
        else:
            self.hosted.append(call.record)  # replayed with the item, to Gemini as the call it made
            self._open_searches.append(call.call_id)
        return self._close_open() + self._add_item({**item, "status": "in_progress"}) + self._done_item(item)

    def _tool_search_output(self, result: dict[str, Any]) -> list[Event]:
        call_id = self._open_searches.pop(0) if self._open_searches else None
        deferral = self._tools.deferral
        tools = deferral.definitions(result["found"]) if deferral is not None else []
        item = {"id": "tso_" + ids.function_item_id()[3:], "type": "tool_search_output", "call_id": call_id,
                "status": "completed", "execution": "server", "tools": tools}
        return self._add_item({**item, "status": "in_progress"}) + self._done_item(item)

    # -- Google Search (server_tools.py) ------------------------------------------------------

    def _search_started(self, part: dict[str, Any]) -> list[Event]:
        item = search_call(part)
        self._before_call.add(part)
        events = self._close_open() + self._add_item(item)
        self._searches[part["toolCall"].get("id")] = _Search(item, self._index, [fast_json.copied(part)])
        return events + [
            ResponseWebSearchCallInProgressEvent(type="response.web_search_call.in_progress",
                                                 sequence_number=self._next(), item_id=item["id"],
                                                 output_index=self._index),
            ResponseWebSearchCallSearchingEvent(type="response.web_search_call.searching",
                                                sequence_number=self._next(), item_id=item["id"],
                                                output_index=self._index)]

    def _search_answered(self, part: dict[str, Any]) -> list[Event]:
        self._before_call.add(part)
        search = self._searches.pop(part["toolResponse"].get("id"), None)
        if search is None:  # a result without its call in this answer: kept for history only
            log.info("a toolResponse without a matching toolCall: kept in history, no item")
            return []
        search.parts.append(fast_json.copied(part))
        return [ResponseWebSearchCallCompletedEvent(
            type="response.web_search_call.completed", sequence_number=self._next(), item_id=search.item["id"],
            output_index=search.index)] + self._end_search(search, "completed")

    def _end_search(self, search: _Search, status: str) -> list[Event]:
        self.hosted.append(hosted_record(search.item["id"], search.parts))
        return self._done_item({**search.item, "status": status}, search.index)

    def _end_searches(self) -> list[Event]:
        """Searches Gemini never answered end as failed; a search seen only in groundingMetadata
        (Gemini 2.5, or search without functions) gets its item now, with nothing to replay."""
        events: list[Event] = []
        for search in self._searches.values():
            events += self._end_search(search, "failed")
        self._searches.clear()
        queries = grounding_queries(self._grounding)
        if queries and not any(o["type"] == "web_search_call" for o in self.response["output"]):
            item = search_item(queries, "completed")
            if self._sources:
                item["action"]["sources"] = web_sources(self._grounding)
            events += self._add_item({**item, "status": "in_progress"})
            events.append(ResponseWebSearchCallCompletedEvent(
                type="response.web_search_call.completed", sequence_number=self._next(), item_id=item["id"],
                output_index=self._index))
            self.hosted.append(hosted_record(item["id"], []))
            events += self._done_item(item)
        return events

    def _annotate(self) -> None:
        """url_citation annotations from groundingMetadata onto the answer's messages: the open
        one announces them as it closes; closed ones get them in the final response object."""
        messages = [o for o in self.response["output"] if o["type"] == "message"]
        if not self._grounding or not messages:
            return
        texts = []
        for o in messages:
            if self._open is not None and self._open["id"] == o["id"]:
                self._open["_text"] = ["".join(self._open["_text"])]
                texts.append(self._open["_text"][0])
            else:
                texts.append(o["content"][0]["text"] if o["content"] else "")
        for o, found in zip(messages, citations(self._grounding, texts), strict=True):
            if self._open is not None and self._open["id"] == o["id"]:
                self._open["_annotations"] = found
            elif found:
                o["content"][0]["annotations"] = found

    def _call_events(self, call_events: list[CallEvent]) -> list[Event]:
        """A streamed call: its item opens with the first fragment, argument deltas follow as they
        come, and it is done when the call ends. The deltas are never taken back, so the arguments
        are Gemini's as streamed (the schema repairs of whole calls are only logged here)."""
        events: list[Event] = []
        for ev in call_events:
            if ev.kind == "start":
                if self._first_call_only and self.calls:
                    continue  # parallel_tool_calls=false
                declared = match_name(self._tools, ev.call.name)
                ref = self._tools.names.ref(declared)
                call_id = ev.call.first["functionCall"].get("id") or ids.call_id()
                if ref.kind in ("custom", "search"):  # free-form input, or a search: out whole at the end
                    self._streaming = _StreamingItem(ev.call, call_id, None)
                    continue
                events += self._close_open()
                item = self._call_item(call_id, ref, declared)
                events += self._add_item(item)
                self._streaming = _StreamingItem(ev.call, call_id, item)
                continue
            streaming = self._streaming
            if streaming is None or streaming.call is not ev.call:
                continue  # a later call of parallel_tool_calls=false
            if ev.text and streaming.item is not None:
                events.append(ResponseFunctionCallArgumentsDeltaEvent(
                    type="response.function_call_arguments.delta", sequence_number=self._next(),
                    item_id=streaming.item["id"], output_index=self._index, delta=ev.text))
            if ev.kind == "end":
                events += self._end_streamed(streaming)
        return events

    def _end_streamed(self, streaming: "_StreamingItem") -> list[Event]:
        self._streaming = None
        whole = streaming.call.whole_part()
        self.model_turn.add(whole)
        if self._is_search(whole):
            return self._tool_search(whole, streaming.call_id)
        call = client_call(self._tools, whole, streaming.call_id)
        self.calls.append(self._before_call.onto(call.record))
        if streaming.item is None:
            return self._close_open() + self._custom_call(call.call_id, call.ref, call.args)
        args = streaming.call.arguments.text
        if call.args != json.loads(args):
            log.warning("streamed arguments of %s differ from their schema repair; sent as streamed", call.ref.name)
        item = streaming.item
        return [ResponseFunctionCallArgumentsDoneEvent(
            type="response.function_call_arguments.done", sequence_number=self._next(), item_id=item["id"],
            output_index=self._index, arguments=args)
        ] + self._done_item({**item, "status": "completed", "arguments": args})

    def _call_item(self, call_id: str, ref: ToolRef, gemini_name: str) -> dict[str, Any]:
        """A function_call item as it opens. A tool whose schema marks parameters `encrypted` (Codex
        MultiAgentV2's collaboration tools) gets `encrypted_function_args: []`: Gemini wrote its
        arguments in plain text and nothing in them is ciphertext, which Codex then delivers as
        plain text (openai/codex PR #35845) instead of as an `encrypted_content` part."""
        item: dict[str, Any] = {"id": ids.function_item_id(), "type": "function_call", "status": "in_progress",
                                "call_id": call_id, "name": ref.name, "arguments": ""}
        if ref.namespace:
            item["namespace"] = ref.namespace
        if gemini_name in self._tools.encrypted_params():
            item["encrypted_function_args"] = []
        return item

    def _custom_call(self, call_id: str, ref: ToolRef, args: dict[str, Any]) -> list[Event]:
        """A custom tool's call: its free-form input goes back as text, not JSON."""
        text = args.get("input")
        text = text if isinstance(text, str) else json.dumps(args, ensure_ascii=False)
        item = {"id": "ctc_" + ids.function_item_id()[3:], "type": "custom_tool_call", "call_id": call_id,
                "name": ref.name, "input": ""}
        if ref.namespace:
            item["namespace"] = ref.namespace
        events = self._add_item(item)
        events.append(ResponseCustomToolCallInputDeltaEvent(
            type="response.custom_tool_call_input.delta", sequence_number=self._next(), item_id=item["id"],
            output_index=self._index, delta=text))
        events.append(ResponseCustomToolCallInputDoneEvent(
            type="response.custom_tool_call_input.done", sequence_number=self._next(), item_id=item["id"],
            output_index=self._index, input=text))
        return events + self._done_item({**item, "input": text})

    # -- items --------------------------------------------------------------------------------

    @property
    def _index(self) -> int:
        return len(self.response["output"]) - 1

    def _add_item(self, item: dict[str, Any]) -> list[Event]:
        self.response["output"].append(self._copy(item))
        return [ResponseOutputItemAddedEvent(
            type="response.output_item.added", sequence_number=self._next(), output_index=self._index,
            item=self._copy(item))]

    def _done_item(self, item: dict[str, Any], index: int | None = None) -> list[Event]:
        index = self._index if index is None else index
        self.response["output"][index] = item
        return [ResponseOutputItemDoneEvent(
            type="response.output_item.done", sequence_number=self._next(), output_index=index, item=self._copy(item))]

    def _copy(self, item: dict[str, Any]) -> dict[str, Any]:
        """An item as it is now, for an event a caller may keep. Every item is built fresh and
        replaced (never changed) when it is done; only `_annotate` reaches into a done message, after
        its events were written. So the server (no snapshots) shares one dict."""
        return copy.deepcopy(item) if self._snapshots else item

    def _close_open(self) -> list[Event]:
        if self._open is None:
            return []
        item, self._open = self._open, None
        text = "".join(item.pop("_text"))  # joined once: linear in the answer
        if item["type"] == "message":
            annotations = item.pop("_annotations", [])
            part = {"type": "output_text", "text": text, "annotations": annotations}
            events: list[Event] = [ResponseOutputTextAnnotationAddedEvent(
                type="response.output_text.annotation.added", sequence_number=self._next(), item_id=item["id"],
                output_index=self._index, content_index=0, annotation_index=n,
                annotation=a) for n, a in enumerate(annotations)]
            events += [
                ResponseTextDoneEvent(
                    type="response.output_text.done", sequence_number=self._next(), item_id=item["id"],
                    output_index=self._index, content_index=0, text=text, logprobs=[]),
                ResponseContentPartDoneEvent(
                    type="response.content_part.done", sequence_number=self._next(), item_id=item["id"],
                    output_index=self._index, content_index=0, part=part),
            ]
            return events + self._done_item({**item, "status": "completed", "content": [part]})
        summary = {"type": "summary_text", "text": text}
        events = [
            ResponseReasoningSummaryTextDoneEvent(
                type="response.reasoning_summary_text.done", sequence_number=self._next(), item_id=item["id"],
                output_index=self._index, summary_index=0, text=text),
            ResponseReasoningSummaryPartDoneEvent(
                type="response.reasoning_summary_part.done", sequence_number=self._next(), item_id=item["id"],
                output_index=self._index, summary_index=0, part=summary),
        ]
        return events + self._done_item({**item, "summary": [summary]})

    def _snapshot(self) -> dict[str, Any]:
        return fast_json.clone(self.response) if self._snapshots else self.response

    def _next(self) -> int:
        """The next event's sequence_number (each event takes one, in the order they are made)."""
        seq = self._seq
        self._seq += 1
        return seq

