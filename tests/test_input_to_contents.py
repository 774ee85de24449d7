import pytest

from proxy.errors import ProxyError
from proxy.signatures.call_record import CallRecord
from proxy.signatures.sentinel import SENTINEL
from proxy.to_gemini.input_to_contents import input_to_contents, parse_input
from proxy.tools.tool_names import ToolNames


def convert(items, **kw):
    return input_to_contents(parse_input(items), **kw)


CALLS = [{"type": "function_call", "call_id": "a", "name": "f", "arguments": '{"x": 1}'},
         {"type": "function_call", "call_id": "b", "name": "g", "arguments": ""}]


def test_outputs_grouped_in_call_order_and_strings_wrapped() -> None:
    conv = convert([{"role": "developer", "content": "sys"}, {"role": "user", "content": "go"},
                    {"role": "assistant", "content": "calling"}, *CALLS,
                    {"type": "function_call_output", "call_id": "b", "output": [{"type": "input_text", "text": "B"}]},
                    {"type": "function_call_output", "call_id": "a", "output": "A"}])
    assert conv.system == [{"text": "sys"}]
    assert conv.contents == [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"text": "calling"}, {"functionCall": {"name": "f", "args": {"x": 1}, "id": "a"}},
                                    {"functionCall": {"name": "g", "args": {}, "id": "b"}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"output": "A"}, "id": "a"}},
                                   {"functionResponse": {"name": "g", "response": {"output": "B"}, "id": "b"}}]}]


def test_known_calls_use_geminis_names_ids_and_signatures() -> None:
    rec = CallRecord("call_1", "srv/tool", "srv_tool", None, "SIG")
    conv = convert([{"role": "user", "content": "go"},
                    {"type": "function_call", "call_id": "call_1", "name": "srv/tool", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "ok"}],
                   calls={"call_1": rec}, model="gemini-3-pro-preview")
    assert conv.contents[1]["parts"] == [{"functionCall": {"name": "srv_tool", "args": {}}, "thoughtSignature": "SIG"}]
    assert conv.contents[2]["parts"] == [{"functionResponse": {"name": "srv_tool", "response": {"output": "ok"}}}]


def test_foreign_gemini3_history_gets_the_sentinel_on_the_first_call_only() -> None:
    conv = convert([{"role": "user", "content": "go"}, *CALLS,
                    {"type": "function_call_output", "call_id": "a", "output": "1"},
                    {"type": "function_call_output", "call_id": "b", "output": "2"}],
                   names=ToolNames(), model="gemini-3-flash-preview")
    parts = conv.contents[1]["parts"]
    assert parts[0]["thoughtSignature"] == SENTINEL and "thoughtSignature" not in parts[1]
    conv = convert([{"role": "user", "content": "go"}, *CALLS,
                    {"type": "function_call_output", "call_id": "a", "output": "1"},
                    {"type": "function_call_output", "call_id": "b", "output": "2"}], model="gemini-2.5-flash")
    assert "thoughtSignature" not in conv.contents[1]["parts"][0]


@pytest.mark.parametrize(("items", "message"), [
    ([*CALLS, {"type": "function_call_output", "call_id": "a", "output": "1"}],
     "No tool output found for function call b."),
    ([{"type": "function_call_output", "call_id": "zzz", "output": "1"}],
     "No tool call found for function call output with call_id zzz."),
    ([CALLS[0], {"role": "user", "content": "next"}], "No tool output found for function call a."),
])
def test_pairing_errors(items, message) -> None:
    with pytest.raises(ProxyError) as info:
        convert([{"role": "user", "content": "go"}, *items])
    assert info.value.message == message and info.value.param == "input"


@pytest.mark.parametrize(("items", "param"), [
    # the first bad item by index, whatever its kind and whichever kind is validated first
    ([{"role": "user", "content": "a"}, {"type": "function_call", "call_id": "c", "name": "f", "arguments": 1},
      {"role": "user", "content": 2}], "input[1].arguments"),
    ([{"role": "user", "content": "a"}, {"type": "function_call_output", "call_id": "c", "output": "x"},
      {"role": "robot", "content": "b"}, {"type": "function_call", "call_id": 5, "name": "f", "arguments": ""}],
     "input[2].role"),
    ([{"role": "user", "content": "a"}, {"role": "user"}], "input[1].content"),
    ([{"type": "reasoning", "summary": "no"}, {"role": "user", "content": "a"}], "input[0].summary"),
])
def test_a_bad_item_is_named_by_its_index_in_the_input(items, param) -> None:
    with pytest.raises(ProxyError) as info:
        parse_input(items)
    assert info.value.param == param and info.value.status == 400
    assert info.value.message.startswith(f"Invalid '{param}': ")


def test_items_of_several_kinds_come_back_in_their_order() -> None:
    items = [{"role": "user", "content": "go"}, *CALLS, {"type": "reasoning", "summary": []},
             {"type": "function_call_output", "call_id": "a", "output": "A"}, {"role": "assistant", "content": "ok"},
             {"type": "custom_tool_call_output", "call_id": "b", "output": "B"}]
    parsed = parse_input(items)
    assert [type(i).__name__ for i in parsed] == ["MessageItem", "FunctionCallItem", "FunctionCallItem",
                                                  "ReasoningItem", "FunctionCallOutputItem", "MessageItem",
                                                  "FunctionCallOutputItem"]
    assert [i.wire() for i in parsed] == items
