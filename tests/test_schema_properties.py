"""Property tests (hypothesis): any JSON Schema converts to something the strict mock accepts, in both
modes, and argument data in history is never altered on the way."""

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.errors import ProxyError
from proxy.mock.validate import validate_request
from proxy.session.tool_context import apply_tool_context
from proxy.to_gemini.input_to_contents import input_to_contents, parse_input
from proxy.tools.prepare_tools import prepare_tools

NAMES = st.sampled_from(["a", "b", "type", "properties", "format", "items", "$ref", "title", "x-y", "default"])
SCALARS = st.sampled_from(["string", "integer", "number", "boolean", "null"])
FINITE = st.floats(allow_nan=False, allow_infinity=False)  # arguments are JSON (non-finite: the 400 test below)
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | FINITE | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
                           max_leaves=8)


def _leaf() -> st.SearchStrategy:
    return st.one_of(
        st.builds(lambda t: {"type": t}, SCALARS),
        st.builds(lambda ts: {"type": ts}, st.lists(SCALARS, min_size=1, max_size=3, unique=True)),
        st.builds(lambda vs: {"enum": vs}, st.lists(st.one_of(st.text(max_size=4), st.integers(), st.none(),
                                                              st.booleans()), min_size=1, max_size=4)),
        st.builds(lambda v: {"const": v}, st.one_of(st.text(max_size=4), st.integers(), st.booleans())),
        st.builds(lambda f: {"type": "string", "format": f}, st.sampled_from(["uri", "date-time", "uuid", "email"])),
        st.builds(lambda lo, hi: {"type": "integer", "minimum": lo, "maximum": hi, "exclusiveMinimum": lo},
                  st.integers(-5, 0), st.integers(1, 9)),
        st.just({}), st.just({"$ref": "#/$defs/Node"}), st.just({"type": "array"}),
    )


def _schemas() -> st.SearchStrategy:
    return st.recursive(_leaf(), lambda inner: st.one_of(
        st.builds(lambda props, req, extra: {"type": "object", "properties": props, "required": req,
                                             "additionalProperties": extra},
                  st.dictionaries(NAMES, inner, max_size=4), st.lists(NAMES, max_size=3),
                  st.one_of(st.booleans(), inner)),
        st.builds(lambda items, u: {"type": "array", "items": items, "uniqueItems": u}, inner, st.booleans()),
        st.builds(lambda bs: {"anyOf": bs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda bs: {"oneOf": bs + [{"type": "null"}]}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda bs: {"allOf": bs}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda s, d: {**s, "description": d}, inner, st.text(max_size=6)),
    ), max_leaves=12)


ROOTS = st.builds(lambda props, node: {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": props,
    "$defs": {"Node": {"type": "object", "properties": {"value": node, "next": {"$ref": "#/$defs/Node"}}}}},
    st.dictionaries(NAMES, _schemas(), max_size=5), _schemas())


def _request(tools: list) -> dict:
    return {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": tools}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=ROOTS, json_mode=st.booleans())
def test_any_schema_converts_to_an_accepted_declaration(schema: dict, json_mode: bool) -> None:
    before = copy.deepcopy(schema)
    prepared = prepare_tools([{"type": "function", "name": "f", "parameters": schema}], json_schema_mode=json_mode)
    assert schema == before, "the client's schema is not modified"
    for model in ("gemini-2.5-flash", "gemini-3-pro-preview"):
        validate_request(_request(prepared.gemini_tools()), model)


@settings(max_examples=200, deadline=None)
@given(args=st.dictionaries(NAMES, JSON_VALUES, max_size=5), output=st.text(max_size=10))
def test_arguments_and_outputs_are_never_altered(args: dict, output: str) -> None:
    items = [{"role": "user", "content": "go"},
             {"type": "function_call", "call_id": "c1", "name": "f", "arguments": json.dumps(args)},
             {"type": "function_call_output", "call_id": "c1", "output": output}]
    tools = prepare_tools([{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {
        "type": {"type": ["string", "null"]}}, "additionalProperties": False}}])
    conv = input_to_contents(parse_input(items), names=tools.names, model="gemini-3-pro-preview")
    assert conv.contents[1]["parts"][0]["functionCall"]["args"] == args
    body = apply_tool_context({"contents": conv.contents, "tools": tools.gemini_tools()}, None, "gemini-3-pro-preview")
    assert body["contents"][1]["parts"][0]["functionCall"]["args"] == args
    assert body["contents"][2]["parts"][0]["functionResponse"]["response"] == {"output": output}


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "1e999", "-1e400"])
def test_non_finite_arguments_are_a_400_naming_the_item(number: str) -> None:
    """Arguments are JSON: NaN and infinity are refused with the item named (issue 23 item 9: one path
    kept Infinity, another wrote null)."""
    items = [{"role": "user", "content": "go"},
             {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": ' + number + '}'},
             {"type": "function_call_output", "call_id": "c1", "output": "x"}]
    with pytest.raises(ProxyError) as e:
        input_to_contents(parse_input(items), names=prepare_tools([{"type": "function", "name": "f"}]).names,
                          model="gemini-3-pro-preview")
    assert e.value.status == 400 and e.value.param == "input[1].arguments" and number.lstrip("-")[:3] in str(e.value)
