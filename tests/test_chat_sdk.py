"""Chat Completions through the official openai SDK (strict validation) against the front-end + mock."""

import json
import urllib.request

import openai
import pytest

from proxy.mock.validate import sign

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def test_sync_tool_loop(client: openai.OpenAI, stack) -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "call get_weather city=Paris"}]
    r1 = client.chat.completions.create(model="gemini-2.5-flash", messages=messages, tools=[WEATHER])
    choice = r1.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    [tc] = choice.message.tool_calls
    assert tc.function.name == "get_weather" and json.loads(tc.function.arguments) == {"city": "Paris"}
    assert stack.last_body()["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    messages += [choice.message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": tc.id, "content": "sunny"}]
    r2 = client.chat.completions.create(model="gemini-2.5-flash", messages=messages, tools=[WEATHER])
    assert r2.choices[0].finish_reason == "stop"
    assert r2.choices[0].message.content == 'Tool results: get_weather returned {"output": "sunny"}'
    assert r2.usage.prompt_tokens > 0 and r2.usage.total_tokens >= r2.usage.completion_tokens


def test_stream_parallel_calls_keep_counting_the_index(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(model="gemini-3-flash-preview", stream=True, tools=[WEATHER, TIME],
                                            stream_options={"include_usage": True},
                                            messages=[{"role": "user", "content": "get_weather get_time city=Rome"}])
    chunks = list(stream)
    deltas = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert [(d.index, d.function.name) for d in deltas] == [(0, "get_weather"), (1, "get_time")]
    assert len({c.id for c in chunks}) == 1
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["tool_calls"]
    assert chunks[-1].usage is not None and chunks[-1].choices == []


def test_stream_ends_with_done(stack) -> None:
    req = urllib.request.Request(f"{stack.url}/v1/chat/completions", headers={"content-type": "application/json"},
                                 data=json.dumps({"model": "gemini-2.5-flash", "stream": True, "messages": [
                                     {"role": "user", "content": "several words to stream here"}]}).encode())
    with urllib.request.urlopen(req) as r:
        lines = [ln for ln in r.read().decode().split("\n") if ln.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    text = "".join(json.loads(ln[6:])["choices"][0]["delta"].get("content") or "" for ln in lines[:-1])
    assert text == "Mock Gemini (gemini-2.5-flash) heard: several words to stream here"


def test_gemini3_stateless_loop_replays_signatures(client: openai.OpenAI, stack) -> None:
    model = "gemini-3-pro-preview"
    messages = [{"role": "user", "content": "[[mock:rounds 2]] call get_weather city=Lviv"}]
    for n in range(2):
        r = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER])
        [tc] = r.choices[0].message.tool_calls
        messages += [r.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": tc.id, "content": f"r{n}"}]
    final = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER])
    assert final.choices[0].message.content.startswith("Tool results:")
    part = stack.last_body()["contents"][1]["parts"][0]
    assert part["thoughtSignature"] == sign(model, "get_weather", {"city": "Lviv"})


def test_parallel_tool_calls_false_keeps_the_first_call(client: openai.OpenAI) -> None:
    r = client.chat.completions.create(model="gemini-2.5-flash", tools=[WEATHER, TIME], parallel_tool_calls=False,
                                       messages=[{"role": "user", "content": "get_weather get_time city=X"}])
    assert [tc.function.name for tc in r.choices[0].message.tool_calls] == ["get_weather"]


def test_forced_tool_choice_chat_shape(client: openai.OpenAI, stack) -> None:
    r = client.chat.completions.create(model="gemini-2.5-flash", tools=[WEATHER, TIME],
                                       tool_choice={"type": "function", "function": {"name": "get_time"}},
                                       messages=[{"role": "user", "content": "hello"}])
    assert r.choices[0].message.tool_calls[0].function.name == "get_time"
    assert stack.last_body()["toolConfig"] == {"functionCallingConfig": {"mode": "ANY",
                                                                         "allowedFunctionNames": ["get_time"]}}


def test_pairing_errors_use_chat_wording(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="gemini-2.5-flash", messages=[
            {"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "call_zz", "content": "1"}])
    assert "messages with role 'tool' must be a response to a preceeding message" in info.value.message
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="gemini-2.5-flash", messages=[
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                                                  "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "user", "content": "y"}])
    assert "did not have response messages: call_1" in info.value.message


def test_unusable_finishes_are_errors_not_empty_answers(client: openai.OpenAI) -> None:
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="gemini-2.5-flash", tools=[WEATHER],
                                       messages=[{"role": "user", "content": "[[mock:malformed]] x"}])
    assert info.value.status_code == 502 and "MALFORMED_FUNCTION_CALL" in info.value.message
    with pytest.raises(openai.APIError) as info:
        list(client.chat.completions.create(model="gemini-2.5-flash", tools=[WEATHER], stream=True,
                                            messages=[{"role": "user", "content": "[[mock:malformed]] x"}]))
    assert "MALFORMED_FUNCTION_CALL" in str(info.value)


@pytest.mark.parametrize(("directive", "finish"), [("max_tokens", "length"), ("safety", "content_filter")])
def test_incomplete_finishes(client: openai.OpenAI, directive: str, finish: str) -> None:
    r = client.chat.completions.create(model="gemini-2.5-flash",
                                       messages=[{"role": "user", "content": f"[[mock:{directive}]]"}])
    assert r.choices[0].finish_reason == finish


def test_bad_requests(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "robot", "content": "x"}])
    assert info.value.body["param"] == "messages[0].role"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="gemini-2.5-flash", messages=[])
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="gemini-2.5-flash", n=2, messages=[{"role": "user", "content": "x"}])
    assert info.value.body["param"] == "n"
