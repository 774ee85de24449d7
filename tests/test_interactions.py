"""The Interactions API in all three directions, with the real SDKs against the strict mock:
google-genai's `client.interactions` through the front-end, the openai SDK (strict) through
`--upstream-api interactions`, and the mock's own Interactions surface."""

import json

import openai
import pytest
from google import genai
from google.genai._gaos.lib.compat_errors import APIError  # what client.interactions raises (3.x)
from google.genai.interactions import CreateModelInteraction

from proxy.mock.validate import sign
from proxy.schema.gemini_to_json_schema import gemini_to_json_schema
from proxy.upstream.interactions.client import InteractionsUpstream
from proxy.upstream.interactions.request import interactions_request
from proxy.upstream.routes import RoutedUpstream, parse_upstream_api
from tests.harness import Stack

WEATHER = {"type": "function", "name": "get_weather", "description": "Current weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
TIME = {"type": "function", "name": "get_time", "description": "Local time",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
G3 = "gemini-3-flash-preview"


def sdk(url: str) -> genai.Client:
    return genai.Client(api_key="test-key", http_options={"base_url": url, "api_version": "v1beta"})


def results_for(steps, value="sunny") -> list[dict]:
    return [{"type": "function_result", "call_id": s.id, "name": s.name, "result": {"forecast": f"{value} {s.name}"}}
            for s in steps if s.type == "function_call"]


def collect(events) -> tuple[list, list[dict]]:
    """Rebuild the steps of a stream the way a client would, and keep the raw events."""
    steps: dict[int, dict] = {}
    args: dict[int, str] = {}
    seen = []
    for e in events:
        seen.append(e)
        if e.event_type == "step.start":
            steps[e.index] = e.step.model_dump(exclude_none=True)
        elif e.event_type == "step.delta":
            d = e.delta
            if d.type == "text":
                content = steps[e.index].setdefault("content", [{"type": "text", "text": ""}])
                content[0]["text"] += d.text
            elif d.type == "arguments_delta":
                args[e.index] = args.get(e.index, "") + d.arguments
            elif d.type == "thought_signature":
                steps[e.index]["signature"] = d.signature
    for i, a in args.items():
        steps[i]["arguments"] = json.loads(a)
    return seen, [steps[i] for i in sorted(steps)]


# -- the front-end, with google-genai ---------------------------------------------------------------

@pytest.mark.parametrize("model", [G3, "gemini-2.5-flash"])
def test_parallel_calls_chained_by_previous_interaction_id(stack: Stack, model: str) -> None:
    c = sdk(stack.url)
    first = c.interactions.create(model=model, input="call get_weather and get_time city=Paris",
                                  tools=[WEATHER, TIME])
    assert first.status == "requires_action"
    calls = [s for s in first.steps if s.type == "function_call"]
    assert [(s.name, s.arguments) for s in calls] == [("get_weather", {"city": "Paris"}),
                                                      ("get_time", {"city": "Paris"})]
    assert len({s.id for s in calls}) == 2
    if model == G3:  # Gemini 3's signature is a thought step just before the call it signs
        assert first.steps[0].type == "thought" and first.steps[0].signature == sign(model, "get_weather",
                                                                                     {"city": "Paris"})
    second = c.interactions.create(model=model, previous_interaction_id=first.id, input=results_for(calls),
                                   tools=[WEATHER, TIME])
    assert second.status == "completed"
    assert second.output_text == ('Tool results: get_weather returned {"forecast": "sunny get_weather"}; '
                                  'get_time returned {"forecast": "sunny get_time"}')
    sent = stack.received[-1]["body"]["contents"]
    assert [c["role"] for c in sent] == ["user", "model", "user"]
    if model == G3:  # Gemini 3's call ids go back on the responses
        assert [p["functionResponse"]["id"] for p in sent[2]["parts"]] == [s.id for s in calls]
    got = c.interactions.get(second.id)
    assert [s.type for s in got.steps][:2] == ["function_result", "function_result"], "GET shows the input first"


def test_stateless_resend_streamed(stack: Stack) -> None:
    c = sdk(stack.url)
    prompt = {"type": "user_input", "content": [{"type": "text", "text": "call get_weather city=Oslo"}]}
    events, steps = collect(c.interactions.create(model=G3, input=[prompt], tools=[WEATHER], stream=True,
                                                  store=False))
    assert [e.event_type for e in events][0] == "interaction.created"
    assert events[-1].event_type == "interaction.completed" and events[-1].interaction.status == "requires_action"
    assert [s["type"] for s in steps] == ["thought", "function_call"]
    ids = [e.event_id for e in events]
    assert len(set(ids)) == len(ids), "every event has its own resumable id"
    follow = c.interactions.create(model=G3, store=False, tools=[WEATHER], stream=True,
                                   input=[prompt, *steps, {"type": "function_result", "call_id": steps[1]["id"],
                                                           "name": "get_weather", "result": "cold"}])
    events, out = collect(follow)
    text = next(s for s in out if s["type"] == "model_output")["content"][0]["text"]
    assert text == 'Tool results: get_weather returned {"output": "cold"}'
    sent = stack.received[-1]["body"]["contents"]
    assert sent[1]["parts"][0]["thoughtSignature"] == sign(G3, "get_weather", {"city": "Oslo"})
    with pytest.raises(APIError) as e:  # store=false: nothing to continue from
        c.interactions.get(events[0].interaction.id)
    assert e.value.status_code == 404


def test_gemma_in_prompt_mode(stack: Stack) -> None:
    c = sdk(stack.url)
    first = c.interactions.create(model="gemma-4-31b-it", input="call get_weather and get_time city=Lima",
                                  tools=[WEATHER, TIME])
    calls = [s for s in first.steps if s.type == "function_call"]
    assert [s.name for s in calls] == ["get_weather", "get_time"]
    assert "tools" not in stack.received[-1]["body"], "Gemma gets its tools in the prompt"
    second = c.interactions.create(model="gemma-4-31b-it", previous_interaction_id=first.id,
                                   input=results_for(calls), tools=[WEATHER, TIME])
    assert second.status == "completed" and "sunny get_time" in second.output_text


def test_resume_a_stream_from_an_event_id(stack: Stack) -> None:
    c = sdk(stack.url)
    events, _ = collect(c.interactions.create(model=G3, input="tell me a story", stream=True))
    iid = events[0].interaction.id
    text = "".join(e.delta.text for e in events if e.event_type == "step.delta" and e.delta.type == "text")
    middle = next(e for e in events if e.event_type == "step.delta" and e.delta.type == "text")
    rest = list(c.interactions.get(iid, stream=True, last_event_id=middle.event_id))
    resumed = middle.delta.text + "".join(e.delta.text for e in rest if e.event_type == "step.delta"
                                          and e.delta.type == "text")
    assert resumed == text and rest[-1].event_type == "interaction.completed"


def test_errors_in_the_interactions_shape(stack: Stack) -> None:
    c = sdk(stack.url)
    with pytest.raises(APIError) as e:
        c.interactions.create(model=G3, input="hi", previous_interaction_id="v1_nope")
    assert e.value.status_code == 404 and "v1_nope" in str(e.value)
    with pytest.raises(APIError) as e:
        c.interactions.create(model=G3, input=[{"type": "function_result", "call_id": "x", "result": "r"}])
    assert e.value.status_code == 400 and "x" in str(e.value)
    with pytest.raises(APIError) as e:
        c.interactions.create(model=G3, input="hi", tools=[{"type": "mcp_server", "name": "m", "url": "https://x"}])
    assert e.value.status_code == 400 and "tools[0].type" in str(e.value)
    with pytest.raises(APIError) as e:  # an empty answer is never a success
        c.interactions.create(model=G3, input="[[mock:empty parts]] hi")
    assert e.value.status_code == 502
    events = list(c.interactions.create(model=G3, input="[[mock:cut]] hi", stream=True))
    assert events[-1].event_type == "error", "a truncated stream ends with an error event, never completed"
    assert all(e.event_type != "interaction.completed" for e in events)


def test_background_and_cancel(stack: Stack) -> None:
    c = sdk(stack.url)
    started = c.interactions.create(model=G3, input="[[mock:slow 2]] tell me a story", background=True)
    assert started.status == "in_progress"
    cancelled = c.interactions.cancel(started.id)
    assert cancelled.status == "cancelled"
    done = c.interactions.create(model=G3, input="hello", background=True)
    for _ in range(100):
        got = c.interactions.get(done.id)
        if got.status != "in_progress":
            break
        stack.lt.run(__import__("asyncio").sleep(0.05))
    assert got.status == "completed" and got.output_text
    # Issue 57 item 10: cancelling a run that has ended changes nothing and returns it (as Responses
    # does for a background response); it was a 400.
    again = c.interactions.cancel(done.id)
    assert again.status == "completed" and again.output_text == got.output_text
    assert c.interactions.cancel(cancelled.id).status == "cancelled"
    c.interactions.delete(done.id)
    with pytest.raises(APIError):
        c.interactions.get(done.id)


def test_a_running_background_interaction_deleted_stays_deleted(stack: Stack) -> None:
    """Its task ends after the DELETE and stores its cancelled end: that must not bring it back."""
    c = sdk(stack.url)
    started = c.interactions.create(model=G3, input="[[mock:slow 1]] tell me a story", background=True)
    c.interactions.delete(started.id)
    stack.lt.run(__import__("asyncio").sleep(1.5))
    with pytest.raises(APIError) as e:
        c.interactions.get(started.id)
    assert e.value.status_code == 404


def test_function_result_with_an_image_and_an_error(stack: Stack) -> None:
    c = sdk(stack.url)
    first = c.interactions.create(model=G3, input="call get_weather city=Rome", tools=[WEATHER])
    call = next(s for s in first.steps if s.type == "function_call")
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    c.interactions.create(model=G3, previous_interaction_id=first.id, tools=[WEATHER], input=[
        {"type": "function_result", "call_id": call.id, "name": "get_weather", "is_error": True,
         "result": [{"type": "text", "text": "radar"}, {"type": "image", "data": png, "mime_type": "image/png"}]}])
    fr = stack.received[-1]["body"]["contents"][-1]["parts"][0]["functionResponse"]
    assert fr["response"]["error"] == "radar" and fr["parts"][0]["inlineData"]["data"] == png


# -- the upstream: openai SDK (strict) -> front-end -> the mock's Interactions API ---------------------

@pytest.fixture(scope="module")
def ia_stack():
    s = Stack(wrap=lambda up: RoutedUpstream(up, [("*", InteractionsUpstream(up.base_url, api_key="test-key"))]),
              journal=True)
    yield s
    s.close()


def oa(s: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{s.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_responses_over_the_interactions_upstream(ia_stack: Stack, stream: bool) -> None:
    c = oa(ia_stack)
    tools = [WEATHER, TIME]
    if stream:
        with c.responses.stream(model=G3, input="call get_weather and get_time city=Bern", tools=tools) as s:
            first = s.get_final_response()
    else:
        first = c.responses.create(model=G3, input="call get_weather and get_time city=Bern", tools=tools)
    calls = [o for o in first.output if o.type == "function_call"]
    assert [o.name for o in calls] == ["get_weather", "get_time"]
    sent = ia_stack.received[-1]
    assert sent["method"] == "interactions" and "previous_interaction_id" not in sent["body"]
    # The journal keeps the Interactions API's own request and answer (events, streamed), not Gemini's.
    doc = ia_stack.exchange()
    [up] = doc["upstream"]
    assert up["wire"] == "interactions" and up["request"] == sent["body"]
    if stream:
        assert up["answer"] is None and {"event_type"} <= set(up["chunks"][0])
    else:
        assert up["answer"]["id"] and up["answer"]["steps"]
    assert [c["name"] for c in doc["calls"]] == ["get_weather", "get_time"]
    outputs = [{"type": "function_call_output", "call_id": o.call_id, "output": f"ok {o.name}"} for o in calls]
    second = c.responses.create(model=G3, previous_response_id=first.id, input=outputs, tools=tools, stream=stream)
    if stream:
        second = [e for e in second if e.type == "response.completed"][0].response
    assert second.output_text.startswith("Tool results: get_weather returned")
    body = ia_stack.received[-1]["body"]
    assert body["previous_interaction_id"], "previous_response_id became previous_interaction_id"
    assert [s["type"] for s in body["input"]] == ["function_result", "function_result"], "only the new steps"
    # A stateless client resends everything: the upstream still sends only the new steps.
    items = [{"role": "user", "content": "call get_weather and get_time city=Bern"},
             *[o.model_dump(exclude_none=True) for o in calls], *outputs]
    third = c.responses.create(model=G3, input=items, tools=tools, store=False)
    assert third.output_text == second.output_text
    assert ia_stack.received[-1]["body"]["input"] == body["input"]


def test_chat_over_the_interactions_upstream_and_a_lost_interaction(ia_stack: Stack) -> None:
    c = oa(ia_stack)
    tool = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}
    msgs = [{"role": "user", "content": "call get_weather city=Quito"}]
    first = c.chat.completions.create(model=G3, messages=msgs, tools=[tool])
    call = first.choices[0].message.tool_calls[0]
    ia_stack.mock_app[__import__("proxy.mock.interactions", fromlist=["STORE"]).STORE].clear()  # Google forgot it
    msgs += [first.choices[0].message.model_dump(exclude_none=True),
             {"role": "tool", "tool_call_id": call.id, "content": "warm"}]
    second = c.chat.completions.create(model=G3, messages=msgs, tools=[tool])
    assert second.choices[0].message.content == 'Tool results: get_weather returned {"output": "warm"}'
    body = ia_stack.received[-1]["body"]
    assert "previous_interaction_id" not in body and body["input"][0]["type"] == "user_input", "whole history resent"
    # The journal: the refused continuation and the whole history, each a call with its own body.
    doc = ia_stack.exchange()
    lost, whole = doc["upstream"]
    assert lost["request"]["previous_interaction_id"] and [a["status"] for a in lost["attempts"]] == [404]
    assert whole["request"] == body and [a["status"] for a in whole["attempts"]] == [200]
    assert any("no longer has" in n["message"] for n in doc["decisions"] if n["kind"] == "history")


# -- long answers in hops (requires_continuation) ---------------------------------------------------
# The mock stops an answer at its "decode limit" as google-genai 3.6's types and its own continuation
# tests describe the wire; no live recording of a continuation is public (proxy/mock/interactions.py).

HOPS = "[[mock:hops 3]] tell me about Bern"
WHOLE = f"Mock Gemini ({G3}) heard: tell me about Bern"


def _hop_answers(doc: dict) -> list[dict]:
    """Each call's interaction as the journal kept it (whole, or its stream's completion event)."""
    out = []
    for up in doc["upstream"]:
        if up["answer"] is not None:
            out.append(up["answer"])
        else:
            [done] = [e["interaction"] for e in up["chunks"] if e.get("event_type") == "interaction.completed"]
            out.append(done)
    return out


@pytest.mark.parametrize("stream", [False, True])
def test_a_long_answer_is_continued_hop_by_hop(ia_stack: Stack, stream: bool) -> None:
    """Google stops a long decode with requires_continuation and a token: the proxy asks for the next
    hop as google-genai does (the token, the hop that issued it as previous_interaction_id, no input),
    passes the hops on as one answer with their tokens summed, and the next turn continues the last hop."""
    c = oa(ia_stack)
    msgs = [{"role": "user", "content": HOPS}]
    if stream:
        chunks = list(c.chat.completions.create(model=G3, messages=msgs, stream=True,
                                                stream_options={"include_usage": True}))
        text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
        [usage] = [ch.usage for ch in chunks if ch.usage]
        assert [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason] == [
            "stop"]
    else:
        answer = c.chat.completions.create(model=G3, messages=msgs)
        text, usage = answer.choices[0].message.content, answer.usage
        assert answer.choices[0].finish_reason == "stop"
    assert text == WHOLE
    sent = [r["body"] for r in ia_stack.received[-3:]]
    assert sent[0]["input"] and "continuation_token" not in sent[0]
    doc = ia_stack.exchange()
    hops = _hop_answers(doc)
    assert [h["status"] for h in hops] == ["requires_continuation", "requires_continuation", "completed"]
    for hop, before in zip(sent[1:], hops, strict=False):
        assert hop["continuation_token"] == before["continuation_token"]
        assert hop["previous_interaction_id"] == before["id"] and "input" not in hop
        assert {k: v for k, v in hop.items() if k not in ("continuation_token", "previous_interaction_id")} == {
            k: v for k, v in sent[0].items() if k != "input"}, "otherwise the request as first sent"
    assert [u["request"] for u in doc["upstream"]] == sent, "each hop is a call of its own in the journal"
    assert len([n for n in doc["decisions"] if n["kind"] == "continuation"]) == 2
    assert usage.prompt_tokens == sum(h["usage"]["total_input_tokens"] for h in hops) > hops[0]["usage"][
        "total_input_tokens"], "every hop's input counts, as billed"
    assert usage.completion_tokens == sum(h["usage"]["total_output_tokens"] for h in hops)
    # The next turn goes on from the last hop, which Google stored with the whole answer.
    msgs += [{"role": "assistant", "content": text}, {"role": "user", "content": "and Oslo?"}]
    c.chat.completions.create(model=G3, messages=msgs)
    follow = ia_stack.received[-1]["body"]
    assert follow["previous_interaction_id"] == hops[-1]["id"] and len(follow["input"]) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_a_continuation_that_makes_no_progress_is_refused(ia_stack: Stack, stream: bool) -> None:
    """A hop that hands back the token it was continued with would be asked again forever: the answer
    is refused with a 502 naming it, never passed on as if the first hop's text were all of it."""
    c = openai.OpenAI(base_url=f"{ia_stack.url}/v1", api_key="k", max_retries=0)
    if stream:
        events = list(c.responses.create(model=G3, input="[[mock:hops 3 stuck]] tell me about Rome", stream=True))
        assert events[-1].type == "response.failed"
        assert "no progress" in events[-1].response.error.message
    else:
        with pytest.raises(openai.APIStatusError) as e:
            c.responses.create(model=G3, input="[[mock:hops 3 stuck]] tell me about Rome")
        assert e.value.status_code == 502 and "no progress" in e.value.message
    assert len(ia_stack.exchange()["upstream"]) == 2


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("mode, calls", [("alternate", 3), ("empty", 2)])
def test_a_continuation_going_round_or_adding_nothing_is_refused(ia_stack: Stack, stream: bool, mode: str,
                                                                 calls: int) -> None:
    """Issue 57 item 7: tokens that alternate (A, B, A) or a hop with no step would be continued to
    MAX_HOPS billed hops: refused at the first token seen before, or the hop that added nothing."""
    c = openai.OpenAI(base_url=f"{ia_stack.url}/v1", api_key="k", max_retries=0)
    text = f"[[mock:hops 2 {mode}]] tell me about Rome"
    if stream:
        events = list(c.responses.create(model=G3, input=text, stream=True))
        assert events[-1].type == "response.failed" and "no progress" in events[-1].response.error.message
    else:
        with pytest.raises(openai.APIStatusError) as e:
            c.chat.completions.create(model=G3, messages=[{"role": "user", "content": text}])
        assert e.value.status_code == 502 and "no progress" in e.value.message
    assert len(ia_stack.exchange()["upstream"]) == calls


def test_an_answer_past_the_hop_limit_is_refused(ia_stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    from proxy.from_gemini import merge_hops
    monkeypatch.setattr(merge_hops, "MAX_HOPS", 2)
    with pytest.raises(openai.APIStatusError) as e:
        oa(ia_stack).chat.completions.create(model=G3, messages=[{"role": "user", "content": HOPS}])
    assert e.value.status_code == 502 and "after 2 continuation hops" in e.value.message


@pytest.mark.filterwarnings("ignore:Interaction stopped before completion")  # the SDK, not continuing as told
def test_the_mock_continues_as_google_genai_expects(stack: Stack) -> None:
    """google-genai's own automatic continuation drives the mock's hops (stored and not), and the mock
    refuses continuations that do not name the hop that issued the token."""
    c = sdk(stack.mock_url)
    for store in (True, False):
        r = c.interactions.create(model=G3, input=HOPS, store=store)
        assert r.status == "completed" and r.output_text == WHOLE and len(r.continuation_ids) == 3
    first = c.interactions.create(model=G3, input=HOPS, automatic_continuation=False)
    assert first.status == "requires_continuation" and first.continuation_token
    bad = [{"continuation_token": "ct_unknown", "previous_interaction_id": first.id},
           {"continuation_token": first.continuation_token, "previous_interaction_id": "v1_other"},
           {"continuation_token": first.continuation_token, "previous_interaction_id": first.id, "input": "again"}]
    for extra in bad:
        with pytest.raises(APIError) as e:
            c.interactions.create(model=G3, automatic_continuation=False, **extra)
        assert e.value.status_code == 400 and ("continuation_token" in str(e.value) or "input" in str(e.value))


def test_hops_merge_as_google_genai_merges_them() -> None:
    """The numbers of google-genai's own test (test_unary_automatic_continuation_with_request_object)."""
    from proxy.upstream.interactions.continuation import merged, next_request
    hop1 = {"id": "int_req_1", "status": "requires_continuation", "continuation_token": "tok_req_1",
            "steps": [{"type": "model_output", "content": [{"type": "text", "text": "Part A "}]}],
            "usage": {"total_input_tokens": 10, "total_output_tokens": 40, "total_thought_tokens": 5,
                      "total_tokens": 55}}
    hop2 = {"id": "int_req_2", "status": "completed",
            "steps": [{"type": "user_input", "content": [{"type": "text", "text": "Hello"}]},
                      {"type": "model_output", "content": [{"type": "text", "text": "Part B"}]}],
            "usage": {"total_input_tokens": 50, "total_output_tokens": 30, "total_tokens": 80}}
    both = merged([hop1, hop2])
    assert both["id"] == "int_req_2" and both["status"] == "completed"
    assert [s["content"][0]["text"] for s in both["steps"]] == ["Part A ", "Part B"]
    assert both["usage"] == {"total_input_tokens": 60, "total_output_tokens": 70, "total_thought_tokens": 5,
                             "total_tokens": 135}
    req = {"model": G3, "input": "Hello", "tools": []}
    assert next_request(req, "tok_req_1", "int_req_1") == {"model": G3, "tools": [], "continuation_token": "tok_req_1",
                                                           "previous_interaction_id": "int_req_1"}
    assert next_request({**req, "store": False}, "t", "int_req_1") == {**req, "store": False,
                                                                      "continuation_token": "t"}


def test_upstream_api_rules() -> None:
    assert parse_upstream_api(["gemini-3*=interactions", "generate"]) == [("gemini-3*", "interactions"),
                                                                          ("*", "generate")]
    with pytest.raises(ValueError, match="--upstream-api"):
        parse_upstream_api(["gemini-3*=responses"])


def test_upstream_requests_are_valid_sdk_requests() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]},
                         {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "f", "args": {"a": 1}},
                                                      "thoughtSignature": "c2ln"}]},
                         {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "f",
                                                                          "response": {"output": "x"}}}]}],
            "systemInstruction": {"parts": [{"text": "be brief"}]},
            "tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT", "properties": {
                "a": {"type": "INTEGER", "nullable": True}}}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}},
            "generationConfig": {"temperature": 0.2, "thinkingConfig": {"thinkingLevel": "HIGH",
                                                                        "includeThoughts": True}}}
    req = interactions_request("models/gemini-3-flash-preview", body)
    CreateModelInteraction.model_validate(req)
    assert [s["type"] for s in req["input"]] == ["user_input", "thought", "function_call", "function_result"]
    assert req["tools"][0]["parameters"]["properties"]["a"]["type"] == ["integer", "null"]
    assert req["generation_config"]["tool_choice"] == {"allowed_tools": {"mode": "any", "tools": ["f"]}}
    assert gemini_to_json_schema({"type": "ARRAY", "items": {"type": "STRING"}}) == {"type": "array",
                                                                                       "items": {"type": "string"}}


# -- the mock's own Interactions API --------------------------------------------------------------

def test_mock_is_strict(stack: Stack) -> None:
    c = sdk(stack.mock_url)
    first = c.interactions.create(model=G3, input="call get_weather city=Paris", tools=[WEATHER])
    steps = [s.model_dump(exclude_none=True) for s in first.steps]
    prompt = {"type": "user_input", "content": [{"type": "text", "text": "call get_weather city=Paris"}]}
    result = {"type": "function_result", "call_id": steps[-1]["id"], "name": "get_weather", "result": "r"}
    with pytest.raises(APIError, match="thought_signature"):
        c.interactions.create(model=G3, input=[prompt, steps[-1], result], tools=[WEATHER], store=False)
    with pytest.raises(APIError, match="no function call with id"):
        c.interactions.create(model=G3, input=[prompt, {**result, "call_id": "zzz"}], tools=[WEATHER])
    with pytest.raises(APIError, match='Unknown name "bogus"'):
        c.interactions.create(model=G3, input="hi", extra_body={"bogus": 1})
    with pytest.raises(APIError) as e:
        c.interactions.create(model=G3, input="hi", previous_interaction_id="v1_missing")
    assert e.value.status_code == 404
    ok = c.interactions.create(model=G3, input=[prompt, *steps, result], tools=[WEATHER], store=False)
    assert ok.status == "completed"
