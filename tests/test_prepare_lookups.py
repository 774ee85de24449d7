"""Context.prepare's steps on a large request, made cheaper: the ids of the calls the input refers to
(read from each item's dict), whether a tools text seen before defers any tool (worked out once per
text), the journal's notes of where each call's record came from (added at once). Each gives what
the plain way gave."""

from typing import Any

import pytest

from proxy.journal.exchange import MAX_NOTES, Exchange
from proxy.signatures.call_record import CallRecord
from proxy.tools.deferral import split_deferred
from proxy.wire.responses import (
    CustomToolCallItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    MessageItem,
    ReasoningItem,
    ToolSearchCallItem,
    ToolSearchOutputItem,
    WebSearchCallItem,
    referred_ids,
)
from proxy.wire.shared_tools import SharedTools

REFERRING = (FunctionCallItem, CustomToolCallItem, FunctionCallOutputItem, WebSearchCallItem, ToolSearchCallItem)


def plain(items: list) -> list:
    return [i.id if isinstance(i, WebSearchCallItem) else i.search_id if isinstance(i, ToolSearchCallItem)
            else i.call_id for i in items if isinstance(i, REFERRING)]


def test_referred_ids_are_the_plain_comprehension_s() -> None:
    items = [MessageItem(role="user", content="x"),
             FunctionCallItem({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}),
             CustomToolCallItem({"type": "custom_tool_call", "call_id": "c2", "name": "g", "input": ""}),
             FunctionCallOutputItem({"type": "function_call_output", "call_id": "c1", "output": "o"}),
             FunctionCallOutputItem({"type": "custom_tool_call_output", "call_id": "c2", "output": "o"}),
             ReasoningItem({"type": "reasoning", "id": "rs_1"}),
             WebSearchCallItem({"type": "web_search_call", "id": "ws_1"}),
             ToolSearchCallItem({"type": "tool_search_call", "arguments": {}, "call_id": None, "id": "ts_1"}),
             ToolSearchCallItem({"type": "tool_search_call", "arguments": {}, "call_id": "tc_1"}),
             ToolSearchOutputItem({"type": "tool_search_output", "tools": [], "call_id": "tc_1"}),
             FunctionCallItem(type="function_call", name="f", arguments="{}")]  # the proxy's own, no call_id
    assert referred_ids(items) == plain(items) == ["c1", "c2", "c1", "c2", "ws_1", "ts_1", "tc_1", None]


DEFERRED = [{"type": "function", "name": "a"},
            {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "b", "defer_loading": True}]}]
PLAIN = [{"type": "function", "name": "a"}, {"type": "namespace", "name": "ns", "tools": [{"name": "b"}]}]


def test_a_shared_tools_text_says_once_whether_it_defers() -> None:
    for tools in (DEFERRED, PLAIN):
        shared = SharedTools(tools, b"text")
        for _ in range(2):  # the first works it out, the second reads it
            now, deferral = split_deferred(shared)
            want_now, want_deferral = split_deferred(list(tools))
            assert now == want_now and (deferral is None) == (want_deferral is None)
            assert shared.facts["any_deferred"] is (want_deferral is not None)
    shared = SharedTools(PLAIN, b"text")
    shared.facts["any_deferred"] = True  # what is kept is what is read
    assert split_deferred(shared)[1] is not None


def _notes_as_before(ex: Any, carried: dict, stored: dict, asked: list) -> None:
    """context._note_preparation's call notes as they were written, one ex.note each."""
    from proxy.server.context import NOTED_CALLS

    ids = list(dict.fromkeys(asked))
    older, latest = ids[:-NOTED_CALLS], ids[-NOTED_CALLS:]
    if older:
        found = sum(1 for i in older if i in stored or i in carried)
        ex.note("signature", f"{len(older)} earlier call(s): {found} record(s) restored (store or carrier), "
                             f"{len(older) - found} sent with the sentinel where Gemini needs one",
                call_ids=older[:200])
    for call_id in latest:
        record = stored.get(call_id) or carried.get(call_id)
        if record is None:
            ex.note("signature", f"call {call_id}: no record (store or carrier); sent with the sentinel "
                                 "signature where Gemini needs one", call_id=call_id, source="none")
            continue
        source = "store" if call_id in stored else "carrier"
        signed = bool(record.signature)
        ex.note("signature", f"call {call_id}: record restored from the {source}"
                             + (" with its thought signature" if signed else " (it had no signature)"),
                call_id=call_id, source=source, signed=signed)


@pytest.mark.parametrize("asked", [[], ["a"], ["a", "b", "a"], [f"c{i}" for i in range(30)] * 2])
@pytest.mark.parametrize("before", [0, MAX_NOTES - 3, MAX_NOTES])
def test_the_preparation_s_call_notes_are_as_before(asked: list, before: int) -> None:
    from proxy.server.context import _note_preparation
    from proxy.tools.prepare_tools import prepare_tools

    prepared = prepare_tools([{"type": "function", "name": "f", "parameters": {"type": "object"}}])
    signed, unsigned = CallRecord("c3", "f", "f", None, "sig"), CallRecord("b", "f", "f", None, None)
    stored, carried = {"c3": signed, "c29": unsigned}, {"b": unsigned, "c28": signed, "c3": unsigned}
    new, old = Exchange(1, "x", "POST", "/"), Exchange(1, "x", "POST", "/")
    for ex in (new, old):
        for i in range(before):
            ex.note("other", f"n{i}")
    _note_preparation(new, prepared, carried, stored, asked)
    if not prepared.json_schema_mode:
        old.note_all(*prepared.schema_repair_notes())
    _notes_as_before(old, carried, stored, asked)
    assert new.notes == old.notes and [list(n) for n in new.notes] == [list(n) for n in old.notes]
