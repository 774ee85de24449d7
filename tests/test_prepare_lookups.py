"""Context.prepare's look-ups of a large request, made cheaper: the ids of the calls the input refers
to (read from each item's dict), and whether a tools text seen before defers any tool (worked out once
per text). Each gives what the plain way gave."""

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
