"""Responses `input` items -> Gemini `contents` + `systemInstruction` parts.

Pairing rules (docs/wire.md#gemini-pairing): every model turn with calls is
followed by one user turn holding one functionResponse per call, in call order, each echoing the
call's Gemini id; outputs for unknown call ids and calls without outputs are 400s in OpenAI's words.
"""

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from proxy import fast_json
from proxy.errors import PairingError, ProxyError
from proxy.from_gemini.server_tools import server_part_key
from proxy.signatures.call_record import CallRecord, function_call_part
from proxy.signatures.sentinel import requires_signatures, sign_unsigned_turns
from proxy.to_gemini import kept_conversion
from proxy.to_gemini.agent_message import agent_message_text
from proxy.to_gemini.conversation import Conversation
from proxy.to_gemini.kept_conversion import Snapshot, private_contents, private_part
from proxy.to_gemini.media import MEDIA_PARTS, media_part
from proxy.to_gemini.repair_history import Survey, repair_history
from proxy.to_gemini.tool_result_media import response_with_media
from proxy.tools.deferral import SEARCH_TYPE, found_tools
from proxy.tools.tool_names import ToolNames
from proxy.wire.json_body import NOT_PLAIN, param_path, parse_arguments, plain_arguments
from proxy.wire.resent_items import ResentItems
from proxy.wire.responses import (
    ITEM_LISTS,
    ITEM_MODELS,
    AgentMessageItem,
    CompactionItem,
    CustomToolCallItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputItem,
    MessageItem,
    ToolSearchCallItem,
    ToolSearchOutputItem,
    WebSearchCallItem,
    wire_of,
)


def parse_input(raw: str | list[Any]) -> list[InputItem]:
    """Check raw `input` and read it as typed items; a bad item is a 400 naming its index. The items of
    each kind are checked together (wire/responses.py ITEM_LISTS), then put back in their order. An
    item of ResentItems checked here before (the same client's same text) is not checked again."""
    if isinstance(raw, str):
        return [MessageItem(role="user", content=raw)]
    resent = raw.kept if type(raw) is ResentItems else None
    items: list[Any] = [None] * len(raw)
    kinds: dict[type, list[int]] = {}  # each kind's items to check, by their index in the input
    for i, item in enumerate(raw):
        if resent is not None:
            typed = resent[i].checked.get(INPUT_ITEM)
            if typed is not None:
                items[i] = typed
                continue
        if not isinstance(item, dict):
            raise ProxyError(f"Invalid type for 'input[{i}]': expected an object.", param=f"input[{i}]",
                             code="invalid_type")
        kind = item.get("type", "message")
        model = ITEM_MODELS.get(kind) if type(kind) is str else None
        if model is None:
            raise ProxyError(f"Invalid value for 'input[{i}].type': {kind!r} is not a supported input item type.",
                             param=f"input[{i}].type", code="invalid_value")
        at = kinds.get(model)
        if at is None:
            kinds[model] = [i]
        else:
            at.append(i)
    if len(kinds) <= 1 and resent is None:  # one kind (a conversation of messages): the list as it is
        model = next(iter(kinds), MessageItem)
        try:
            return list(map(model, ITEM_LISTS[model].validate_python(raw)))
        except ValidationError as e:
            raise _refusal(e, range(len(raw)), raw)[1] from None
    refusals = []
    for model, at in kinds.items():
        try:
            for i, item in zip(at, ITEM_LISTS[model].validate_python([raw[i] for i in at]), strict=True):
                items[i] = model(item)
        except ValidationError as e:
            refusals.append(_refusal(e, at, raw))
    if refusals:  # the first bad item's
        raise min(refusals, key=lambda r: r[0])[1] from None
    if resent is not None:  # checked: the next request's same text is not checked again
        for at in kinds.values():
            for i in at:
                resent[i].checked[INPUT_ITEM] = items[i]
    return items


# What parse_input keeps in a resent item's `checked` (its typed item).
INPUT_ITEM = "responses.input"


def own_items(items: list[dict[str, Any]]) -> list[InputItem]:
    """Items the proxy made itself, of messages checked in their own API's terms (chat/to_items.py,
    anthropic/to_items.py), read as typed items without a second check (parse_input's cost 60 us for
    50 messages)."""
    return [ITEM_MODELS[item["type"]](item) for item in items]


def _refusal(e: ValidationError, at: Any, raw: list[Any]) -> tuple[int, ProxyError]:
    """The index and 400 of a group's first bad item, at its most specific error (a union's member
    that went deepest: `content[0]` of a list of parts, not `content` as a string); `at`: each
    item's index in the input."""
    errors = e.errors()
    first = min(err["loc"][0] for err in errors)
    err = max((err for err in errors if err["loc"][0] == first), key=lambda err: len(err["loc"]))
    j, *loc = err["loc"]  # (index in the group, the field's path in the item)
    i = at[j]
    where = param_path({"input": raw}, ("input", i, *loc))  # (without a union member's tag)
    return i, ProxyError(f"Invalid '{where}': {err['msg']}.", param=where, code="invalid_value")


# Content parts that carry text; media (input_image, input_file, input_audio) become inlineData /
# fileData (media.py); anything else is refused with a 400 naming it, never reduced to its text.
TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")


def _parts_of(content: str | list[dict[str, Any]], where: str, media: bool = True) -> list[dict[str, Any]]:
    """Gemini parts for a message's content, in order; `media=False` where Gemini takes only text."""
    if isinstance(content, str):
        return [{"text": content}]
    parts: list[dict[str, Any]] = []
    for j, p in enumerate(content):
        kind = p.get("type") if isinstance(p, dict) else None
        kind = kind if isinstance(kind, str) else None
        if kind in TEXT_PARTS and isinstance(p.get("text"), str):
            parts.append({"text": p["text"]})
        elif kind == "refusal" and isinstance(p.get("refusal"), str):
            parts.append({"text": p["refusal"]})
        elif media and isinstance(p, dict) and kind in MEDIA_PARTS:
            converted = media_part(p, f"{where}[{j}]")
            assert converted is not None
            parts.append(converted)
        else:
            what = "not supported by this proxy" if not (isinstance(p, dict) and kind in MEDIA_PARTS) else (
                "only text here: Gemini takes images and files in user messages and tool results")
            raise ProxyError(f"Content parts of type {kind!r} are {what} ('{where}[{j}]'); the request is refused "
                             "rather than sent without it.", param=f"{where}[{j}]", code="unsupported_content")
    return parts


def _text_of(content: str | list[dict[str, Any]], where: str) -> list[str]:
    return [p["text"] for p in _parts_of(content, where, media=False)]


class _Builder:
    def __init__(self, prior: Conversation, calls: Mapping[str, CallRecord], names: ToolNames) -> None:
        self.contents = [dict(c) for c in prior.contents]
        self.system = list(prior.system)
        self.calls = dict(calls)
        self.names = names
        # (call_id, gemini name, gemini id) of the latest model turn's calls, awaiting outputs.
        self.pending: list[tuple[str, str, str | None]] = []
        if prior.pending and self.contents and self.contents[-1].get("role") == "model":
            fcs = [p["functionCall"] for p in self.contents[-1]["parts"] if "functionCall" in p]
            self.pending = [(cid, fc.get("name", ""), fc.get("id")) for cid, fc in zip(prior.pending, fcs,
                                                                                          strict=False)]
        self.outputs: dict[str, dict[str, Any]] = {}
        self.model_open = False
        self.looked_up: dict[Any, CallRecord | None] = {}  # each call record asked for, as found (kept_conversion.py)
        self.search = ""  # the latest tool search, which an output without a call_id answers (hosted search)

    def _record(self, call_id: Any) -> CallRecord | None:
        rec = self.looked_up[call_id] = self.calls.get(call_id)
        return rec

    def resume(self, state: Snapshot) -> None:
        """Continue after a kept state's items. Its turns and outputs are shared, but for its last turn's
        dict and parts list (the next items may still grow that turn); input_to_contents copies them
        before any repair that could change them in place."""
        self.contents = [*state.contents[:-1], *({**c, "parts": list(c["parts"])} for c in state.contents[-1:])]
        self.system = [dict(p) for p in state.system]
        self.pending = list(state.pending)
        self.outputs = dict(state.outputs)
        self.model_open = state.model_open
        self.looked_up = dict(state.records)
        self.search = state.search

    def state(self, items: list[InputItem], resumed: Snapshot | None) -> Snapshot:
        """This builder's state after `items`, to keep (before finish, and before the repairs change
        the contents). The turns of the state it resumed that the items after it could not change
        (all but its last: only the latest turn grows) are shared with that state."""
        same = len(resumed.contents) - 1 if resumed is not None and resumed.contents else 0
        contents = (resumed.contents[:same] if resumed is not None else []) + private_contents(self.contents[same:])
        added = Survey(contents[same:-1])  # (the turns that joined the head, surveyed once)
        head = resumed.head.joined(added) if resumed is not None else added
        return Snapshot(list(items), dict(self.names.to_gemini_map), dict(self.looked_up), contents,
                        [dict(p) for p in self.system], list(self.pending),
                        {cid: private_part(p) for cid, p in self.outputs.items()}, self.model_open, self.search, head)

    def _model_parts(self) -> list[dict[str, Any]]:
        if not self.model_open:
            if self.pending:  # (asked only then: most model turns come after the outputs were closed)
                self._close_outputs()
            self.contents.append({"role": "model", "parts": []})
            self.model_open = True
        return self.contents[-1]["parts"]

    def _close_outputs(self) -> None:
        """Emit the user turn answering the pending calls (all of them, in call order)."""
        if not self.pending:
            return
        missing = [cid for cid, _, _ in self.pending if cid not in self.outputs]
        if missing:
            raise PairingError(f"No tool output found for function call {missing[0]}.", param="input",
                               call_id=missing[0], missing_output=True)
        self.contents.append({"role": "user", "parts": [self.outputs[cid] for cid, _, _ in self.pending]})
        self.pending, self.outputs = [], {}

    def message(self, item: MessageItem, index: int) -> None:
        wire = wire_of(item)  # (its fields read from the dict: a field read through a property is a call)
        role, content = wire.get("role"), wire.get("content")
        if role in ("system", "developer", "assistant"):  # text only
            texts = [content] if type(content) is str else _text_of(content, f"input[{index}].content")
            if role != "assistant":
                self.system += [{"text": t} for t in texts]
                return
            if self.pending and not self.model_open:
                self._close_outputs()
            self._model_parts().extend([{"text": t} for t in texts if t])
            return
        parts = [{"text": content}] if type(content) is str else _parts_of(content, f"input[{index}].content")
        self.model_open = False
        if self.pending:
            self._close_outputs()
        self.contents.append({"role": "user", "parts": parts or [{"text": ""}]})

    def function_call(self, item: FunctionCallItem | CustomToolCallItem, index: int) -> None:
        wire = wire_of(item)
        if type(item) is CustomToolCallItem:
            args: Any = {"input": wire.get("input")}  # a custom tool is offered to Gemini as f(input: string)
        else:
            text = wire.get("arguments")
            args = plain_arguments(text)
            if args is NOT_PLAIN:
                try:  # (blank: `not isspace()`, which is `strip()` without a copy of the text)
                    args = parse_arguments(text, f"input[{index}].arguments") if text and not text.isspace() else {}
                except json.JSONDecodeError:
                    args = None
        if not isinstance(args, dict):
            raise ProxyError(f"Invalid 'input[{index}].arguments': expected a JSON object encoded as a string.",
                             param=f"input[{index}].arguments", code="invalid_value")
        if self.pending and not self.model_open:
            self._close_outputs()
        call_id = wire.get("call_id")
        rec = self._record(call_id)
        if rec is None:  # history the proxy never saw: the call_id is the id
            gemini_name = self.names.to_gemini(wire.get("name"), wire.get("namespace"))
            self._model_parts().append(function_call_part(gemini_name, call_id, args))
            self.pending.append((call_id, gemini_name, call_id))
            return
        self._server_parts(rec.server_parts)
        self._model_parts().append(rec.part(args))  # Gemini's own arguments and signature when known
        self.pending.append((call_id, rec.gemini_name, rec.gemini_id))

    def web_search(self, item: WebSearchCallItem, index: int) -> None:
        """A search Gemini ran: its toolCall/toolResponse parts go back exactly as they came."""
        rec = self._record(item.id)
        if rec is None or not rec.hosted:
            raise ProxyError(f"Input item 'input[{index}]' (web_search_call '{item.id}') is not a search this proxy "
                             "has a record of (another provider's, or its record expired): Gemini's search cannot be "
                             "replayed without it. Replay the reasoning item that came with it (include "
                             "reasoning.encrypted_content) or use previous_response_id.", param=f"input[{index}]",
                             code="invalid_value")
        if self.pending and not self.model_open:
            self._close_outputs()
        self._server_parts(rec.server_parts)

    def _server_parts(self, parts: list[dict[str, Any]] | None) -> None:
        """Server-side tool parts into the model turn, each once (a web_search_call item and the next
        call's record both hold them)."""
        if not parts:
            return
        turn = self._model_parts()
        present = {server_part_key(p) for p in turn}
        turn.extend(fast_json.copied(p) for p in parts if server_part_key(p) not in present)

    def function_output(self, item: FunctionCallOutputItem, index: int) -> None:
        self.model_open = False
        sent = wire_of(item)  # with fields of Interactions' function_result that Responses does not declare
        call_id = sent.get("call_id")
        for match in self.pending:
            if match[0] == call_id:
                break
        else:
            raise PairingError(f"No tool call found for function call output with call_id {call_id}.",
                               param="input", call_id=call_id)
        _, gname, gid = match
        output = sent.get("output")
        if type(output) is str:  # (most results: one text)
            text, media = output, []
        else:
            parts = _parts_of(output, f"input[{index}].output")
            text = "".join(p["text"] for p in parts if "text" in p)
            media = [p for p in parts if "text" not in p]
        error = sent.get("is_error") is True  # is_error puts the result on the error side,
        out = response_with_media(gname, gid, call_id, text, media, error)
        result = sent.get("result_object")
        if isinstance(result, dict):  # and an object result is Gemini's response as it is
            out["functionResponse"]["response"] = {"error": result} if error else result
        self.outputs[call_id] = out

    def tool_search(self, item: ToolSearchCallItem, call_id: str, index: int) -> None:
        """A tool search (run by the client or by the proxy) as the function call Gemini made."""
        name = item.wire().get("name") or SEARCH_TYPE  # (Anthropic's search tools have their own names)
        self.function_call(FunctionCallItem(type="function_call", call_id=call_id, name=name,
                                            arguments=json.dumps(item.arguments, ensure_ascii=False)), index)

    def tool_search_output(self, item: ToolSearchOutputItem, call_id: str, index: int) -> None:
        """What the search found, as its functionResponse: the found tools by the names they are
        declared under (deferral.py declares them on this request)."""
        self.model_open = False
        match = next((p for p in self.pending if p[0] == call_id), None)
        if match is None:
            raise PairingError(f"No tool search call found for tool_search_output with call_id {call_id}.",
                               param="input", call_id=call_id)
        _, gname, gid = match
        found = [{"name": self.names.to_gemini(name, space), "description": d.get("description") or ""}
                 for name, space, d in found_tools(item.tools)]
        error = item.wire().get("error")  # (Anthropic's search errors: tool_search_tool_result_error)
        fr: dict[str, Any] = {"name": gname, "response": {"error": error} if error else {"tools": found}}
        if gid:
            fr["id"] = gid
        self.outputs[call_id] = {"functionResponse": fr}

    def add(self, items: list[InputItem], start: int, stop: int) -> None:
        """items[start:stop], in order (each one's index names it in an error)."""
        plain = {MessageItem: self.message, FunctionCallItem: self.function_call,
                 CustomToolCallItem: self.function_call, FunctionCallOutputItem: self.function_output}
        for i in range(start, stop):  # (the kinds of most items, by their exact class, first)
            item = items[i]
            step = plain.get(type(item))
            if step is not None:
                step(item, i)
            elif isinstance(item, MessageItem):
                self.message(item, i)
            elif isinstance(item, ToolSearchCallItem):
                self.search = item.search_id or f"tool_search_{i}"
                self.tool_search(item, self.search, i)
            elif isinstance(item, ToolSearchOutputItem):
                self.tool_search_output(item, item.call_id or self.search, i)
            elif isinstance(item, FunctionCallItem | CustomToolCallItem):
                self.function_call(item, i)
            elif isinstance(item, FunctionCallOutputItem):
                self.function_output(item, i)
            elif isinstance(item, WebSearchCallItem):
                self.web_search(item, i)
            elif isinstance(item, AgentMessageItem):  # Codex MultiAgentV2: a user turn naming its author
                self.message(MessageItem(role="user", content=agent_message_text(item, i)), i)
            elif item.type == "item_reference":
                raise ProxyError("Input items of type 'item_reference' are not supported by this proxy; send the "
                                 "item itself or use previous_response_id.", param=f"input[{i}]")
            # reasoning items carry nothing Gemini needs here: signatures come from the call records;
            # compaction items went first.

    def finish(self) -> Conversation:
        if self.pending and self.outputs:
            self._close_outputs()
        elif self.pending:
            raise PairingError(f"No tool output found for function call {self.pending[0][0]}.", param="input",
                               call_id=self.pending[0][0], missing_output=True)
        return Conversation(self.contents, self.system, [])


def unopened_compaction(i: int) -> ProxyError:
    """The 400 for a compaction item, input[i], this deployment cannot open (nothing is dropped silently)."""
    return ProxyError(f"The compaction item input[{i}] does not open here: it was made by another client or "
                      "deployment, altered, or sealed under a retired key.", param=f"input[{i}].encrypted_content",
                      code="invalid_encrypted_content")


# How a compaction's summary reads to the model that continues the conversation.
SUMMARY_INTRO = "[Summary of the earlier part of this conversation, compacted]\n"


def input_to_contents(
    items: list[InputItem],
    *,
    prior: Conversation | None = None,
    calls: Mapping[str, CallRecord] | None = None,
    names: ToolNames | None = None,
    model: str = "",
    result_parts: bool | None = None,
    summaries: Mapping[str, str] | None = None,
    scope: str | None = None,
) -> Conversation:
    """Append `items` to `prior` (a stored conversation, for previous_response_id).

    `calls` holds what the proxy remembers of earlier calls (Gemini names, ids, signatures) by
    call_id; history the proxy never saw is accepted too, with the call_id standing in as the id.
    `result_parts` says whether the model takes media in functionResponse.parts (None: the default
    for the model, tool_result_media.py). `summaries` holds the opened compaction items' summaries by
    their encrypted_content: each becomes a user turn before everything else. `scope`: the client's,
    when `items` are its kept resent items (wire/resent_items.py): a history that continues one it sent
    before is converted from where that one ended (kept_conversion.py).
    """
    b = _Builder(prior or Conversation(), calls or {}, names or ToolNames())
    resumed, start = None, 0
    if prior is not None:  # (a stored conversation's turn: its history is the store's, not resent)
        scope = None
    for i, item in enumerate(items):  # a compaction stands for what came before all of it: its summary first
        if isinstance(item, CompactionItem):
            scope = None  # (its summary goes first: no kept state begins so)
            summary = (summaries or {}).get(item.encrypted_content)
            if summary is None:
                raise unopened_compaction(i)
            if summary:
                b.message(MessageItem(role="user", content=SUMMARY_INTRO + summary), i)
    if scope is not None:
        resumed = kept_conversion.find(scope, items, b.calls, b.names.to_gemini_map)
        if resumed is not None:
            b.resume(resumed)
            start = len(resumed.items)
    last = len(items) - 1  # The state kept is the one before the last item, which a client's next turn may
    if scope is not None and start < last and last >= kept_conversion.MIN_ITEMS:  # send changed (Claude Code
        b.add(items, start, last)  # moves its cache breakpoint to the newest message)
        kept_conversion.keep(scope, b.state(items[:last], resumed), resumed)
        start = last
    b.add(items, start, len(items))
    conv = b.finish()
    # A resumed history's survey: its kept head's, and the turns after (the head's last may have grown).
    survey = resumed.head.joined(Survey(conv.contents[max(len(resumed.contents) - 1, 0):])) if resumed else None
    if resumed is not None or prior is not None:  # turns shared with a kept state or a stored conversation:
        survey = survey or Survey(conv.contents)  # copied when a repair or the sentinel could change one in place
        if survey.in_place(model, result_parts, signs=requires_signatures(model)):
            conv.contents = private_contents(conv.contents)
    conv.contents = repair_history(conv.contents, model, result_parts=result_parts, survey=survey)
    sign_unsigned_turns(conv.contents, model)
    return conv


def fresh_state(items: list[InputItem], calls: Mapping[Any, CallRecord], names: Mapping[str, str]) -> Snapshot:
    """What a fresh conversion of `items` leaves, as kept_conversion keeps it: tests/shared_tools_check.py
    holds every kept state to it."""
    tool_names = ToolNames()
    tool_names.to_gemini_map = dict(names)
    b = _Builder(Conversation(), calls, tool_names)
    b.add(items, 0, len(items))
    return b.state(items, None)
