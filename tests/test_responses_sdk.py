"""The official openai SDK (strict response validation) against the front-end + strict mock."""

import json
import time

import openai
import pytest

from proxy.mock.validate import sign
from tests.conftest import TIME, WEATHER


def test_sync_tool_loop(client: openai.OpenAI, stack) -> None:
    r1 = client.responses.create(model="gemini-2.5-flash", input="What is the weather? call get_weather city=Paris",
                                 tools=[WEATHER])
    assert r1.status == "completed"
    [call] = r1.output
    assert call.type == "function_call" and call.name == "get_weather" and call.status == "completed"
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert call.id.startswith("fc_") and len(call.call_id) <= 40
    sent = stack.last_body()
    assert sent["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]["city"] == {"type": "STRING"}

    r2 = client.responses.create(
        model="gemini-2.5-flash", tools=[WEATHER],
        input=[{"role": "user", "content": "What is the weather? call get_weather city=Paris"},
               {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
               {"type": "function_call_output", "call_id": call.call_id, "output": "18 degrees"}])
    assert r2.status == "completed"
    assert r2.output_text == 'Tool results: get_weather returned {"output": "18 degrees"}'
    assert r2.output[0].type == "message" and r2.output[0].content[0].annotations == []
    response = stack.last_body()["contents"][-1]["parts"][0]["functionResponse"]
    assert response == {"name": "get_weather", "response": {"output": "18 degrees"}}


def test_stream_tool_loop(client: openai.OpenAI, stack) -> None:
    with client.responses.stream(model="gemini-2.5-flash", input="call get_weather city=Oslo", tools=[WEATHER]) as s:
        events = list(s)
        final = s.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "response.function_call_arguments.done" in kinds
    # Each event shows the response as it was then (the server serializes events as they come).
    assert [(e.response.status, len(e.response.output)) for e in events[:2]] == [("in_progress", 0)] * 2
    assert events[-1].response.status == "completed" and len(events[-1].response.output) == 1
    [call] = final.output
    with client.responses.stream(model="gemini-2.5-flash", previous_response_id=final.id, tools=[WEATHER],
                                 input=[{"type": "function_call_output", "call_id": call.call_id,
                                         "output": "-3 degrees"}]) as s:
        texts = [e.delta for e in s if e.type == "response.output_text.delta"]
        final2 = s.get_final_response()
    assert len(texts) >= 2, "the answer should arrive in several deltas"
    assert "".join(texts) == final2.output_text == 'Tool results: get_weather returned {"output": "-3 degrees"}'


def test_parallel_calls_answered_in_one_turn(client: openai.OpenAI, stack) -> None:
    r1 = client.responses.create(model="gemini-2.5-flash", input="call get_weather and get_time city=Lima",
                                 tools=[WEATHER, TIME])
    calls = [o for o in r1.output if o.type == "function_call"]
    assert [c.name for c in calls] == ["get_weather", "get_time"]
    assert len({c.call_id for c in calls}) == 2
    # Outputs arrive in reverse order; Gemini must get them in call order, in one user turn.
    r2 = client.responses.create(model="gemini-2.5-flash", previous_response_id=r1.id, tools=[WEATHER, TIME],
                                 input=[{"type": "function_call_output", "call_id": calls[1].call_id, "output": "9:00"},
                                        {"type": "function_call_output", "call_id": calls[0].call_id, "output": "sun"}])
    last = stack.last_body()["contents"][-1]
    assert [p["functionResponse"]["name"] for p in last["parts"]] == ["get_weather", "get_time"]
    assert "get_weather returned" in r2.output_text and "get_time returned" in r2.output_text


def test_parallel_calls_stream(client: openai.OpenAI) -> None:
    with client.responses.stream(model="gemini-3-flash-preview", input="get_weather get_time city=Bern",
                                 tools=[WEATHER, TIME]) as s:
        added = [e for e in s if e.type == "response.output_item.added"]
        final = s.get_final_response()
    assert [e.output_index for e in added] == [0, 1]
    assert [o.name for o in final.output] == ["get_weather", "get_time"]


def test_previous_response_id_chain(client: openai.OpenAI, stack) -> None:
    r1 = client.responses.create(model="gemini-2.5-flash", input="Hello there", instructions="Be brief")
    assert r1.output_text.startswith("Mock Gemini (gemini-2.5-flash) heard: Hello there")
    assert stack.last_body()["systemInstruction"] == {"parts": [{"text": "Be brief"}]}
    r2 = client.responses.create(model="gemini-2.5-flash", input="And again", previous_response_id=r1.id)
    contents = stack.last_body()["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"][0]["text"] == r1.output_text
    assert "systemInstruction" not in stack.last_body(), "instructions are not carried over"
    assert r2.previous_response_id == r1.id
    fetched = client.responses.retrieve(r2.id)
    assert fetched.id == r2.id and fetched.output_text == r2.output_text


def test_gemini3_ids_and_signatures_round_trip(client: openai.OpenAI, stack) -> None:
    model = "gemini-3-pro-preview"
    r1 = client.responses.create(model=model, input="call get_weather city=Kyiv", tools=[WEATHER])
    [call] = r1.output
    gemini_call = stack.received[-1]  # the mock recorded the request; its reply carried id + signature
    assert len(call.call_id) == 8, "Gemini 3's functionCall.id is the call_id"
    # Stateless round trip: the whole history resent, store=false, no previous_response_id.
    r2 = client.responses.create(model=model, store=False, tools=[WEATHER], input=[
        {"role": "user", "content": "call get_weather city=Kyiv"},
        {"type": "function_call", "call_id": call.call_id, "name": "get_weather", "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "cold"}])
    assert r2.output_text == 'Tool results: get_weather returned {"output": "cold"}'
    sent = stack.last_body()["contents"]
    part = sent[1]["parts"][0]
    assert part["functionCall"]["id"] == call.call_id
    assert part["thoughtSignature"] == sign(model, "get_weather", {"city": "Kyiv"}), "signature replayed exactly"
    assert sent[2]["parts"][0]["functionResponse"]["id"] == call.call_id
    assert gemini_call["model"] == model
    # Chained by id: the stored history replays the model turn exactly as Gemini sent it.
    r3 = client.responses.create(model=model, tools=[WEATHER], previous_response_id=r1.id, input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": "cold"},
        {"role": "user", "content": "thanks, now call get_weather city=Rome"}])
    assert r3.status == "completed" and r3.output[0].type == "function_call"
    sent = stack.last_body()["contents"]
    assert sent[1]["parts"][0]["thoughtSignature"] == sign(model, "get_weather", {"city": "Kyiv"})


def test_gemini3_multi_round_loop_never_misses_a_signature(client: openai.OpenAI) -> None:
    model = "gemini-3-flash-preview"
    history: list = [{"role": "user", "content": "[[mock:rounds 3]] call get_weather city=Nice"}]
    for _ in range(3):
        with client.responses.stream(model=model, input=history, tools=[WEATHER], store=False) as s:
            final = s.get_final_response()
        [call] = [o for o in final.output if o.type == "function_call"]
        history += [{"type": "function_call", "call_id": call.call_id, "name": call.name,
                     "arguments": call.arguments},
                    {"type": "function_call_output", "call_id": call.call_id, "output": "ok"}]
    final = client.responses.create(model=model, input=history, tools=[WEATHER], store=False)
    assert final.output_text.startswith("Tool results:")


def test_nested_chat_style_tools_and_tool_choice(client: openai.OpenAI, stack) -> None:
    nested = {"type": "function", "function": {"name": "lookup", "description": "d",
                                               "parameters": {"type": "object", "properties": {
                                                   "q": {"type": ["string", "null"]}}, "required": ["q"]}}}
    r = client.responses.create(model="gemini-2.5-flash", input="anything", tools=[nested],
                                tool_choice={"type": "function", "name": "lookup"})
    assert r.output[0].type == "function_call" and r.output[0].name == "lookup"
    body = stack.last_body()
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}}
    assert body["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]["q"] == {
        "type": "STRING", "nullable": True}
    assert r.tools[0].name == "lookup", "tools are echoed in the flat Responses shape"


@pytest.mark.parametrize(("choice", "config"), [
    ("auto", {"mode": "AUTO"}),
    ("none", {"mode": "NONE"}),
    ("required", {"mode": "ANY"}),
    ({"type": "function", "name": "get_time"}, {"mode": "ANY", "allowedFunctionNames": ["get_time"]}),
])
def test_tool_choice_mapping(client: openai.OpenAI, stack, choice, config) -> None:
    r = client.responses.create(model="gemini-2.5-flash", input="hello", tools=[{**WEATHER, "strict": False}, TIME],
                                tool_choice=choice)
    assert stack.last_body()["toolConfig"] == {"functionCallingConfig": config}
    if config["mode"] == "ANY":
        assert r.output[0].type == "function_call"
        assert r.output[0].name == config.get("allowedFunctionNames", ["get_weather"])[0]
    else:
        assert r.output[0].type == "message"


def test_generation_settings_and_usage(client: openai.OpenAI, stack) -> None:
    r = client.responses.create(model="gemini-2.5-flash", input="hi", temperature=0.5, top_p=0.9,
                                max_output_tokens=100, metadata={"k": "v"}, store=True)
    assert stack.last_body()["generationConfig"] == {"temperature": 0.5, "topP": 0.9, "maxOutputTokens": 100}
    assert r.metadata == {"k": "v"}
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    assert r.usage.input_tokens_details.cached_tokens == 0 and r.usage.output_tokens_details.reasoning_tokens == 0


def test_thought_tokens_count_as_output(stack) -> None:
    from proxy.from_gemini.usage import map_usage
    u = map_usage({"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 7,
                   "cachedContentTokenCount": 4, "totalTokenCount": 22})
    assert u["output_tokens"] == 12 and u["output_tokens_details"]["reasoning_tokens"] == 7
    assert u["input_tokens_details"] == {"cached_tokens": 4, "cache_write_tokens": 0}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("directive", "status", "detail"), [
    ("max_tokens", "incomplete", "max_output_tokens"),
    ("safety", "incomplete", "content_filter"),
    ("block", "incomplete", "content_filter"),
    ("malformed", "failed", "MALFORMED_FUNCTION_CALL"),
    ("unexpected_tool", "failed", "UNEXPECTED_TOOL_CALL"),
])
def test_finish_reasons(client: openai.OpenAI, directive, status, detail, stream) -> None:
    text = f"[[mock:{directive}]] call get_weather"
    if stream:
        with client.responses.stream(model="gemini-2.5-flash", input=text, tools=[WEATHER]) as s:
            events = list(s)
        assert events[-1].type == f"response.{status}"
        r = events[-1].response
    else:
        r = client.responses.create(model="gemini-2.5-flash", input=text, tools=[WEATHER])
    assert r.status == status
    if status == "incomplete":
        assert r.incomplete_details.reason == detail
    else:
        assert r.error.code == "server_error" and detail in r.error.message
        assert r.output == [], "never an empty success"


def test_stream_failure_event_carries_the_reason(client: openai.OpenAI) -> None:
    stream = client.responses.create(model="gemini-2.5-flash", input="[[mock:malformed]] x", tools=[WEATHER],
                                     stream=True)
    events = list(stream)
    assert events[-1].type == "response.failed"
    assert "MALFORMED_FUNCTION_CALL" in events[-1].response.error.message


def test_mid_stream_upstream_error_fails_the_response(client: openai.OpenAI) -> None:
    stream = client.responses.create(model="gemini-2.5-flash", input="[[mock:stream_error]] tell me a long story",
                                     stream=True)
    events = list(stream)
    assert events[-1].type == "response.failed"
    assert "INTERNAL" in events[-1].response.error.message
    # Items opened before the error are closed before the terminal event (SDK invariant 6).
    assert any(e.type == "response.output_item.done" for e in events)


def test_streaming_is_not_buffered(client: openai.OpenAI) -> None:
    """With the mock pausing 0.4 s between chunks, the first delta must arrive well before the end."""
    stamps: dict[str, float] = {}
    with client.responses.stream(model="gemini-2.5-flash",
                                 input="[[mock:slow 0.4]] a sentence long enough to come in several chunks") as s:
        for e in s:
            stamps.setdefault(e.type, time.monotonic())
            if e.type == "response.completed":
                stamps["end"] = time.monotonic()
    assert stamps["end"] - stamps["response.output_text.delta"] >= 0.6


@pytest.mark.parametrize(("directive", "error", "status"), [
    ("error 429", openai.RateLimitError, 429),
    ("error 500", openai.InternalServerError, 500),
    ("error 503", openai.InternalServerError, 503),
])
@pytest.mark.parametrize("stream", [False, True])
def test_upstream_errors_reach_the_client_with_geminis_message(client, directive, error, status, stream) -> None:
    with pytest.raises(error) as info:
        client.responses.create(model="gemini-2.5-flash", input=f"[[mock:{directive}]]", stream=stream)
    assert info.value.status_code == status
    assert info.value.body["message"].startswith("Gemini error: ")
    assert info.value.body["type"] == ("rate_limit_error" if status == 429 else "server_error")


def test_bad_api_key_message_kept(stack) -> None:
    c = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="bad-key", _strict_response_validation=True, max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        c.responses.create(model="gemini-2.5-flash", input="hi")
    assert "API key not valid. Please pass a valid API key." in info.value.message


def test_unknown_model_is_404_with_geminis_text(client) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        client.responses.create(model="gpt-4o", input="hi")
    assert "models/gpt-4o is not found for API version v1beta" in info.value.message


def test_health_and_models(client, stack) -> None:
    import urllib.request
    with urllib.request.urlopen(f"{stack.url}/healthz") as r:
        assert json.load(r) == {"status": "ok"}
    ids = [m.id for m in client.models.list()]
    assert "gemini-2.5-flash" in ids and "gemini-3-pro-preview" in ids


def test_parallel_tool_calls_false_keeps_the_first_call(client: openai.OpenAI) -> None:
    r1 = client.responses.create(model="gemini-2.5-flash", input="get_weather get_time city=X", tools=[WEATHER, TIME],
                                 parallel_tool_calls=False)
    assert [o.name for o in r1.output] == ["get_weather"] and r1.parallel_tool_calls is False
    # The dropped call is gone from history too, so one output completes the turn.
    r2 = client.responses.create(model="gemini-2.5-flash", previous_response_id=r1.id, tools=[WEATHER, TIME],
                                 input=[{"type": "function_call_output", "call_id": r1.output[0].call_id,
                                         "output": "ok"}])
    assert r2.output_text == 'Tool results: get_weather returned {"output": "ok"}'


def test_strict_tools_use_validated_mode(client: openai.OpenAI, stack) -> None:
    client.responses.create(model="gemini-2.5-flash", input="hello", tools=[WEATHER])  # WEATHER is strict
    assert stack.last_body()["toolConfig"] == {"functionCallingConfig": {"mode": "VALIDATED"}}
    client.responses.create(model="gemini-2.5-flash", input="hello", tools=[WEATHER], tool_choice="required")
    assert stack.last_body()["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


@pytest.mark.parametrize(("mode", "config"), [("required", {"mode": "ANY", "allowedFunctionNames": ["get_time"]}),
                                              ("auto", {"mode": "VALIDATED", "allowedFunctionNames": ["get_time"]})])
def test_allowed_tools(client: openai.OpenAI, stack, mode: str, config: dict) -> None:
    r = client.responses.create(model="gemini-2.5-flash", input="get_weather get_time city=A", tools=[WEATHER, TIME],
                                tool_choice={"type": "allowed_tools", "mode": mode,
                                             "tools": [{"type": "function", "name": "get_time"}]})
    assert stack.last_body()["toolConfig"] == {"functionCallingConfig": config}
    assert [o.name for o in r.output] == ["get_time"]


@pytest.mark.parametrize("stream", [False, True])
def test_ignored_forced_choice_is_retried_once_with_a_directive(client: openai.OpenAI, stack, stream) -> None:
    before = stack.accepted
    kwargs = {"model": "gemini-2.5-flash", "input": "[[mock:ignore_choice]] hello", "tools": [WEATHER],
              "tool_choice": "required"}
    if stream:
        with client.responses.stream(**kwargs) as s:
            final = s.get_final_response()
    else:
        final = client.responses.create(**kwargs)
    assert [o.type for o in final.output] == ["function_call"]
    first, retry = stack.received[before - stack.accepted:]
    assert "systemInstruction" not in first["body"]
    assert "You must answer this turn by calling one of the available functions" in json.dumps(
        retry["body"]["systemInstruction"])
    # The journal: two calls, each with its own body and answer, and why the second was made.
    doc = stack.exchange()
    ignored, retried = doc["upstream"]
    assert ignored["request"] == first["body"] and retried["request"] == retry["body"]
    answers = [[c] if c else [] for c in (ignored["answer"], retried["answer"])]
    parts = [[p for a in answer for p in a["candidates"][0]["content"]["parts"]] for answer in answers]
    assert not any("functionCall" in p for p in parts[0]) and any("functionCall" in p for p in parts[1])
    assert [c["name"] for c in doc["calls"]] == ["get_weather"]  # once: the retry's
    assert any(n["kind"] == "tool_choice" for n in doc["decisions"])


@pytest.mark.parametrize("stream", [False, True])
def test_forced_choice_ignored_twice_is_a_clear_error(client: openai.OpenAI, stream) -> None:
    with pytest.raises(openai.InternalServerError) as info:
        client.responses.create(model="gemini-2.5-flash", input="[[mock:ignore_choice always]] hi", tools=[WEATHER],
                                tool_choice={"type": "function", "name": "get_weather"}, stream=stream)
    assert info.value.status_code == 502 and info.value.body["code"] == "tool_choice_ignored"
    assert "also after a retry" in info.value.message
    with pytest.raises(openai.InternalServerError):  # Chat too
        client.chat.completions.create(model="gemini-2.5-flash", tool_choice="required", messages=[
            {"role": "user", "content": "[[mock:ignore_choice always]] hi"}],
            tools=[{"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}])
