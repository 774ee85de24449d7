"""The Vercel AI SDK's OpenAI-compatible provider (npm `ai` + `@ai-sdk/openai-compatible`, pinned)
validates every Chat chunk of a parallel-call stream (issue 59, item 8; vLLM #42696).

The provider parses each `data:` chunk with its own zod schema (`chunkBaseSchema` in its
dist/index.js): every `choices[].delta.tool_calls[]` entry needs a `function` object; `index`,
`id`, `function.name` and `function.arguments` may each be absent. Its tool-call tracker then needs
`function.name` on the first delta of each index (a call is buffered until a name comes: "Expected
'function.name' to be a string." otherwise) and takes `id` from the first delta that has one
(without any, it makes up an id, and the next turn's tool results would not match the proxy's).
Continuations need neither: a delta with the index of a known call extends it. So the proxy sends
`id`, `type` and `function.name` once per call, on its first delta, and argument pieces after it
without them; repeating them would break the openai Python SDK, whose stream accumulator
concatenates every string field of a delta (an `id` or `name` sent twice comes out doubled).
(1CatAI/1Cat-vLLM#240 reports the provider wanting `function.name` on every delta; this version
does not: the continuations here carry none and the stream has no error part.)

tests/node/ai_sdk_chat.mjs runs streamText (with the raw chunks), generateText and a tool-result
turn against the front-end over the strict mock, whose Gemini answers with three parallel calls,
whole or (`--stream-arguments`) as partialArgs pieces."""

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.harness import Stack
from tests.npm_tools import npm_packages
from tests.test_streamed_arguments import streaming  # noqa: F401 -- the fixture, shared

pytestmark = pytest.mark.slow
AI = "ai@7.0.173"
COMPAT = "@ai-sdk/openai-compatible@3.0.92"
ZOD = "zod@4.6.7"  # the provider's peer dependency
SCRIPT = Path(__file__).with_name("node") / "ai_sdk_chat.mjs"
NAMES = ["get_weather", "get_time", "get_population"]
PROMPT = "get_weather get_time get_population city=Rome"  # the mock calls every tool named, at once
CASES = [("whole", "gemini-2.5-flash"), ("whole", "gemini-3-flash-preview"),
         ("pieces", "gemini-3-flash-preview"), ("pieces", "gemini-3-pro-preview")]


@pytest.fixture(scope="module")
def ai_sdk() -> Path:
    prefix = npm_packages("ai-sdk", AI, COMPAT, ZOD)
    shutil.copy(SCRIPT, prefix / SCRIPT.name)
    return prefix / SCRIPT.name


@pytest.fixture
def front(request: pytest.FixtureRequest, kind: str) -> Stack:
    # "pieces": the front-end that asks Gemini 3 for streamed call arguments (partialArgs)
    return request.getfixturevalue("stack" if kind == "whole" else "streaming")


def mock_calls(stack: Stack, back: int) -> list[tuple[str, str | None]]:
    """(name, id) of every call Gemini sent in the exchange `back` before the latest, from the journal."""
    parts = stack.exchange(back)["upstream"][0]["answer"]["candidates"][0]["content"]["parts"]
    return [(p["functionCall"]["name"], p["functionCall"].get("id")) for p in parts
            if p.get("functionCall", {}).get("name")]


def chunk_calls(chunks: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """(id, name, parsed arguments) per index of a Chat stream's tool-call deltas, after checking
    every delta: the AI SDK's `function` object on each; `id`, `type: "function"` and
    `function.name` on the first of its index; neither `id` nor `name` on a continuation."""
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices", []):
            for delta in choice["delta"].get("tool_calls") or []:
                assert isinstance(delta["index"], int) and isinstance(delta["function"], dict), delta
                if delta["index"] not in calls:
                    assert delta["index"] == len(calls), "indexes count up, one per call"
                    assert isinstance(delta["id"], str) and delta["id"], delta
                    assert delta["type"] == "function" and delta["function"]["name"] in NAMES, delta
                    calls[delta["index"]] = {"id": delta["id"], "name": delta["function"]["name"],
                                             "arguments": delta["function"].get("arguments") or ""}
                else:
                    assert "id" not in delta and "name" not in delta["function"], delta
                    calls[delta["index"]]["arguments"] += delta["function"]["arguments"]
    return [(c["id"], c["name"], json.loads(c["arguments"])) for c in calls.values()]


@pytest.mark.parametrize(("kind", "model"), CASES)
def test_the_ai_sdk_validates_every_chunk_of_a_parallel_call_stream(ai_sdk: Path, front: Stack, kind: str,
                                                                     model: str) -> None:
    done = subprocess.run(["node", str(ai_sdk), f"{front.url}/v1", model, PROMPT], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(ln) for ln in done.stdout.splitlines()]
    parts = [ln["data"] for ln in lines if ln["step"] == "part"]
    raw = [ln["data"] for ln in lines if ln["step"] == "raw"]
    steps = {ln["step"]: ln["data"] for ln in lines if ln["step"] not in ("part", "raw")}
    assert "on_error" not in steps, steps["on_error"]
    assert not [p for p in parts if p["type"] in ("error", "tool-error")], parts

    sent = mock_calls(front, 2)  # the journal, newest first: the next turn, generateText, streamText
    assert [name for name, _ in sent] == NAMES, "Gemini answered with three parallel calls"
    wire = chunk_calls(raw)  # what the SDK read, each chunk checked
    if kind == "pieces":
        deltas = [d for c in raw for ch in c["choices"] for d in ch["delta"].get("tool_calls") or []]
        assert len(deltas) > len(NAMES), "the arguments came in pieces"
    calls = [p for p in parts if p["type"] == "tool-call"]
    assert [(c["toolCallId"], c["toolName"], c["input"], c["invalid"]) for c in calls] == \
        [(call_id, name, {"city": "Rome"}, False) for call_id, name, _ in wire]
    assert [args for _, _, args in wire] == [{"city": "Rome"}] * len(NAMES)
    assert len({c["toolCallId"] for c in calls}) == len(sent), "parallel calls never collapse"
    for call_id, mock_id in zip([c["toolCallId"] for c in calls], [i for _, i in sent], strict=True):
        assert mock_id is None or call_id == mock_id, "Gemini's own call id reaches the SDK"
    starts = [(p["id"], p["toolName"]) for p in parts if p["type"] == "tool-input-start"]
    assert starts == [(c["toolCallId"], c["toolName"]) for c in calls]
    assert [p["finishReason"] for p in parts if p["type"] in ("finish-step", "finish")] == ["tool-calls"] * 2
    assert steps["stream_finish"] == "tool-calls"

    sync = steps["sync"]
    assert sync["finishReason"] == "tool-calls"
    assert [(c["toolName"], c["input"], c["invalid"]) for c in sync["toolCalls"]] == \
        [(name, {"city": "Rome"}, False) for name in NAMES]
    assert len({c["toolCallId"] for c in sync["toolCalls"]}) == len(NAMES)
    for call, (_, mock_id) in zip(sync["toolCalls"], mock_calls(front, 1), strict=True):
        assert mock_id is None or call["toolCallId"] == mock_id

    # the streamed calls' results went back under the ids the SDK read, and reached Gemini paired
    nxt = steps["next"]
    assert nxt["finishReason"] == "stop" and nxt["toolCalls"] == 0
    assert nxt["text"] == "Tool results: " + "; ".join(f'{n} returned {{"output": "{n} says fine"}}' for n in NAMES)
    answered = [p["functionResponse"] for c in front.last_body()["contents"] for p in c["parts"]
                if "functionResponse" in p]
    assert [(r["name"], r.get("id")) for r in answered] == sent


@pytest.mark.parametrize(("kind", "model"), CASES)
def test_every_tool_call_delta_on_the_wire(front: Stack, kind: str, model: str) -> None:
    """The proxy's own SSE, read directly: the same checks on every delta, and `[DONE]` last."""
    body = {"model": model, "stream": True, "tools": [_tool(n) for n in NAMES],
            "messages": [{"role": "user", "content": PROMPT}]}
    with httpx.stream("POST", f"{front.url}/v1/chat/completions", json=body, timeout=30) as r:
        assert r.status_code == 200
        data = [ln[6:] for ln in r.iter_lines() if ln.startswith("data: ")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    wire = chunk_calls(chunks)
    assert [(name, args) for _, name, args in wire] == [(n, {"city": "Rome"}) for n in NAMES]
    sent = mock_calls(front, 0)
    assert [i for i, _, _ in wire] == [mock_id or i for (_, mock_id), (i, _, _) in zip(sent, wire, strict=True)]
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"][0]["finish_reason"]] == ["tool_calls"]


@pytest.mark.parametrize(("kind", "model"), CASES)
def test_the_openai_python_stream_helper_accumulates_the_same_calls(front: Stack, kind: str, model: str) -> None:
    """What the AI SDK takes, openai-python's accumulator (`chat.completions.stream`) takes too:
    names and ids whole, not doubled."""
    client = openai.OpenAI(base_url=f"{front.url}/v1", api_key="k", max_retries=0)
    with client.chat.completions.stream(model=model, tools=[_tool(n) for n in NAMES],
                                        messages=[{"role": "user", "content": PROMPT}]) as stream:
        done = [e for e in stream if e.type == "tool_calls.function.arguments.done"]
        final = stream.get_final_completion()
    [choice] = final.choices
    assert choice.finish_reason == "tool_calls"
    got = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls]
    sent = mock_calls(front, 0)
    assert [(name, args) for _, name, args in got] == [(n, {"city": "Rome"}) for n in NAMES]
    assert [i for i, _, _ in got] == [mock_id or i for (_, mock_id), (i, _, _) in zip(sent, got, strict=True)]
    assert [(e.index, e.name, json.loads(e.arguments)) for e in done] == [(n, name, args) for n, (_, name, args)
                                                                          in enumerate(got)]


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
