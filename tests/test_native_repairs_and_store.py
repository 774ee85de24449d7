"""Gemini-native bodies get the same repairs in either spelling, on every native route; conversations
are appended atomically; a long previous_response_id chain costs memory linear in its length."""

import asyncio
import copy
import json
from typing import Any

import aiohttp
import openai

from tests.harness import Stack
from tests.harness import post_json as post

MODEL = "gemini-3-flash-preview"
CAMEL = {
    "contents": [
        {"role": "user", "parts": [{"text": "weather in Paris and Rome"}]},
        # A foreign call turn: unsigned (Gemini 3 would refuse it), answered out of order.
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "a"}},
                                    {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}, "id": "b"}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "id": "b", "response": {"output": "sunny", "$ref": "#x"}}},
            {"functionResponse": {"name": "get_weather", "id": "a", "response": {"output": "rain"}}}]},
    ],
    "tools": [{"functionDeclarations": [{"name": "get_weather", "parameters": {
        "type": "object", "additionalProperties": False, "required": ["city"],
        "properties": {"city": {"type": ["string", "null"]}}}}]}],
    "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
    "generationConfig": {"maxOutputTokens": 256},
}
RENAMES = {"functionCall": "function_call", "functionResponse": "function_response", "toolConfig": "tool_config",
           "functionCallingConfig": "function_calling_config", "functionDeclarations": "function_declarations",
           "generationConfig": "generation_config", "maxOutputTokens": "max_output_tokens"}


def snake(node: Any, opaque: bool = False) -> Any:
    """The same body in proto JSON's snake_case (arguments, results and schemas are data: untouched)."""
    if isinstance(node, list):
        return [snake(v, opaque) for v in node]
    if not isinstance(node, dict) or opaque:
        return node
    return {RENAMES.get(k, k): snake(v, k in ("args", "response", "parameters")) for k, v in node.items()}


def test_snake_and_camel_bodies_are_repaired_identically(stack: Stack) -> None:
    sent = []
    for body in (CAMEL, snake(CAMEL)):
        status, answer = post(f"{stack.url}/v1beta/models/{MODEL}:generateContent", copy.deepcopy(body))
        assert status == 200, answer
        sent.append(stack.last_body())
    assert sent[0] == sent[1]
    repaired = sent[0]
    assert repaired["contents"][1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert [p["functionResponse"]["id"] for p in repaired["contents"][2]["parts"]] == ["a", "b"], "call order"
    assert "additionalProperties" not in json.dumps(repaired["tools"])
    assert repaired["contents"][1]["parts"][1]["functionCall"]["args"] == {"city": "Rome"}, "arguments untouched"


def test_v1_gemini_applies_the_same_repairs_in_both_spellings(stack: Stack) -> None:
    sent = []
    for i, body in enumerate((CAMEL, snake(CAMEL))):
        native = {"model": MODEL, "input": copy.deepcopy(body["contents"]), "conversation": f"rep-{i}",
                  **{k: copy.deepcopy(v) for k, v in body.items() if k != "contents"}}
        status, answer = post(f"{stack.url}/v1/gemini", native)
        assert status == 200, answer
        sent.append(stack.last_body())
    assert sent[0] == sent[1]
    assert sent[0]["contents"][1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert "additionalProperties" not in json.dumps(sent[0]["tools"])
    kept = stack.lt.run(stack.store.get_conversation("default", "rep-1"))
    assert len(kept) == 4 and kept[-1]["role"] == "model", "the turn and its answer are kept"


def test_concurrent_turns_of_one_conversation_lose_nothing(stack: Stack) -> None:
    async def turns() -> list[int]:
        async with aiohttp.ClientSession() as s:
            async def one(i: int) -> int:
                async with s.post(f"{stack.url}/v1/gemini", json={
                        "model": "gemini-2.5-flash", "input": f"turn {i} [[mock:slow 0.05]]", "conversation": "c8",
                        "stream": i % 2 == 0}) as r:
                    await r.read()
                    return r.status
            return await asyncio.gather(*(one(i) for i in range(8)))
    assert stack.lt.run(turns()) == [200] * 8
    kept = stack.lt.run(stack.store.get_conversation("default", "c8"))
    assert len(kept) == 16
    assert sorted(c["parts"][0]["text"] for c in kept if c["role"] == "user") == sorted(
        f"turn {i} [[mock:slow 0.05]]" for i in range(8))


def test_a_long_chain_is_stored_in_linear_bytes(stack: Stack) -> None:
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0,
                           default_headers={"x-gtp-session": "chain"})
    filler = "lorem ipsum " * 80  # ~1 KB per turn
    sizes, prev = [], None
    for i in range(200):
        r = client.responses.create(model="gemini-2.5-flash", input=f"turn {i} {filler}", previous_response_id=prev)
        assert r.status == "completed"
        prev = r.id
        sizes.append(stack.store.entries.session_size("chain"))
    # Linear: doubling the turns doubles the bytes (a copy of the history per turn would quadruple them).
    assert sizes[199] / sizes[99] < 2.2, sizes[::20]
    steps = [b - a for a, b in zip(sizes[100:], sizes[101:], strict=False)]
    assert max(steps) < 1.5 * min(steps), "each turn adds about the same number of bytes"
    # And the chain still carries the whole history to Gemini.
    assert len(stack.last_body()["contents"]) == 399
