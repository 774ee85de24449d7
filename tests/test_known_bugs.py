"""One test per top user-reported bug of the peer translators (LiteLLM, CLIProxyAPI...; each names
its issue): each shows
this proxy does not have that bug. Rows covered in depth elsewhere are re-checked briefly here."""

import json
import re

import openai
import pytest

from proxy.mock.validate import GeminiRejection, sign, validate_request
from proxy.tools.prepare_tools import prepare_tools
from tests.conftest import TIME, WEATHER, fixture_dir
from tests.test_bad_input import post

ID_OK = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
CHAT_WEATHER = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}


def stream_loop(client: openai.OpenAI, model: str, rounds: int) -> openai.types.responses.Response:
    items: list = [{"role": "user", "content": f"[[mock:rounds {rounds}]] call get_weather city=Riga"}]
    for _ in range(rounds):
        with client.responses.stream(model=model, input=items, tools=[WEATHER], store=False) as s:
            final = s.get_final_response()
        call = final.output[0]
        items += [{"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
                  {"type": "function_call_output", "call_id": call.call_id, "output": "x"}]
    with client.responses.stream(model=model, input=items, tools=[WEATHER], store=False) as s:
        return s.get_final_response()


def test_litellm_16893_and_19403_gemini3_streaming_loop_keeps_signatures_and_gets_an_answer(client) -> None:
    final = stream_loop(client, "gemini-3-flash-preview", 2)
    assert final.output_text.startswith("Tool results:"), "no missing-signature 400, no empty answer"


def test_litellm_18160_41534_11392_call_and_item_ids_stay_short_and_plain(client) -> None:
    for model in ("gemini-2.5-flash", "gemini-3-pro-preview"):
        r = client.responses.create(model=model, input="get_weather get_time city=A", tools=[WEATHER, TIME])
        for item in r.output:
            assert ID_OK.match(item.call_id) and "__thought__" not in item.call_id
            assert len(item.id) <= 64
        c = client.chat.completions.create(model=model, tools=[CHAT_WEATHER],
                                           messages=[{"role": "user", "content": "get_weather city=A"}])
        assert all(ID_OK.match(tc.id) for tc in c.choices[0].message.tool_calls)


def test_litellm_9289_vercel_3371_empty_parameter_objects() -> None:
    for params in ({"type": "object", "properties": {}}, {"type": "object"}, None):
        tools = prepare_tools([{"type": "function", "name": "now", "parameters": params}])
        assert tools.declarations == [{"name": "now"}]
        validate_request({"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": tools.gemini_tools()},
                         "gemini-2.5-flash")


def test_litellm_11164_anyof_never_has_siblings() -> None:
    tools = prepare_tools([{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {
        "v": {"anyOf": [{"type": "string"}, {"type": "integer"}], "description": "d", "title": "T"}}}}])
    assert set(tools.declarations[0]["parameters"]["properties"]["v"]) == {"anyOf"}


def test_litellm_38223_ref_keys_in_tool_results(stack) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "lookup"}]},
                         {"role": "model", "parts": [{"functionCall": {"name": "lookup", "args": {}},
                                                      "thoughtSignature": "skip_thought_signature_validator"}]},
                         {"role": "user", "parts": [{"functionResponse": {"name": "lookup", "response": {
                             "schema": {"$ref": "#/$defs/X"}}}}]}]}
    with pytest.raises(GeminiRejection, match="does not match to a display_name"):
        validate_request(body, "gemini-3-pro-preview")  # what Gemini 3 does with it raw
    status, out = post(f"{stack.url}/v1beta/models/gemini-3-pro-preview:generateContent", json.dumps(body).encode(),
                       {"x-goog-api-key": "k"})
    assert status == 200, out
    sent = stack.last_body()["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert json.loads(sent["output"]) == {"schema": {"$ref": "#/$defs/X"}}, "kept, as an opaque string"


def test_litellm_32331_34603_ids_are_echoed_so_gemini3_answers(client, stack) -> None:
    r1 = client.responses.create(model="gemini-3-pro-preview", input="get_weather city=B", tools=[WEATHER])
    r2 = client.responses.create(model="gemini-3-pro-preview", previous_response_id=r1.id, tools=[WEATHER],
                                 input=[{"type": "function_call_output", "call_id": r1.output[0].call_id,
                                         "output": "ok"}])
    fr = stack.last_body()["contents"][-1]["parts"][0]["functionResponse"]
    assert fr["id"] == r1.output[0].call_id and r2.output_text, "the mock answers empty without the id"


def test_litellm_16651_21744_malformed_call_is_never_an_empty_stop(client) -> None:
    r = client.responses.create(model="gemini-2.5-flash", input="[[mock:malformed]]", tools=[WEATHER])
    assert r.status == "failed" and "MALFORMED_FUNCTION_CALL" in r.error.message


def test_litellm_21331_parallel_calls_keep_their_index(client) -> None:
    chunks = list(client.chat.completions.create(model="gemini-2.5-flash", stream=True, tools=[CHAT_WEATHER,
                  {"type": "function", "function": {k: v for k, v in TIME.items() if k != "type"}}],
                  messages=[{"role": "user", "content": "get_weather get_time city=C"}]))
    assert [tc.index for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []] == [0, 1]


def test_litellm_25836_streamed_arguments_are_delivered(client) -> None:
    with client.responses.stream(model="gemini-2.5-flash", input="get_weather city=Dover", tools=[WEATHER]) as s:
        deltas = [e.delta for e in s if e.type == "response.function_call_arguments.delta"]
    assert json.loads("".join(deltas)) == {"city": "Dover"}


def test_litellm_18570_text_signatures_go_back(client, stack) -> None:
    model = "gemini-3-pro-preview"
    r1 = client.responses.create(model=model, input="just talk")
    client.responses.create(model=model, input="more", previous_response_id=r1.id)
    model_turn = stack.last_body()["contents"][1]
    assert model_turn["parts"][-1] == {"text": "", "thoughtSignature": sign(model, "", r1.output_text)}


def test_cliproxyapi_129_numeric_enums_become_strings() -> None:
    tools = prepare_tools([{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {
        "p": {"type": "string", "enum": [1, 2, 3]}}}}])
    assert tools.declarations[0]["parameters"]["properties"]["p"]["enum"] == ["1", "2", "3"]


def test_cliproxyapi_2123_1424_1531_unknown_keywords_are_dropped() -> None:
    tools = prepare_tools([{"type": "function", "name": "f", "parameters": {
        "$id": "x", "type": "object", "properties": {
            "a": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "deprecated": True},
            "m": {"type": "object", "patternProperties": {"^x": {"type": "string"}}}}}}])
    validate_request({"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": tools.gemini_tools()},
                     "gemini-2.5-flash")


@pytest.mark.parametrize("path", ["opencode.json", "notion-mcp-server.json"])
def test_cliproxyapi_97_3863_every_path_sanitizes(client, stack, path: str) -> None:
    entries = list({e["name"]: e for e in json.loads((fixture_dir() / path).read_text())}.values())
    chat_tools = [{"type": "function", "function": {"name": e["name"], "description": e.get("description") or "",
                                                    "parameters": e["parameters"]}} for e in entries]
    for model in ("gemini-2.5-flash", "gemini-3-pro-preview"):  # parameters mode, then parametersJsonSchema mode
        r = client.chat.completions.create(model=model, tools=chat_tools,
                                           messages=[{"role": "user", "content": "hello"}])
        assert r.choices[0].finish_reason == "stop"
        decls = stack.last_body()["tools"][0]["functionDeclarations"]
        assert ("parametersJsonSchema" in json.dumps(decls)) == (model == "gemini-3-pro-preview")
        assert "$schema" not in json.dumps(decls)


def test_cliproxyapi_2360_codex_signatures_survive_stateless_turns(client) -> None:
    final = stream_loop(client, "gemini-3-pro-preview", 3)
    assert final.status == "completed" and final.output_text


def test_cliproxyapi_5319_trailing_prefill_is_dropped(client, stack) -> None:
    model = "gemini-3.6-flash"
    with pytest.raises(GeminiRejection, match="ending with a model turn"):
        validate_request({"contents": [{"role": "user", "parts": [{"text": "x"}]},
                                       {"role": "model", "parts": [{"text": "Sure,"}]}]}, model)
    r = client.responses.create(model=model, input=[{"role": "user", "content": "x"},
                                                    {"role": "assistant", "content": "Sure,"}])
    assert r.status == "completed" and stack.last_body()["contents"][-1]["role"] == "user"
    client.responses.create(model="gemini-2.5-flash", input=[{"role": "user", "content": "x"},
                                                             {"role": "assistant", "content": "Sure,"}])
    assert stack.last_body()["contents"][-1]["role"] == "model", "older models keep their prefill"


def test_vercel_10344_15550_signature_replayed_not_replaced(client, stack) -> None:
    r1 = client.responses.create(model="gemini-3-flash-preview", input="get_weather city=E", tools=[WEATHER])
    call = r1.output[0]
    client.responses.create(model="gemini-3-flash-preview", tools=[WEATHER], input=[
        {"role": "user", "content": "get_weather city=E"},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "x"}])
    part = stack.last_body()["contents"][1]["parts"][0]
    assert part["thoughtSignature"] == sign("gemini-3-flash-preview", "get_weather", {"city": "E"})


def test_vercel_15891_function_call_ids_are_sent_and_accepted(client, stack) -> None:
    r1 = client.responses.create(model="gemini-2.5-flash", input="get_weather city=F", tools=[WEATHER])
    client.responses.create(model="gemini-2.5-flash", previous_response_id=r1.id, tools=[WEATHER],
                            input=[{"type": "function_call_output", "call_id": r1.output[0].call_id, "output": "x"}])
    contents = stack.last_body()["contents"]
    assert "id" not in contents[1]["parts"][0]["functionCall"], "2.5 gave no id: none is invented for it"
