"""Prompt mode on Gemini's API: a client's ordinary tools rendered into the prompt of a model that
speaks them only as text (Gemma on Gemini refuses native tools, like the strict mock), its text
parsed back into ordinary calls — Responses and Chat through the strict openai SDK, native Gemini
through google-genai, streamed and not; and text calls rescued from a native model's answer."""

import json

import openai
import pytest
from google import genai
from google.genai import types

from proxy.dialects import DIALECTS
from proxy.model_rules import ModelRules
from tests.harness import Stack

WEATHER = {"type": "function", "name": "get_weather", "description": "Current weather for a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
TIME = {"type": "function", "name": "get_time", "description": "Local time",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "utc": {"type": "boolean"}},
                       "required": ["city"]}}
CHAT_TOOLS = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}} for t in (WEATHER, TIME)]


@pytest.fixture(scope="module")
def text_stack():
    rules = ModelRules.parse(tool_modes=[f"gemini-2.0-{d}={d}" for d in DIALECTS],
                             rescue_text_calls=["gemini-2.5-flash-lite=hermes"])
    s = Stack(rules=rules, journal=True)
    yield s
    s.close()


@pytest.fixture
def oai(text_stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{text_stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)


def chat_turn(oai, model, messages, tools, stream):
    """One Chat Completions turn, streamed or not: ([(id, name, arguments)], content, finish_reason)."""
    if not stream:
        r = oai.chat.completions.create(model=model, messages=messages, tools=tools)
        m = r.choices[0].message
        return ([(t.id, t.function.name, json.loads(t.function.arguments)) for t in m.tool_calls or []], m.content,
                r.choices[0].finish_reason)
    calls: dict[int, list] = {}
    text, finish = "", None
    for c in oai.chat.completions.create(model=model, messages=messages, tools=tools, stream=True):
        if not c.choices:
            continue
        for d in c.choices[0].delta.tool_calls or []:
            entry = calls.setdefault(d.index, [d.id, d.function.name, ""])
            entry[2] += d.function.arguments or ""
        text += c.choices[0].delta.content or ""
        finish = c.choices[0].finish_reason or finish
    return [(i, n, json.loads(a)) for i, n, a in calls.values()], text or None, finish


def _upstream_text(body) -> str:
    system = body.get("systemInstruction") or {}
    return json.dumps([system, body.get("contents")])


def test_the_mock_refuses_native_tools_and_system_instructions_for_gemma_like_gemini(text_stack):
    import urllib.error
    import urllib.request

    def post(model, body):
        req = urllib.request.Request(f"{text_stack.mock_url}/v1beta/models/{model}:generateContent",
                                     data=json.dumps(body).encode(), headers={"content-type": "application/json",
                                                                                 "x-goog-api-key": "k"})
        try:
            urllib.request.urlopen(req)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())["error"]["message"]
        return 200, ""

    contents = [{"role": "user", "parts": [{"text": "hi"}]}]
    assert post("gemma-4-31b-it", {"contents": contents, "tools": [{"functionDeclarations": [{"name": "f"}]}]}) == (
        400, "Function calling is not enabled for models/gemma-4-31b-it")
    assert post("gemma-3-27b-it", {"contents": contents, "systemInstruction": {"parts": [{"text": "x"}]}}) == (
        400, "Developer instruction is not enabled for models/gemma-3-27b-it")


@pytest.mark.parametrize("stream", [False, True])
def test_gemma4_responses_tool_loop(oai, text_stack, stream):
    model = "gemma-4-31b-it"

    def create(**kw):
        if not stream:
            return oai.responses.create(model=model, tools=[WEATHER, TIME], **kw)
        with oai.responses.stream(model=model, tools=[WEATHER, TIME], **kw) as s:
            return s.get_final_response()

    r1 = create(instructions="Be brief.", input="get_weather and get_time city=Paris")
    calls = [o for o in r1.output if o.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Paris"}),
                                                                 ("get_time", {"city": "Paris"})]
    sent = text_stack.last_body()
    assert "tools" not in sent and "toolConfig" not in sent
    system = sent["systemInstruction"]["parts"][0]["text"]
    assert system.startswith("Be brief.\n\n<|tool>declaration:get_weather{description:<|\"|>Current weather")
    # The journal keeps Gemini's answer as it came (the calls as Gemma's text; streamed, each chunk),
    # and the calls the proxy read from it.
    doc = text_stack.exchange()
    [up] = doc["upstream"]
    came = [up["answer"]] if not stream else up["chunks"]
    parts = [p for c in came for p in c["candidates"][0]["content"].get("parts", [])]
    assert not any("functionCall" in p for p in parts)
    assert "<|tool_call>call:get_weather" in "".join(p.get("text", "") for p in parts)
    assert [c["name"] for c in doc["calls"]] == ["get_weather", "get_time"]
    r2 = create(previous_response_id=r1.id, input=[
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": '{"temp": 18}'},
        {"type": "function_call_output", "call_id": calls[1].call_id, "output": "noon"}])
    assert r2.status == "completed" and r2.output_text.startswith("Tool results: get_weather returned")
    history = _upstream_text(text_stack.last_body())
    assert '<|tool_call>call:get_weather{city:<|\\"|>Paris<|\\"|>}<tool_call|>' in history
    assert "<|tool_response>response:get_weather{temp:18}<tool_response|>" in history
    assert '<|tool_response>response:get_time{value:<|\\"|>noon<|\\"|>}<tool_response|>' in history


@pytest.mark.parametrize("stream", [False, True])
def test_gemma3_chat_folds_the_system_turn_and_loops(oai, text_stack, stream):
    model = "gemma-3-27b-it"
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "get_weather city=Oslo"}]

    def create(msgs):
        if not stream:
            r = oai.chat.completions.create(model=model, messages=msgs, tools=CHAT_TOOLS)
            return r.choices[0].message, r.choices[0].finish_reason
        chunks = list(oai.chat.completions.create(model=model, messages=msgs, tools=CHAT_TOOLS, stream=True))
        calls: dict[int, dict] = {}
        text = ""
        for c in chunks:
            for d in c.choices[0].delta.tool_calls or [] if c.choices else []:
                entry = calls.setdefault(d.index, {"id": d.id, "name": d.function.name, "arguments": ""})
                entry["arguments"] += d.function.arguments or ""
            text += (c.choices[0].delta.content or "") if c.choices else ""
        finish = next(c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason)
        return {"calls": list(calls.values()), "text": text}, finish

    message, finish = create(messages)
    if stream:
        assert finish == "tool_calls" and [(c["name"], json.loads(c["arguments"])) for c in message["calls"]] == [
            ("get_weather", {"city": "Oslo"})]
        call_id = message["calls"][0]["id"]
        assistant = {"role": "assistant", "tool_calls": [{"id": call_id, "type": "function", "function": {
            "name": "get_weather", "arguments": message["calls"][0]["arguments"]}}]}
    else:
        assert finish == "tool_calls" and message.tool_calls[0].function.name == "get_weather"
        call_id = message.tool_calls[0].id
        assistant = message.model_dump(exclude_none=True)
    sent = text_stack.last_body()
    assert "systemInstruction" not in sent and "tools" not in sent
    first = sent["contents"][0]["parts"][0]["text"]
    assert first.startswith("You are terse.\n\nYou have access to functions.")
    messages += [assistant, {"role": "tool", "tool_call_id": call_id, "content": "sunny"}]
    message, finish = create(messages)
    assert finish == "stop"
    text = message["text"] if stream else message.content
    assert text == 'Tool results: get_weather returned {"output": "```tool_output\\nsunny\\n```"}'
    history = _upstream_text(text_stack.last_body())
    assert "[get_weather(city='Oslo')]" in history and "```tool_output\\nsunny\\n```" in history


@pytest.mark.parametrize("name", sorted(DIALECTS))
@pytest.mark.parametrize("stream", [False, True])
def test_every_dialect_completes_a_parallel_tool_loop(oai, text_stack, name, stream):
    model = f"gemini-2.0-{name}"
    messages = [{"role": "user", "content": "get_weather get_time city=Rome utc=true"}]

    def create(msgs):
        return chat_turn(oai, model, msgs, CHAT_TOOLS, stream)

    calls, content, finish = create(messages)
    assert finish == "tool_calls" and content is None
    assert [(n, a) for _, n, a in calls] == [("get_weather", {"city": "Rome"}),
                                             ("get_time", {"city": "Rome", "utc": True})]
    messages += [{"role": "assistant", "tool_calls": [
        {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls]},
        *[{"role": "tool", "tool_call_id": i, "content": f"result of {n}"} for i, n, _ in calls]]
    calls, content, finish = create(messages)
    assert finish == "stop" and not calls
    sent = text_stack.last_body()
    assert "tools" not in sent
    if DIALECTS[name].single_call:  # one call and its result per turn; the mock quotes the last turn's
        assert [c["role"] for c in sent["contents"]] == ["user", "model", "user", "model", "user"]
        assert content == 'Tool results: get_time returned {"output": "result of get_time"}'
    else:
        assert content.startswith("Tool results: get_weather returned") and "get_time returned" in content


def test_google_genai_with_gemma4_streamed_and_not(text_stack):
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=text_stack.url))
    weather = types.FunctionDeclaration(name="get_weather", description="Weather", parameters_json_schema={
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[weather])],
                                         system_instruction="Be brief.")
    r = client.models.generate_content(model="gemma-4-31b-it", contents="get_weather city=Kyiv", config=config)
    assert [(fc.name, fc.args) for fc in r.function_calls] == [("get_weather", {"city": "Kyiv"})]
    chunks = list(client.models.generate_content_stream(model="gemma-4-31b-it", contents="get_weather city=Kyiv",
                                                        config=config))
    calls = [fc for c in chunks for fc in c.function_calls or []]
    assert [(fc.name, fc.args) for fc in calls] == [("get_weather", {"city": "Kyiv"})]
    history = [types.Content(role="user", parts=[types.Part(text="get_weather city=Kyiv")]), r.candidates[0].content,
               types.Content(role="user", parts=[types.Part.from_function_response(name="get_weather",
                                                                                    response={"temp": 3})])]
    r2 = client.models.generate_content(model="gemma-4-31b-it", contents=history, config=config)
    assert r2.text == ('Tool results: get_weather returned {"output": '
                       '"<|tool_response>response:get_weather{temp:3}<tool_response|>"}')


def test_native_model_keeps_text_without_rescue_and_gets_calls_with_it(oai, text_stack):
    prompt = "[[mock:text_call hermes]] get_weather city=Lima"
    plain = oai.responses.create(model="gemini-2.5-flash", input=prompt, tools=[WEATHER])
    assert [o.type for o in plain.output] == ["message"] and "<tool_call>" in plain.output_text
    rescued = oai.responses.create(model="gemini-2.5-flash-lite", input=prompt, tools=[WEATHER])
    [call] = rescued.output
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Lima"}
    assert "tools" in text_stack.last_body()  # native mode: the tools went upstream as tools


def test_v1_gemini_conversation_with_gemma4(text_stack):
    from tests.test_bad_input import post

    url = f"{text_stack.url}/v1/gemini"
    tools = [{"functionDeclarations": [{"name": "get_weather", "parameters": {
        "type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}}]}]
    base = {"model": "gemma-4-31b-it", "tools": tools, "conversation": "gemma-conv"}
    status, r1 = post(url, json.dumps({**base, "input": "call get_weather city=Lyon"}).encode())
    assert status == 200 and r1["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}}]
    answer = [{"role": "user", "parts": [
        {"functionResponse": {"name": "get_weather", "response": {"output": "mild"}}}]}]
    status, r2 = post(url, json.dumps({**base, "input": answer}).encode())
    assert status == 200 and r2["candidates"][0]["content"]["parts"][0]["text"].startswith(
        "Tool results: get_weather returned")


@pytest.mark.parametrize("whole", [False, True], ids=["mid_sentence", "whole_answer"])
@pytest.mark.parametrize("model", ["gemma-3-27b-it", "gemini-2.0-llama3", "gemini-2.0-gemma3"])
def test_an_answer_quoting_json_that_names_a_tool_is_not_a_call(oai, model, whole):
    """Issue 23: Gemma 3 repeating a tool result `{"name": ..., "content": ...}` looped agents (opencode until
    its timeout). Marker-less dialects take a call only as the whole message with its arguments."""
    prompt = "[[mock:quote_json whole]] report" if whole else "[[mock:quote_json]] report"
    r = oai.responses.create(model=model, input=prompt, tools=[WEATHER])
    assert r.status == "completed" and not [o for o in r.output if o.type == "function_call"]
    assert '{"name": "get_weather", "content": "sunny, 18 C"}' in r.output_text
    events = list(oai.responses.create(model=model, input=prompt, tools=[WEATHER], stream=True))
    assert events[-1].type == "response.completed"
    assert not [e for e in events if e.type == "response.output_item.added" and e.item.type == "function_call"]
    chat = oai.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}],
                                       tools=CHAT_TOOLS)
    assert not chat.choices[0].message.tool_calls and chat.choices[0].finish_reason == "stop"
