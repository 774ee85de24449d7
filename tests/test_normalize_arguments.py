"""Schema-aware argument normalization (docs/wire.md#dialects)."""

import json

import pytest

from proxy.schema.normalize_arguments import normalize_arguments

SCHEMA = {"type": "object", "required": ["path", "replaceAll", "count", "level"], "properties": {
    "path": {"type": "string"}, "replaceAll": {"type": "boolean"}, "count": {"type": "integer"},
    "ratio": {"type": "number"}, "zip": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
    "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
    "mode": {"enum": ["Fast", "Slow"]}, "maybe": {"type": ["integer", "null"]},
    "level": {"type": "integer", "default": 3}, "node": {"$ref": "#/$defs/N"}},
    "$defs": {"N": {"type": "object", "properties": {"n": {"type": "integer"}}}}}


@pytest.mark.parametrize(("args", "fixed"), [
    ({"replaceAll": "TRUE"}, {"replaceAll": True}),
    ({"count": "42"}, {"count": 42}),
    ({"count": 42.0}, {"count": 42}),
    ({"ratio": "4.5"}, {"ratio": 4.5}),
    ({"zip": 2134}, {"zip": "2134"}),
    ({"path": True}, {"path": "true"}),
    ({"tags": "solo"}, {"tags": ["solo"]}),
    ({"tags": '["a", "b"]'}, {"tags": ["a", "b"]}),
    ({"opts": '{"deep": "false"}'}, {"opts": {"deep": False}}),
    ({"mode": "fast"}, {"mode": "Fast"}),
    ({"maybe": "null"}, {"maybe": None}),
    ({"maybe": "7"}, {"maybe": 7}),
    ({"node": {"n": "5"}}, {"node": {"n": 5}}),
])
def test_type_fixes(args: dict, fixed: dict) -> None:
    base = {"path": "p", "replaceAll": False, "count": 1}
    out, errors = normalize_arguments({**base, **args}, SCHEMA)
    assert out == {**base, "level": 3, **fixed} and errors == []


def test_right_types_are_left_alone_and_the_input_is_not_modified() -> None:
    args = {"path": "02134", "replaceAll": False, "count": 7, "level": 1}
    snapshot = dict(args)
    out, errors = normalize_arguments(args, SCHEMA)
    assert out == args == snapshot and errors == []


def test_missing_required_fields_are_reported_not_invented() -> None:
    out, errors = normalize_arguments({"path": "p"}, SCHEMA)
    assert "replaceAll" not in out and "count" not in out and out["level"] == 3
    assert any("'replaceAll' is a required property" in e for e in errors)
    out, _ = normalize_arguments({"path": "p"}, SCHEMA, fill_missing=True)
    assert out["replaceAll"] is None and out["count"] is None


def test_what_cannot_be_fixed_passes_through_with_its_violation() -> None:
    out, errors = normalize_arguments({"path": "p", "replaceAll": "maybe", "count": "many"}, SCHEMA)
    assert out["replaceAll"] == "maybe" and out["count"] == "many"
    assert len(errors) == 2 and errors[0].startswith(("replaceAll", "count"))


def test_no_schema_no_change() -> None:
    assert normalize_arguments({"a": "1"}, None) == ({"a": "1"}, [])


def test_end_to_end_client_gets_typed_arguments_and_gemini_gets_its_own_back(client, stack) -> None:
    tool = {"type": "function", "name": "set_volume", "parameters": {
        "type": "object", "properties": {"level": {"type": "integer"}, "mute": {"type": "boolean"}},
        "required": ["level", "mute"]}}
    model = "gemini-3-flash-preview"
    prompt = "[[mock:stringly]] set_volume level=7 mute=false"
    r1 = client.responses.create(model=model, input=prompt, tools=[tool])
    [call] = r1.output
    assert json.loads(call.arguments) == {"level": 7, "mute": False}
    gemini_args = {"level": "7", "mute": "false"}
    # The client resends its (typed) arguments; Gemini must get back its own, which its signature is bound to.
    r2 = client.responses.create(model=model, tools=[tool], store=False, input=[
        {"role": "user", "content": prompt},
        {"type": "function_call", "call_id": call.call_id, "name": "set_volume", "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "ok"}])
    assert r2.status == "completed"
    assert stack.last_body()["contents"][1]["parts"][0]["functionCall"]["args"] == gemini_args
    chat = client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": prompt}],
                                          tools=[{"type": "function", "function": {k: v for k, v in tool.items()
                                                                                   if k != "type"}}])
    assert json.loads(chat.choices[0].message.tool_calls[0].function.arguments) == {"level": 7, "mute": False}


def test_unknown_names_match_loosely_but_are_never_invented() -> None:
    from proxy.from_gemini.client_call import match_name
    from proxy.tools.prepare_tools import prepare_tools

    tools = prepare_tools([{"type": "function", "name": "read_file"}, {"type": "function", "name": "write-file"}])
    assert match_name(tools, "Read-File") == "read_file"
    assert match_name(tools, "WRITE_FILE") == "write-file"
    assert match_name(tools, "delete_file") == "delete_file"
