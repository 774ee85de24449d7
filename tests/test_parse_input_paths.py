"""parse_input: what it gives (items, their wire, their `type`, a slot read when the item is made) and
what it refuses (the 400 of the first bad item, word for word) are those of the plain loop kept here
as the reference, whatever shortcut parse_input takes."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from proxy.errors import ProxyError
from proxy.to_gemini.input_to_contents import _refusal, parse_input
from proxy.wire.responses import ITEM_LISTS, ITEM_MODELS


def reference(raw: list[Any]) -> list[Any]:
    """parse_input as it was: every item's kind first, then each item checked alone, in order (the
    first bad one refused). parse_input checks each kind's items together; the outcome must be this."""
    models = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ProxyError(f"Invalid type for 'input[{i}]': expected an object.", param=f"input[{i}]",
                             code="invalid_type")
        kind = item.get("type", "message")
        model = ITEM_MODELS.get(kind) if type(kind) is str else None
        if model is None:
            raise ProxyError(f"Invalid value for 'input[{i}].type': {kind!r} is not a supported input item type.",
                             param=f"input[{i}].type", code="invalid_value")
        models.append(model)
    items = []
    for i, (model, item) in enumerate(zip(models, raw, strict=True)):
        try:
            items.append(model(ITEM_LISTS[model].validate_python([item])[0]))
        except ValidationError as e:
            raise _refusal(e, [i], raw)[1] from None
    return items


class Kind(str):
    """A string of another type: never a kind (parse_input's items come from JSON, but the rule holds)."""


GOOD = [
    {"role": "user", "content": "hi"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}], "x": 1},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "custom_tool_call", "call_id": "c2", "name": "g", "input": "x"},
    {"type": "function_call_output", "call_id": "c1", "output": "done"},
    {"type": "custom_tool_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "t"}]},
    {"type": "reasoning", "summary": []},
    {"type": "web_search_call", "id": "ws_1"},
]
BAD = [
    5, None, "text", [1], {"type": 3}, {"type": ["message"]}, {"type": {"a": 1}}, {"type": None},
    {"type": "nope"}, {"type": Kind("message"), "role": "user", "content": "x"},
    {"role": "robot", "content": "x"}, {"type": "function_call", "call_id": "c", "name": "f"},
    {"type": "function_call", "call_id": 7, "name": "f", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c", "output": 3},
]


def _outcome(f: Any, raw: list[Any]) -> Any:
    try:
        items = f(raw)
    except ProxyError as e:
        return ("refused", e.message, e.param, e.code)
    return [(type(i), i.type, list(i.wire().items())) for i in items]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(range(len(GOOD) + len(BAD))), max_size=12))
def test_parse_input_is_the_plain_loop(picks: list[int]) -> None:
    raw = [(GOOD + BAD)[p] for p in picks]
    assert _outcome(parse_input, raw) == _outcome(reference, raw)


@pytest.mark.parametrize("raw, param", [
    ([GOOD[0], 5, {"type": "nope"}], "input[1]"),
    ([GOOD[2], {"type": "nope"}, 5], "input[1].type"),
    ([GOOD[2], GOOD[4], {"type": Kind("message"), "role": "user", "content": "x"}], "input[2].type"),
    ([GOOD[2], {"type": "function_call_output", "call_id": "c", "output": 3}, BAD[11]], "input[1].output"),
])
def test_the_first_bad_item_is_named(raw: list[Any], param: str) -> None:
    with pytest.raises(ProxyError) as e:
        parse_input(raw)
    assert e.value.param == param


def test_items_come_back_in_their_order() -> None:
    items = parse_input(GOOD)
    assert [i.wire() for i in items] == GOOD
    assert [i.type for i in items] == ["message", "message", "function_call", "custom_tool_call",
                                      "function_call_output", "custom_tool_call_output", "reasoning",
                                      "web_search_call"]


@pytest.mark.parametrize("arguments, args, param", [
    ('{"a": [1, "x"]}', {"a": [1, "x"]}, None), (" {} ", {}, None), ("", {}, None), ("  \n", {}, None),
    ('{"n": NaN}', None, "input[1].arguments"), ('{"n": 1e400}', None, "input[1].arguments"),
    ("[1]", None, "input[1].arguments"), ("not json", None, "input[1].arguments"),
    ('{"big": 123456789012345678901234567890}', {"big": 123456789012345678901234567890}, None),
])
def test_a_call_s_arguments(arguments: str, args: Any, param: str | None) -> None:
    from proxy.to_gemini.input_to_contents import input_to_contents

    items = parse_input([{"role": "user", "content": "hi"},
                         {"type": "function_call", "call_id": "c1", "name": "f", "arguments": arguments},
                         {"type": "function_call_output", "call_id": "c1", "output": "ok"}])
    if param is None:
        conv = input_to_contents(items)
        assert conv.contents[1]["parts"][0]["functionCall"]["args"] == args
    else:
        with pytest.raises(ProxyError) as e:
            input_to_contents(items)
        assert e.value.param == param
