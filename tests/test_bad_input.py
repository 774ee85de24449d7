"""Bad input gets a clear error in the caller's protocol, loses nothing, and the process keeps serving."""

import json
import urllib.error
import urllib.request

import openai
import pytest

from tests.conftest import WEATHER
from tests.harness import Stack


def post(url: str, data: bytes, headers: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def assert_openai_error(body: dict, param: str | None = None, code: str | None = None) -> dict:
    err = body["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["type"] == "invalid_request_error"
    assert err["message"]
    if param is not None:
        assert err["param"] == param
    if code is not None:
        assert err["code"] == code
    return err


@pytest.mark.parametrize("raw", [b"{not json", b"", b"\xff\xfe", b"[1, 2]", b'"a string"'])
def test_malformed_bodies(stack: Stack, raw: bytes) -> None:
    status, body = post(f"{stack.url}/v1/responses", raw)
    assert status == 400
    assert_openai_error(body)


@pytest.mark.parametrize(("payload", "param"), [
    ({"input": "hi"}, "model"),
    ({"model": 5, "input": "hi"}, "model"),
    ({"model": "gemini-2.5-flash", "input": 42}, "input"),
    ({"model": "gemini-2.5-flash", "input": "hi", "temperature": "hot"}, "temperature"),
    ({"model": "gemini-2.5-flash", "input": "hi", "tools": {"type": "function"}}, "tools"),
    ({"model": "gemini-2.5-flash", "input": "hi", "stream": "yes"}, "stream"),
    ({"model": "gemini-2.5-flash", "input": [{"type": "banana"}]}, "input[0].type"),
    ({"model": "gemini-2.5-flash", "input": [{"role": "user", "content": "x"}, "hi"]}, "input[1]"),
    ({"model": "gemini-2.5-flash", "input": [{"role": "user", "content": ["x"]}]}, "input[0].content[0]"),
    ({"model": "gemini-2.5-flash", "input": [{"role": "user", "content": 5}]}, "input[0].content"),
    ({"model": "gemini-2.5-flash", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
    ({"model": "gemini-2.5-flash", "input": [{"type": "function_call", "call_id": "c", "name": "f",
                                               "arguments": "{bad"}]}, "input[0].arguments"),
    ({"model": "gemini-2.5-flash", "input": "hi", "tools": [{"type": "function"}]}, "tools[0].name"),
    ({"model": "gemini-2.5-flash", "input": "hi", "tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
    ({"model": "gemini-2.5-flash", "input": "hi", "tools": [WEATHER],
      "tool_choice": {"type": "function", "name": "nope"}}, "tool_choice"),
])
def test_wrong_fields_name_the_parameter(stack: Stack, payload: dict, param: str) -> None:
    status, body = post(f"{stack.url}/v1/responses", json.dumps(payload).encode())
    assert status == 400
    assert_openai_error(body, param=param)


def test_unknown_fields_are_ignored(client: openai.OpenAI) -> None:
    r = client.responses.create(model="gemini-2.5-flash", input="hi",
                                extra_body={"prompt_cache_key": "k", "client_metadata": {"a": 1}, "brand_new": True})
    assert r.status == "completed"


def test_unknown_call_id(client: openai.OpenAI, stack: Stack) -> None:
    before = stack.accepted
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="gemini-2.5-flash", input=[
            {"role": "user", "content": "hi"},
            {"type": "function_call_output", "call_id": "call_nope", "output": "x"}])
    assert info.value.body["message"] == "No tool call found for function call output with call_id call_nope."
    assert info.value.body["param"] == "input"
    assert stack.accepted == before, "nothing malformed was forwarded"


def test_call_without_output(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="gemini-2.5-flash", tools=[WEATHER], input=[
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
            {"role": "user", "content": "and?"}])
    assert info.value.body["message"] == "No tool output found for function call call_1."


def test_unknown_previous_response_id(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="gemini-2.5-flash", input="hi", previous_response_id="resp_missing")
    assert info.value.status_code == 400
    assert info.value.body == {"message": "Previous response with id 'resp_missing' not found.",
                               "type": "invalid_request_error", "param": "previous_response_id",
                               "code": "previous_response_not_found"}


def test_store_false_responses_are_not_kept(client: openai.OpenAI) -> None:
    r = client.responses.create(model="gemini-2.5-flash", input="hi", store=False)
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="gemini-2.5-flash", input="again", previous_response_id=r.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)


def test_sessions_do_not_see_each_other(stack: Stack) -> None:
    a = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", default_headers={"x-gtp-session": "alice"},
                      _strict_response_validation=True, max_retries=0)
    b = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", default_headers={"x-gtp-session": "bob"},
                      _strict_response_validation=True, max_retries=0)
    r = a.responses.create(model="gemini-2.5-flash", input="call get_weather city=Rome", tools=[WEATHER])
    assert a.responses.retrieve(r.id).id == r.id
    with pytest.raises(openai.NotFoundError):
        b.responses.retrieve(r.id)
    with pytest.raises(openai.BadRequestError) as info:
        b.responses.create(model="gemini-2.5-flash", input="x", previous_response_id=r.id)
    assert info.value.body["code"] == "previous_response_not_found"


def test_oversized_body_is_413_and_server_lives_on() -> None:
    small = Stack(max_body=64 * 1024)
    try:
        big = json.dumps({"model": "gemini-2.5-flash", "input": "x" * 100_000}).encode()
        status, body = post(f"{small.url}/v1/responses", big)
        assert status == 413
        assert "too large" in assert_openai_error(body)["message"]
        status, body = post(f"{small.url}/v1/gemini", big)
        assert status == 413 and body["error"]["code"] == 413 and body["error"]["status"] == "INVALID_ARGUMENT"
        status, body = post(f"{small.url}/v1/responses", json.dumps({"model": "gemini-2.5-flash",
                                                                     "input": "hi"}).encode())
        assert status == 200 and body["status"] == "completed"
    finally:
        small.close()


def test_gemini_native_errors_are_gemini_shaped(stack: Stack) -> None:
    status, body = post(f"{stack.url}/v1/gemini", b"{oops")
    assert status == 400 and set(body["error"]) == {"code", "message", "status"}
    assert body["error"]["status"] == "INVALID_ARGUMENT"
    status, body = post(f"{stack.url}/v1/gemini", json.dumps({"model": "gemini-2.5-flash"}).encode())
    assert status == 400 and "input" in body["error"]["message"]
    # A tool Gemini would refuse is repaired on /v1/gemini as on every native path.
    bad_tool = {"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT", "additionalProperties": False,
                                                                       "properties": {"a": {"type": "STRING"}}}}]}
    status, body = post(f"{stack.url}/v1/gemini", json.dumps({"model": "gemini-2.5-flash", "input": "hi",
                                                               "tools": [bad_tool]}).encode())
    assert status == 200, body
    assert "additionalProperties" not in json.dumps(stack.last_body()["tools"])
    # Upstream rejections pass through with Gemini's own error object.
    status, body = post(f"{stack.url}/v1/gemini", json.dumps({"model": "gemini-2.5-flash",
                                                               "input": "[[mock:error 503]]"}).encode())
    assert status == 503 and body["error"]["status"] == "UNAVAILABLE"
    assert body["error"]["message"] == "The model is overloaded. Please try again later."


def test_process_keeps_serving_after_bad_input(client: openai.OpenAI, stack: Stack) -> None:
    for raw in (b"{", b"null", json.dumps({"model": [], "input": {}}).encode()):
        post(f"{stack.url}/v1/responses", raw)
    assert client.responses.create(model="gemini-2.5-flash", input="still there?").status == "completed"


@pytest.mark.parametrize("number", ["Infinity", "NaN", "1e999"])
def test_non_finite_call_arguments_are_refused_naming_the_item(stack: Stack, number: str) -> None:
    """Arguments are JSON; a client's NaN/Infinity is a 400 naming where it is, on Responses and Chat."""
    args = '{"city": "Oslo", "n": ' + number + '}'
    status, body = post(f"{stack.url}/v1/responses", json.dumps({
        "model": "gemini-2.5-flash", "tools": [WEATHER], "input": [
            {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": args},
        {"type": "function_call_output", "call_id": "c1", "output": "x"}]}).encode())
    assert status == 400 and assert_openai_error(body, param="input[1].arguments", code="invalid_value")
    chat_tool = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}
    status, body = post(f"{stack.url}/v1/chat/completions", json.dumps({
        "model": "gemini-2.5-flash", "tools": [chat_tool], "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                  "function": {"name": "get_weather", "arguments": args}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "x"}]}).encode())
    assert status == 400
    assert assert_openai_error(body, param="messages[1].tool_calls[0].function.arguments", code="invalid_value")
