"""The routes hand the core the tools as the client sent them, not a dump of the validated models:
strict validation changes nothing it accepts, so the two are equal. Proven here on every real tool
schema in ../shared/fixtures and on generated tools and items."""

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.to_gemini.input_to_contents import parse_input
from proxy.wire.chat import ChatRequest
from proxy.wire.responses import ResponsesRequest
from tests.conftest import fixture_tools

TOOLS = fixture_tools()


def dumped(models) -> list[dict]:
    """Models dumped as sent; the tools are checked as TypedDicts, which are dicts already, and the
    input items are read from theirs."""
    return [m if isinstance(m, dict) else m.model_dump(by_alias=True, exclude_unset=True)
            if hasattr(m, "model_dump") else m.wire() for m in models]


def test_fixture_tools_wire_as_sent() -> None:
    flat = [{"type": "function", "name": e["name"], "description": e.get("description"),
             "parameters": e.get("parameters"), "strict": False} for _, e in TOOLS]
    req = ResponsesRequest.model_validate({"model": "m", "input": "hi", "tools": flat})
    assert dumped(req.tools) == flat
    nested = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}} for t in flat]
    chat = ChatRequest.model_validate({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                       "tools": nested})
    assert dumped(chat.tools) == nested


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                         max_size=3), max_leaves=8)
items = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "developer"]),
                           "content": st.text(max_size=5)}, optional={"type": st.just("message"),
                                                                      "extra": json_values}),
    st.fixed_dictionaries({"type": st.just("function_call"), "call_id": st.text(max_size=5),
                           "name": st.text(max_size=5), "arguments": st.text(max_size=5)},
                          optional={"status": st.text(max_size=3), "x": json_values}),
    st.fixed_dictionaries({"type": st.sampled_from(["function_call_output", "custom_tool_call_output"]),
                           "call_id": st.text(max_size=5), "output": st.text(max_size=5)}))
tools = st.fixed_dictionaries({"type": st.just("function"), "name": st.text(min_size=1, max_size=5)},
                              optional={"parameters": st.dictionaries(st.text(max_size=4), json_values, max_size=3),
                                        "description": st.text(max_size=5), "strict": st.booleans(),
                                        "vendor_field": json_values})


@given(st.lists(items, max_size=4), st.lists(tools, max_size=3))
@settings(max_examples=200)
def test_wire_is_what_a_dump_gives(input_items, tool_list) -> None:
    req = ResponsesRequest.model_validate({"model": "m", "input": input_items, "tools": tool_list})
    assert dumped(req.tools) == tool_list
    parsed = parse_input(req.input)
    assert [i.wire() for i in parsed] == dumped(parsed) == input_items
