"""The Open Responses compliance checks (openresponses/openresponses, src/lib/compliance-tests.ts at
0cb939ccf839234347b4f0c317569b49fad8fd0e) as our own module, against the front-end + strict mock:
basic, streaming, system prompt, image input, multi-turn, tool calling, streamed tool calling, and
previous_response_id. The requests are the suite's; bodies are validated by the openai SDK (strict),
every streamed event by the SDK's event union, then the suite's semantic checks are applied.

One change to the suite's requests: the mock is scripted and calls a tool only when the prompt names
it, so the tool-calling prompts end with "(get_weather)". A real model decides by itself.
Every body and every event's `response` is also checked against the specification's ResponseResource
(tests/open_responses_spec.py). The specification's other endpoints (DELETE, cancel, input_items,
compact) are here too; its WebSocket cases are in tests/test_responses_websocket.py.
"""

import json
import time
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from tests.harness import Stack
from tests.open_responses_spec import CompactResource, check_events, check_response

MODELS = ["gemini-2.5-flash", "gemini-3-flash-preview"]
EVENT = TypeAdapter(ResponseStreamEvent)
WEATHER = {"type": "function", "name": "get_weather", "description": "Get the current weather for a location",
           "parameters": {"type": "object", "properties": {"location": {
               "type": "string", "description": "The city and state, e.g. San Francisco, CA"}},
               "required": ["location"]}}
TOOL_PROMPT = "What's the weather like in San Francisco? (get_weather)"
# The suite's image: a red heart icon on a white background, 32x32 PNG.
HEART = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAABmklEQVR42tyWAaTyUBzFew/eG4AHz+"
         "MBSAHKBiJRGFKwIgQQJKLUIioBIhCAiCAAEizAQIAECaASqFFJq84nudjnaqvuPnxzgP9xfrq5938csPn7PwHTKSoViCIEAYEAMh"
         "moKsU2mUCWEQqB5xEMIp/HaGQG2G6RSuH9HQ7H34rFrtPbdz4jl6PbwmEsl3QA1mt4vcRKk8dz9eg6IpF7tt9fzGY0gCgafFRFo5"
         "Blc5vLhf3eCOj1yNhM5GRMVK0aATxPZoz09YXjkQDmczJgquGQAPp9WwCNBgG027YACgUC6HRsAZRKBDAY2AJoNv/ZnwzA6WSczn"
         "G3p4UAymXGAEkyXrTFAh8fLAGqagQAyGaZpYsi7bHTNPz8MEj//LxuFPo+UBS8vb0KaLXubrRa7aX0RMLCykwmn0z3+XA4WACcTp"
         "Ckh9MFAZpmuVXo+mO/w+/HZvNgbblcUCxaSo/Hyck80Yu6XXDcvfVZr79cvMZjuN2U9O9vKAqjZrfbIZ0mV4TUi9Xqz6jddNy//7"
         "+e3n8Fhf/Llo2kxi8AQyGRoDkmAhAAAAAASUVORK5CYII=")


@pytest.fixture(scope="module")
def stack():
    s = Stack()
    yield s
    s.close()


def _client(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)


def _create(stack: Stack, body: dict[str, Any]) -> Response:
    """A whole response through the SDK, strictly validated, and the suite's hasOutput / completed."""
    raw = _client(stack).responses.with_raw_response.create(**body)
    check_response(json.loads(raw.text))
    r = raw.parse()
    assert r.output, "Response has no output items"
    assert r.status == "completed", r.status
    return r


def _stream(stack: Stack, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The raw SSE stream, as the suite reads it, each event validated by the SDK's event union."""
    req = urllib.request.Request(f"{stack.url}/v1/responses", method="POST",
                                 data=json.dumps({**body, "stream": True}).encode(),
                                 headers={"content-type": "application/json", "authorization": "Bearer k"})
    events: list[dict[str, Any]] = []
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 200 and r.headers["content-type"].startswith("text/event-stream")
        for block in r.read().decode().split("\n\n"):
            data = [ln[5:].strip() for ln in block.splitlines() if ln.startswith("data:")]
            names = [ln[6:].strip() for ln in block.splitlines() if ln.startswith("event:")]
            if not data or data == ["[DONE]"]:
                continue
            event = json.loads("\n".join(data))
            assert not names or names[0] == event["type"], "the SSE event name is the event's type"
            EVENT.validate_python(event)
            events.append(event)
    assert events, "No streaming events received"
    numbers = [e["sequence_number"] for e in events]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), "sequence numbers increase"
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    assert len({e["response"]["id"] for e in events if "response" in e}) == 1
    Response.model_validate(events[-1]["response"])
    check_events(events)
    return events


@pytest.mark.parametrize("model", MODELS)
def test_basic_response(stack: Stack, model: str) -> None:
    _create(stack, {"model": model, "input": [
        {"type": "message", "role": "user", "content": "Say hello in exactly 3 words."}]})


@pytest.mark.parametrize("model", MODELS)
def test_streaming_response(stack: Stack, model: str) -> None:
    events = _stream(stack, {"model": model, "input": [
        {"type": "message", "role": "user", "content": "Count from 1 to 5."}]})
    assert events[-1]["response"]["status"] == "completed"
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    done = [e for e in events if e["type"] == "response.output_text.done"]
    assert done and done[0]["text"] == deltas, "the deltas add up to the done text"


@pytest.mark.parametrize("model", MODELS)
def test_system_prompt(stack: Stack, model: str) -> None:
    _create(stack, {"model": model, "input": [
        {"type": "message", "role": "system", "content": "You are a pirate. Always respond in pirate speak."},
        {"type": "message", "role": "user", "content": "Say hello."}]})
    assert "pirate" in json.dumps(stack.last_body().get("systemInstruction")), "the system message reached Gemini"


@pytest.mark.parametrize("model", MODELS)
def test_tool_calling(stack: Stack, model: str) -> None:
    r = _client(stack).responses.create(model=model, tools=[WEATHER], input=[
        {"type": "message", "role": "user", "content": TOOL_PROMPT}])
    assert r.output, "Response has no output items"
    calls = [o for o in r.output if o.type == "function_call"]
    assert calls, 'Expected output item of type "function_call" but none found'
    assert calls[0].name == "get_weather" and "location" in json.loads(calls[0].arguments)


@pytest.mark.parametrize("model", MODELS)
def test_tool_calling_streaming(stack: Stack, model: str) -> None:
    events = _stream(stack, {"model": model, "tools": [WEATHER], "input": [
        {"type": "message", "role": "user", "content": TOOL_PROMPT}]})
    types = [e["type"] for e in events]
    assert any(e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call" for e in events)
    assert "response.function_call_arguments.delta" in types
    assert "response.function_call_arguments.done" in types
    assert any(e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call" for e in events)
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"
                     and e["item_id"] == done["item_id"])
    assert deltas == done["arguments"] and "location" in json.loads(done["arguments"])


@pytest.mark.parametrize("model", MODELS)
def test_image_input(stack: Stack, model: str) -> None:
    _create(stack, {"model": model, "input": [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "What do you see in this image? Answer in one sentence."},
        {"type": "input_image", "image_url": HEART}]}]})
    parts = stack.last_body()["contents"][-1]["parts"]
    assert any(p.get("inlineData", {}).get("mimeType") == "image/png" for p in parts), "the image reached Gemini"


@pytest.mark.parametrize("model", MODELS)
def test_multi_turn(stack: Stack, model: str) -> None:
    _create(stack, {"model": model, "input": [
        {"type": "message", "role": "user", "content": "My name is Alice."},
        {"type": "message", "role": "assistant", "content": "Hello Alice! Nice to meet you. How can I help you today?"},
        {"type": "message", "role": "user", "content": "What is my name?"}]})
    contents = stack.last_body()["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]


@pytest.mark.parametrize("model", MODELS)
def test_previous_response_id(stack: Stack, model: str) -> None:
    first = _create(stack, {"model": model, "input": [
        {"type": "message", "role": "user", "content": "My name is Alice."}]})
    second = _create(stack, {"model": model, "previous_response_id": first.id, "input": [
        {"type": "message", "role": "user", "content": "What is my name?"}]})
    assert second.previous_response_id == first.id
    contents = stack.last_body()["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert "Alice" in json.dumps(contents[0])
    with pytest.raises(openai.BadRequestError):  # an unknown id is the client's 4xx, never a fresh start
        _client(stack).responses.create(model=model, previous_response_id="resp_unknown", input="hi")


def _http(stack: Stack, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    req = urllib.request.Request(f"{stack.url}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "authorization": "Bearer k"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.parametrize("model", MODELS)
def test_a_stored_response_is_read_listed_and_deleted(stack: Stack, model: str) -> None:
    client = _client(stack)
    first = _create(stack, {"model": model, "input": "My name is Alice.", "temperature": 0.3,
                            "safety_identifier": "user-1", "prompt_cache_key": "k1", "service_tier": "flex"})
    assert (first.temperature, first.top_p, first.safety_identifier, first.prompt_cache_key) == (0.3, 0.95, "user-1",
                                                                                                 "k1")
    assert stack.last_body()["generationConfig"]["temperature"] == 0.3
    status, got = _http(stack, "GET", f"/v1/responses/{first.id}")
    assert status == 200 and check_response(got).id == first.id and got["completed_at"] == first.completed_at
    page = client.responses.input_items.list(first.id)
    assert [i.type for i in page.data] == ["message"] and page.data[0].id and page.data[0].role == "user"
    second = _create(stack, {"model": model, "previous_response_id": first.id, "input": [
        {"type": "message", "role": "user", "content": "One."},
        {"type": "message", "role": "user", "content": "Two."}]})
    listed = client.responses.input_items.list(second.id, order="asc", limit=1)
    assert [i.content[0].text for i in listed.data] == ["One."] and listed.has_more
    rest = client.responses.input_items.list(second.id, after=listed.data[0].id, order="asc")
    assert rest.data[0].content[0].text == "Two."
    assert _http(stack, "GET", f"/v1/responses/{second.id}/input_items?limit=0")[0] == 400
    client.responses.delete(second.id)
    status, body = _http(stack, "DELETE", f"/v1/responses/{first.id}")
    assert (status, body) == (200, {"id": first.id, "object": "response", "deleted": True})
    for rid in (first.id, second.id):
        status, body = _http(stack, "GET", f"/v1/responses/{rid}")
        assert status == 404 and body["error"]["param"] == "response_id"


def test_include_is_checked_and_logprobs_refused(stack: Stack) -> None:
    client = _client(stack)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gemini-2.5-flash", input="hi", include=["nonsense.field"])  # type: ignore[list-item]
    assert e.value.body["param"] == "include[0]"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gemini-2.5-flash", input="hi", include=["message.output_text.logprobs"])
    assert e.value.body["param"] == "include[0]"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gemini-2.5-flash", input="hi", top_logprobs=3)
    assert e.value.body["param"] == "top_logprobs"


def test_a_background_response_is_polled_and_cancelled(stack: Stack) -> None:
    client = _client(stack)
    started = client.responses.create(model="gemini-2.5-flash", input="hello [[mock:slow 3]]", background=True)
    assert started.status in ("queued", "in_progress") and started.background
    check_response(_http(stack, "GET", f"/v1/responses/{started.id}")[1])
    cancelled = client.responses.cancel(started.id)
    assert cancelled.status == "cancelled" and cancelled.completed_at is None
    check_response(_http(stack, "GET", f"/v1/responses/{started.id}")[1])
    done = client.responses.create(model="gemini-2.5-flash", input="hello", background=True)
    for _ in range(100):
        polled = client.responses.retrieve(done.id)
        if polled.status not in ("queued", "in_progress"):
            break
        time.sleep(0.05)
    assert polled.status == "completed" and polled.output and polled.completed_at
    with pytest.raises(openai.BadRequestError) as e:  # only a background response can be cancelled
        client.responses.cancel(_create(stack, {"model": "gemini-2.5-flash", "input": "hi"}).id)
    assert e.value.body["param"] == "response_id"
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="gemini-2.5-flash", input="hi", background=True, stream=True)


def test_compact_needs_a_model_and_something_to_compact(stack: Stack) -> None:
    assert _http(stack, "POST", "/v1/responses/compact", {"input": "hi"})[0] == 400
    status, body = _http(stack, "POST", "/v1/responses/compact", {"model": "gemini-2.5-flash"})
    assert status == 400 and body["error"]["param"] == "input"
    status, body = _http(stack, "POST", "/v1/responses/compact", {"model": "gemini-2.5-flash",
                                                                 "previous_response_id": "resp_nope"})
    assert status == 400 and body["error"]["code"] == "previous_response_not_found"


@pytest.mark.parametrize("model", MODELS)
def test_compaction_round_trips_a_tool_using_conversation(stack: Stack, model: str) -> None:
    """Two exchanges with a tool call each, compacted: the first becomes a sealed summary, the second
    (a call still waiting for its output) is kept whole; continuing from the compacted output pairs the
    output with its call, with the call's signature intact, and the summary reaches Gemini."""
    client = _client(stack)
    first = client.responses.create(model=model, tools=[WEATHER], store=False,
                                    include=["reasoning.encrypted_content"], input=TOOL_PROMPT)
    call = next(o for o in first.output if o.type == "function_call")
    history: list[Any] = [{"type": "message", "role": "user", "content": TOOL_PROMPT},
                          *[o.model_dump(exclude_none=True) for o in first.output],
                          {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny, 21 C"}]
    answer = client.responses.create(model=model, tools=[WEATHER], store=False, input=history,
                                     include=["reasoning.encrypted_content"])
    history += [o.model_dump(exclude_none=True) for o in answer.output]
    history.append({"type": "message", "role": "user", "content": "And in Paris? (get_weather)"})
    again = client.responses.create(model=model, tools=[WEATHER], store=False, input=history,
                                    include=["reasoning.encrypted_content"])
    call2 = next(o for o in again.output if o.type == "function_call")
    history += [o.model_dump(exclude_none=True) for o in again.output]

    before = stack.accepted
    status, compacted = _http(stack, "POST", "/v1/responses/compact", {"model": model, "input": history})
    assert status == 200, compacted
    CompactResource.model_validate(compacted)
    summary_request = stack.received[before - stack.accepted:]
    assert len(summary_request) == 1 and "Sunny, 21 C" in json.dumps(summary_request[0]["body"]), \
        "Gemini was shown the dropped turns to summarize"
    out = compacted["output"]  # OpenAI's shape: the user messages, the current exchange, the compaction last
    assert out[-1]["type"] == "compaction" and out[-1]["encrypted_content"].startswith("gtp.c1.")
    assert "Sunny" not in out[-1]["encrypted_content"], "the summary is sealed, not readable"
    kept = out[:-1]
    assert [i["content"][0]["text"] for i in kept if i.get("role") == "user"] == [TOOL_PROMPT,
                                                                                 "And in Paris? (get_weather)"]
    assert [i["call_id"] for i in kept if i["type"] == "function_call"] == [call2.call_id]
    assert all(i["id"] and i["status"] == "completed" for i in kept)
    lenient = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0)
    # The SDK parses it (not strictly: its CompactedResponse types `output` as output items only, though
    # its own docstring and the specification's ItemField have the user messages there).
    assert lenient.responses.compact(model=model, input=history).output[-1].type == "compaction"

    # Continue from the compacted output: the kept call gets its output.
    nxt = client.responses.create(model=model, tools=[WEATHER], store=False, input=[
        *out, {"type": "function_call_output", "call_id": call2.call_id, "output": "Rainy, 12 C"}])
    assert nxt.status == "completed"
    contents = stack.last_body()["contents"]
    assert "Summary of the earlier part" in json.dumps(contents[0]) and "Sunny, 21 C" not in json.dumps(contents[1:])
    calls = [p for c in contents for p in c["parts"] if "functionCall" in p]
    assert len(calls) == 1 and calls[0]["functionCall"]["name"] == "get_weather"
    if model.startswith("gemini-3"):  # the signature Gemini gave the kept call came back with it
        assert calls[0].get("thoughtSignature") and calls[0]["thoughtSignature"] != "skip_thought_signature_validator"
    responses = [p for c in contents for p in c["parts"] if "functionResponse" in p]
    assert len(responses) == 1 and "Rainy, 12 C" in json.dumps(responses)

    tampered = {**out[-1], "encrypted_content": out[-1]["encrypted_content"][:-4] + "AAAA"}
    with pytest.raises(openai.BadRequestError) as e:  # a compaction that does not open is refused by name
        client.responses.create(model=model, input=[tampered, {"type": "message", "role": "user", "content": "hi"}])
    assert e.value.body["param"] == "input[0].encrypted_content"


def test_compaction_of_a_stored_chain(stack: Stack) -> None:
    first = _create(stack, {"model": "gemini-2.5-flash", "input": "My name is Alice."})
    second = _create(stack, {"model": "gemini-2.5-flash", "previous_response_id": first.id, "input": "I like tea."})
    status, compacted = _http(stack, "POST", "/v1/responses/compact",
                              {"model": "gemini-2.5-flash", "previous_response_id": second.id,
                               "instructions": "Be brief."})
    assert status == 200, compacted
    CompactResource.model_validate(compacted)
    assert stack.last_body()["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert "Alice" in json.dumps(stack.last_body()["contents"])
    kept = compacted["output"][:-1]
    assert [i["content"][0]["text"] for i in kept if i["role"] == "user"] == ["My name is Alice.", "I like tea."]
    assert kept[-1]["type"] == "message" and kept[-1]["role"] == "assistant" and compacted["output"][-1]["type"] \
        == "compaction"
    nxt = _create(stack, {"model": "gemini-2.5-flash", "input": [*compacted["output"],
                                                               {"role": "user", "content": "What do I like?"}]})
    assert nxt.status == "completed"


def test_compact_refuses_a_compaction_it_cannot_open(stack: Stack) -> None:
    """Issue 57 item 6: a compaction item that does not open (altered, forged, another deployment's) is
    refused by name with a 400, as /v1/responses refuses it; it was dropped, and the answer a 200 with
    an empty summary (the conversation it stood for silently lost)."""
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0)
    status, compacted = _http(stack, "POST", "/v1/responses/compact", {"model": "gemini-2.5-flash", "input": [
        {"role": "user", "content": "My name is Alice."}, {"role": "assistant", "content": "Hello Alice."},
        {"role": "user", "content": "I like tea."}]})
    assert status == 200, compacted
    sealed = compacted["output"][-1]
    forged = [{"type": "compaction", "encrypted_content": "gtp.c1.forged"}, {"role": "user", "content": "hi"}]
    altered = [{"role": "user", "content": "hi"},
               {**sealed, "encrypted_content": sealed["encrypted_content"][:-4] + "AAAA"}]
    for items, at in ((forged, 0), (altered, 1)):
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.compact(model="gemini-2.5-flash", input=items)
        assert e.value.body["param"] == f"input[{at}].encrypted_content"
        assert e.value.body["code"] == "invalid_encrypted_content"
    first = _create(stack, {"model": "gemini-2.5-flash", "input": "My name is Bob."})
    before = stack.accepted
    with pytest.raises(openai.BadRequestError) as e:  # named in the input, after the stored chain's items
        client.responses.compact(model="gemini-2.5-flash", previous_response_id=first.id, input=forged)
    assert e.value.body["param"] == "input[0].encrypted_content"
    assert stack.accepted == before, "Gemini was not asked"
    # What opens still compacts.
    assert client.responses.compact(model="gemini-2.5-flash", input=[sealed, *forged[1:]]).output


@pytest.mark.parametrize("model", MODELS)
def test_input_tokens_are_counted_by_gemini_on_the_request_it_would_get(stack: Stack, model: str) -> None:
    client = _client(stack)
    first = _create(stack, {"model": model, "input": "My name is Alice."})
    counted = client.responses.input_tokens.count(model=model, previous_response_id=first.id, tools=[WEATHER],
                                                  instructions="Be brief.", input="What is my name?")
    assert counted.object == "response.input_tokens" and counted.input_tokens > 0
    sent = stack.received[-1]
    assert sent["method"] == "countTokens" and sent["model"] == model
    inner = stack.last_body()["generateContentRequest"]
    assert inner["model"] == f"models/{model}" and "Alice" in json.dumps(inner["contents"])
    assert inner["systemInstruction"] == {"parts": [{"text": "Be brief."}]} and inner["tools"]
    with pytest.raises(openai.BadRequestError):
        client.responses.input_tokens.count(model=model, previous_response_id="resp_gone", input="hi")
