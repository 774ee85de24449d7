"""google-genai with the proxy as its base URL: Gemini's REST paths, with repairs applied."""

import json

import pytest
from google import genai
from google.genai import types

from tests.test_bad_input import post

DECLS = [types.FunctionDeclaration(name=n, parameters_json_schema={
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    for n in ("get_weather", "get_time")]
NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)


@pytest.fixture
def gclient(stack) -> genai.Client:
    return genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=stack.url))


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro-preview"])
def test_function_calling_through_the_proxy(gclient, stack, model) -> None:
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=DECLS)],
                                         automatic_function_calling=NO_AFC)
    prompt = types.Content(role="user", parts=[types.Part(text="get_weather and get_time city=Oslo")])
    r1 = gclient.models.generate_content(model=model, contents=[prompt], config=config)
    calls = r1.function_calls
    assert [c.name for c in calls] == ["get_weather", "get_time"]
    # Answer in reverse order, the way Gemini CLI does for parallel calls.
    answers = [types.Part(function_response=types.FunctionResponse(name=c.name, id=c.id, response={"output": c.name}))
               for c in reversed(calls)]
    history = [prompt, r1.candidates[0].content, types.Content(role="user", parts=answers)]
    r2 = gclient.models.generate_content(model=model, contents=history, config=config)
    assert r2.text == ('Tool results: get_weather returned {"output": "get_weather"}; '
                       'get_time returned {"output": "get_time"}')
    sent = stack.last_body()["contents"][2]["parts"]
    assert [p["functionResponse"]["name"] for p in sent] == ["get_weather", "get_time"], "put back in call order"


def test_streaming_through_the_proxy(gclient) -> None:
    chunks = list(gclient.models.generate_content_stream(model="gemini-2.5-flash",
                                                         contents="stream these several words please"))
    assert len(chunks) >= 3
    assert "".join(c.text for c in chunks) == "Mock Gemini (gemini-2.5-flash) heard: stream these several words please"


def test_snake_case_bodies_and_schema_repair(stack) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "call lookup q=1"}]}],
            "tools": [{"function_declarations": [{"name": "lookup", "parameters": {
                "type": "object", "additionalProperties": False, "properties": {"q": {"type": ["string", "null"]}},
                "$schema": "http://json-schema.org/draft-07/schema#"}}]}],
            "tool_config": {"function_calling_config": {"mode": "ANY"}}}
    status, out = post(f"{stack.url}/v1beta/models/gemini-2.5-flash:generateContent", json.dumps(body).encode(),
                       {"x-goog-api-key": "test-key"})
    assert status == 200, out
    assert out["candidates"][0]["content"]["parts"][0]["functionCall"] == {"name": "lookup", "args": {"q": "1"}}
    assert stack.last_body()["tools"][0]["functionDeclarations"][0]["parameters"] == {
        "type": "OBJECT", "properties": {"q": {"type": "STRING", "nullable": True}}}


def test_json_array_stream_without_alt_sse(stack) -> None:
    import urllib.request
    req = urllib.request.Request(f"{stack.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                                 data=json.dumps({"contents": [{"role": "user", "parts": [{"text": "a b c d e"}]}]})
                                 .encode(), headers={"content-type": "application/json", "x-goog-api-key": "k"})
    with urllib.request.urlopen(req) as r:
        chunks = json.load(r)
    assert isinstance(chunks, list) and chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_errors_are_geminis(stack) -> None:
    status, out = post(f"{stack.url}/v1beta/models/gemini-2.5-flash:generateContent", b"{bad",
                       {"x-goog-api-key": "k"})
    assert status == 400 and out["error"]["status"] == "INVALID_ARGUMENT"
    status, out = post(f"{stack.url}/v1beta/models/gpt-4o:generateContent",
                       json.dumps({"contents": [{"role": "user", "parts": [{"text": "x"}]}]}).encode(),
                       {"x-goog-api-key": "k"})
    assert status == 404 and out["error"]["status"] == "NOT_FOUND" and "models/gpt-4o" in out["error"]["message"]
