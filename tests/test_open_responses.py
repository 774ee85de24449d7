"""The Open Responses compliance checks (openresponses/openresponses, src/lib/compliance-tests.ts at
0cb939ccf839234347b4f0c317569b49fad8fd0e) as our own module, against the front-end + strict mock:
basic, streaming, system prompt, image input, multi-turn, tool calling, streamed tool calling, and
previous_response_id. The requests are the suite's; bodies are validated by the openai SDK (strict),
every streamed event by the SDK's event union, then the suite's semantic checks are applied.

One change to the suite's requests: the mock is scripted and calls a tool only when the prompt names
it, so the tool-calling prompts end with "(get_weather)". A real model decides by itself.
The full ResponseResource schema of the specification (fields such as `completed_at`) is issue 25's.
"""

import json
import urllib.request
from typing import Any

import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from tests.harness import Stack

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
    r = _client(stack).responses.create(**body)
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
