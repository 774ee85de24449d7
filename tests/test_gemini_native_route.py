"""`POST /v1/gemini`: Gemini's shapes in and out, conversation history kept by the proxy."""

import json
import urllib.request

from proxy.mock.validate import sign
from tests.test_bad_input import post

TOOLS = [{"functionDeclarations": [{"name": "get_weather", "parameters": {
    "type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}}]}]


def test_conversation_with_a_tool_round_trip(stack) -> None:
    url = f"{stack.url}/v1/gemini"
    base = {"model": "gemini-3-pro-preview", "tools": TOOLS, "conversation": "conv-1"}
    status, r1 = post(url, json.dumps({**base, "input": "call get_weather city=Lyon"}).encode())
    assert status == 200
    part = r1["candidates"][0]["content"]["parts"][0]
    assert part["functionCall"]["name"] == "get_weather" and part["functionCall"]["id"]
    assert part["thoughtSignature"] == sign("gemini-3-pro-preview", "get_weather", {"city": "Lyon"})
    answer = [{"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "id": part["functionCall"]["id"],
                                                               "response": {"output": "mild"}}}]}]
    status, r2 = post(url, json.dumps({**base, "input": answer}).encode())
    assert status == 200, r2
    assert r2["candidates"][0]["content"]["parts"][0]["text"] == 'Tool results: get_weather returned {"output": "mild"}'
    sent = stack.last_body()["contents"]
    assert [c["role"] for c in sent] == ["user", "model", "user"]
    assert sent[1]["parts"][0] == part, "the model turn is replayed exactly as Gemini sent it"


def test_snake_case_and_stream(stack) -> None:
    body = {"model": "gemini-2.5-flash", "input": "stream this sentence in several chunks please",
            "system_instruction": "be nice", "stream": True, "conversation": "conv-2",
            "generation_config": {"temperature": 0.1}}
    req = urllib.request.Request(f"{stack.url}/v1/gemini", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        raw = r.read().decode()
    chunks = [json.loads(line[6:]) for line in raw.split("\r\n") if line.startswith("data: ")]
    assert len(chunks) >= 3
    text = "".join(c["candidates"][0]["content"]["parts"][0].get("text", "") for c in chunks)
    assert text == "Mock Gemini (gemini-2.5-flash) heard: stream this sentence in several chunks please"
    sent = stack.last_body()
    assert sent["systemInstruction"] == {"parts": [{"text": "be nice"}]}
    assert sent["generationConfig"] == {"temperature": 0.1}
    status, r2 = post(f"{stack.url}/v1/gemini", json.dumps({"model": "gemini-2.5-flash", "input": "more",
                                                            "conversation": "conv-2"}).encode())
    assert status == 200
    history = stack.last_body()["contents"]
    assert history[1] == {"role": "model", "parts": [{"text": text}]}, "streamed text is kept as one part"


def test_without_conversation_nothing_is_kept(stack) -> None:
    post(f"{stack.url}/v1/gemini", json.dumps({"model": "gemini-2.5-flash", "input": "one"}).encode())
    post(f"{stack.url}/v1/gemini", json.dumps({"model": "gemini-2.5-flash", "input": "two"}).encode())
    assert len(stack.last_body()["contents"]) == 1
