"""The mock Gemini rejects what Gemini rejects, with Gemini's texts
(docs/wire.md#gemini-schema, #gemini-pairing, #signatures)."""

import json
import urllib.error
import urllib.request

import pytest

from proxy.mock.validate import SENTINELS, sign


def call(stack, body, model="gemini-2.5-flash", key="k", raw: bytes | None = None) -> tuple[int, dict]:
    url = f"{stack.mock_url}/v1beta/models/{model}:generateContent"
    headers = {"content-type": "application/json"}
    if key:
        headers["x-goog-api-key"] = key
    req = urllib.request.Request(url, data=raw if raw is not None else json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


USER = {"role": "user", "parts": [{"text": "hi"}]}


def decl(params: dict, name: str = "f") -> list[dict]:
    return [{"functionDeclarations": [{"name": name, "parameters": params}]}]


@pytest.mark.parametrize(("params", "message"), [
    ({"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "additionalProperties": False},
     'Invalid JSON payload received. Unknown name "additionalProperties" at '
     "'tools[0].function_declarations[0].parameters': Cannot find field."),
    ({"type": "OBJECT", "properties": {"a": {"type": "STRING"}, "b": {"anyOf": [{"const": "x"}]}}},
     'Invalid JSON payload received. Unknown name "const" at '
     "'tools[0].function_declarations[0].parameters.properties[1].value.any_of[0]': Cannot find field."),
    ({"type": "OBJECT", "properties": {"a": {"type": ["string", "null"]}}},
     'Invalid JSON payload received. Unknown name "type" at '
     "'tools[0].function_declarations[0].parameters.properties[0].value': Proto field is not repeating, "
     "cannot start list."),
    ({"type": "OBJECT", "properties": {"p": {"type": "STRING", "enum": [1, 2]}}},
     "Invalid value at 'tools[0].function_declarations[0].parameters.properties[0].value.enum[0]' (TYPE_STRING), 1"),
])
def test_schema_parse_errors(stack, params, message) -> None:
    status, body = call(stack, {"contents": [USER], "tools": decl(params)})
    assert status == 400 and body["error"]["status"] == "INVALID_ARGUMENT"
    assert body["error"]["message"].split("\n")[0] == message
    assert body["error"]["details"][0]["@type"] == "type.googleapis.com/google.rpc.BadRequest"


@pytest.mark.parametrize(("tools", "line"), [
    (decl({"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "required": ["b"]}),
     "* GenerateContentRequest.tools[0].function_declarations[0].parameters.required[0]: property is not defined"),
    (decl({"type": "OBJECT", "properties": {"tags": {"type": "ARRAY"}}}),
     "* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties[tags].items: missing field."),
    (decl({"type": "OBJECT", "properties": {}}),
     "* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties: should be non-empty for "
     "OBJECT type"),
    (decl({"type": "OBJECT", "properties": {"a": {"type": "STRING"}}}, name="server/tool"),
     "* GenerateContentRequest.tools[0].function_declarations[0].name: Invalid function name. Must start with a "
     "letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or "
     "dashes (-), with a maximum length of 64."),
    (decl({"type": "OBJECT", "properties": {"n": {"anyOf": [{"type": "NUMBER"}], "nullable": True}}}),
     "* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties[n]: functionDeclaration "
     "parameters.n schema specified other fields alongside any_of. When using any_of, it must be the only field set."),
])
def test_schema_semantic_errors(stack, tools, line) -> None:
    status, body = call(stack, {"contents": [USER], "tools": tools})
    assert status == 400 and line + "\n" in body["error"]["message"]


def test_call_and_response_counts_must_match(stack) -> None:
    model_turn = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}},
                                             {"functionCall": {"name": "f", "args": {"a": 1}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"output": "x"}}}]}
    status, body = call(stack, {"contents": [USER, model_turn, answer]})
    assert status == 400
    assert body["error"]["message"] == ("Please ensure that the number of function response parts is equal to the "
                                        "number of function call parts of the function call turn.")


def test_gemini3_requires_signatures_on_the_current_turn(stack) -> None:
    model_turn = {"role": "model", "parts": [{"functionCall": {"name": "terminal", "args": {}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "terminal", "response": {"output": "x"}}}]}
    status, body = call(stack, {"contents": [USER, model_turn, answer]}, model="gemini-3-pro-preview")
    assert status == 400
    assert body["error"]["message"].startswith("Function call is missing a thought_signature in functionCall parts.")
    assert "function call `default_api:terminal` , position 2." in body["error"]["message"]
    # The documented sentinel and a genuine signature are both accepted; 2.5 does not check.
    for sig in (*SENTINELS, sign("gemini-3-pro-preview", "terminal", {})):
        model_turn["parts"][0]["thoughtSignature"] = sig
        assert call(stack, {"contents": [USER, model_turn, answer]}, model="gemini-3-pro-preview")[0] == 200
    del model_turn["parts"][0]["thoughtSignature"]
    assert call(stack, {"contents": [USER, model_turn, answer]})[0] == 200


def test_signatures_must_come_back_on_the_same_part(stack) -> None:
    model = "gemini-3-pro-preview"
    model_turn = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": 2}},
                                              "thoughtSignature": sign(model, "f", {"a": 1})}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}
    status, body = call(stack, {"contents": [USER, model_turn, answer]}, model=model)
    assert status == 400 and body["error"]["message"] == "Corrupted thought signature."


@pytest.mark.parametrize(("body", "message"), [
    ({"contents": []}, "* GenerateContentRequest.contents: contents is not specified\n"),
    ({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}, "Please use a valid role: user, model."),
    ({"contents": [USER], "bogus": 1}, 'Invalid JSON payload received. Unknown name "bogus": Cannot find field.'),
    ({"contents": [USER], "toolConfig": {"functionCallingConfig": {"mode": "ANY"}}},
     "Function calling config is set without function_declarations."),
    ({"contents": [USER], "generationConfig": {"thinkingConfig": {"thinkingBudget": 10, "thinkingLevel": "LOW"}}},
     "You can only set only one of thinking budget and thinking level."),
])
def test_request_errors(stack, body, message) -> None:
    status, out = call(stack, body)
    assert status == 400 and out["error"]["message"] == message


@pytest.mark.parametrize(("model", "thinking", "message"), [
    ("gemini-2.5-flash", {"thinkingBudget": 52428}, "The thinking budget (52428) is invalid."),
    ("gemini-2.5-pro", {"thinkingBudget": 0}, "The thinking budget (0) is invalid."),
    ("gemini-2.5-flash", {"thinkingLevel": "HIGH"}, "Thinking level is not supported for this model."),
])
def test_thinking_rules(stack, model, thinking, message) -> None:
    status, out = call(stack, {"contents": [USER], "generationConfig": {"thinkingConfig": thinking}}, model=model)
    assert status == 400 and out["error"]["message"] == message


def test_auth_model_and_json_errors(stack) -> None:
    status, body = call(stack, {"contents": [USER]}, key=None)
    assert status == 403 and body["error"]["status"] == "PERMISSION_DENIED"
    status, body = call(stack, {"contents": [USER]}, key="bad")
    assert status == 400 and body["error"]["message"] == "API key not valid. Please pass a valid API key."
    status, body = call(stack, {"contents": [USER]}, model="gpt-4o")
    assert status == 404 and body["error"]["status"] == "NOT_FOUND"
    status, body = call(stack, None, raw=b"{nope")
    assert status == 400 and body["error"]["message"].startswith("Invalid JSON payload received.")


def test_snake_case_requests_are_accepted(stack) -> None:
    body = {"contents": [USER], "system_instruction": {"parts": [{"text": "s"}]},
            "tools": [{"function_declarations": [{"name": "f", "parameters": {
                "type": "OBJECT", "properties": {"a": {"type": "STRING"}}}}]}],
            "tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["f"]}}}
    status, out = call(stack, body)
    assert status == 200
    assert out["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "f"


def test_field_names_in_snake_case_are_remembered() -> None:
    """The strict checks ask a field's proto name for each field of each schema (20 declarations: some
    600 times a request, once most of the mock's time on the bench's injected rows): remembered, and the
    same names as before."""
    from proxy.mock.validate import snake
    snake.cache_clear()
    names = {"functionDeclarations": "function_declarations", "anyOf": "any_of", "Type": "type",
             "responseJsonSchema": "response_json_schema", "x": "x", "maxItems": "max_items"}
    assert {n: snake(n) for n in names} == names
    assert {n: snake(n) for n in names} == names
    assert snake.cache_info().hits == len(names)
