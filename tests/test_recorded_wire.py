"""Recorded real Gemini wire (tests/recorded/, provenance in SOURCES.md) replayed byte for byte through
every front-end, with the official SDKs validating strictly; and the mock checked against the same
recordings, so that where the two differ the recording wins.

The expected calls come from an oracle written independently of the proxy (ADK's way: set each
`jsonPath` in a dict, join string pieces), not from the proxy's own partial_args code.
"""

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import openai
import pytest
from aiohttp import web

from proxy.from_gemini.model_turn import ModelTurn
from proxy.intercept.capture_calls import CallCapture
from proxy.mock.model import fragment_calls
from proxy.mock.server import start_mock
from proxy.upstream.gemini.client import GeminiUpstream
from tests.harness import LoopThread, Stack

REC = Path(__file__).parent / "recorded"
STREAMS = ["vertex-stream-args-two-calls.jsonl", "vertex-stream-args-nested.jsonl",
           "vertex-stream-args-no-end-marker.jsonl", "vertex-stream-args-after-thought.jsonl",
           "gemini3-tool-call.jsonl"]
MODEL = "gemini-3-flash-preview"


def chunks(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (REC / name).read_text().splitlines() if line.strip()]


def _set(args: dict[str, Any], path: str, value: Any, join: bool) -> None:
    keys: list[str | int] = [int(i) if i else k for k, i in re.findall(r"\.(\w+)|\[(\d+)\]", path)]
    node: Any = args
    for key, nxt in zip(keys, keys[1:], strict=False):
        if isinstance(key, int):
            while len(node) <= key:
                node.append(None)
            if node[key] is None:
                node[key] = [] if isinstance(nxt, int) else {}
            node = node[key]
        else:
            node = node.setdefault(key, [] if isinstance(nxt, int) else {})
    last = keys[-1]
    if isinstance(last, int):
        while len(node) <= last:
            node.append(None)
    if join and isinstance(node[last] if isinstance(last, int) else node.get(last), str):
        node[last] += value
    else:
        node[last] = value


def oracle(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls a stream carries: [{name, args, signature}], by setting each jsonPath in a dict."""
    calls: list[dict[str, Any]] = []
    for chunk in stream:
        for part in chunk["candidates"][0].get("content", {}).get("parts", []):
            fc = part.get("functionCall")
            if fc is None:
                continue
            if fc.get("name"):
                calls.append({"name": fc["name"], "args": fc.get("args") or {},
                              "signature": part.get("thoughtSignature")})
            for pa in fc.get("partialArgs") or []:
                kind = next(k for k in ("stringValue", "numberValue", "boolValue", "nullValue") if k in pa)
                value = None if kind == "nullValue" else pa[kind]
                _set(calls[-1]["args"], pa["jsonPath"], value, join=kind == "stringValue")
    return calls


EXPECTED_NAMES = {
    "vertex-stream-args-two-calls.jsonl": ["getWeather", "getWeather"],
    "vertex-stream-args-nested.jsonl": ["cookRecipe"],
    "vertex-stream-args-no-end-marker.jsonl": ["writeItems"],
    "vertex-stream-args-after-thought.jsonl": ["read_theme", "read_screen", "read_screen", "read_screen"],
    "gemini3-tool-call.jsonl": ["weather"],
}


def test_the_oracle_reads_the_recordings() -> None:
    """The oracle itself, on values a person can read off the recordings."""
    assert [c["args"] for c in oracle(chunks("vertex-stream-args-two-calls.jsonl"))] == [
        {"location": "Boston"}, {"location": "San Francisco"}]
    [items] = oracle(chunks("vertex-stream-args-no-end-marker.jsonl"))
    assert items["args"]["operations"][1] == {"action": "add", "description": "Ripe yellow banana",
                                              "itemid": "banana_001", "price": 0.3}
    for name, names in EXPECTED_NAMES.items():
        assert [c["name"] for c in oracle(chunks(name))] == names


# ---- the core, fed the recordings part by part ----------------------------------------------------

@pytest.mark.parametrize("name", STREAMS)
def test_history_and_capture_keep_each_recorded_call_whole(name: str) -> None:
    stream, want = chunks(name), oracle(chunks(name))
    turn, capture = ModelTurn(), CallCapture()
    for chunk in stream:
        for part in chunk["candidates"][0].get("content", {}).get("parts", []):
            turn.add(part)
        capture.feed(chunk)
    calls = [p for p in turn.parts if "functionCall" in p]
    assert [(p["functionCall"]["name"], p["functionCall"].get("args", {})) for p in calls] == \
        [(c["name"], c["args"]) for c in want]
    assert [p.get("thoughtSignature") for p in calls] == [c["signature"] for c in want]
    assert [(r.name, r.args) for r in capture.calls] == [(c["name"], c["args"]) for c in want]


# ---- every front-end, over HTTP, against a server that replays the recording ------------------------

class Replay:
    """Answers generateContent / streamGenerateContent with a recording, as Google sent it."""

    def __init__(self) -> None:
        self.stream = "gemini-text.jsonl"
        self.sync = "gemini3-reasoning.json"
        self.bodies: list[dict[str, Any]] = []
        self.error: tuple[int, dict[str, Any]] | None = None  # answer the next request(s) with this
        self.error_times = 1  # ... this many times in a row
        self.answer: dict[str, Any] | None = None  # instead of the recorded files: this one response

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append(await request.json())
        if self.error is not None:
            (status, body), self.error_times = self.error, self.error_times - 1
            if self.error_times <= 0:
                self.error, self.error_times = None, 1
            return web.json_response(body, status=status)
        if not request.match_info["target"].endswith(":streamGenerateContent"):
            return web.json_response(self.answer or json.loads((REC / self.sync).read_text()))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        lines = [json.dumps(self.answer).encode()] if self.answer else (REC / self.stream).read_bytes().splitlines()
        for line in lines:
            if line.strip():
                await resp.write(b"data: " + line + b"\r\n\r\n")
        return resp


def _serve(lt: LoopThread, route: str, handler: Any) -> tuple[web.AppRunner, str]:
    """A loopback server answering POST `route` with `handler`, on `lt`'s loop."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post(route, handler)
    runner, url, _ = lt.run(start_mock(app=app))
    return runner, url


@pytest.fixture(scope="module")
def replay():
    lt, rep = LoopThread(), Replay()
    runner, url = _serve(lt, "/{version}/models/{target}", rep.handle)
    stack = Stack(wrap=lambda _: GeminiUpstream(url, api_key="test-key"))
    yield stack, rep
    stack.close()
    lt.run(runner.cleanup())
    lt.stop()


def _tools(names: list[str]) -> list[dict[str, Any]]:
    return [{"type": "function", "name": n, "description": n, "parameters": {"type": "object"}}
            for n in dict.fromkeys(names)]


def _replayed_calls(body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    parts = [p for c in body["contents"] for p in c["parts"]]
    return [p for p in parts if "functionCall" in p], [p["functionResponse"] for p in parts if "functionResponse" in p]


def _check_next_turn(body: dict[str, Any], want: list[dict[str, Any]]) -> None:
    """What the proxy sends Google on the next turn: every call whole, named, signed as recorded, and a
    named response for each (a nameless functionResponse is Google's 400)."""
    calls, responses = _replayed_calls(body)
    assert [(p["functionCall"]["name"], p["functionCall"].get("args", {})) for p in calls] == \
        [(c["name"], c["args"]) for c in want]
    for part, c in zip(calls, want, strict=True):
        assert "partialArgs" not in part["functionCall"] and "willContinue" not in part["functionCall"]
        if c["signature"]:
            assert part["thoughtSignature"] == c["signature"]
    assert [r["name"] for r in responses] == [c["name"] for c in want]


@pytest.mark.parametrize("name", STREAMS)
def test_responses_stream(replay, name: str) -> None:
    stack, rep = replay
    want = oracle(chunks(name))
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    rep.stream = name
    events = list(client.responses.create(model=MODEL, input="go", tools=_tools(EXPECTED_NAMES[name]), stream=True))
    final = events[-1]
    assert final.type == "response.completed"
    calls = [o for o in final.response.output if o.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [(c["name"], c["args"]) for c in want]
    for call in calls:
        deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta"
                         and e.item_id == call.id)
        [done] = [e for e in events if e.type == "response.function_call_arguments.done" and e.item_id == call.id]
        assert deltas == done.arguments == call.arguments
    assert len({c.call_id for c in calls}) == len(calls)
    rep.stream = "gemini-text.jsonl"
    outputs = [{"type": "function_call_output", "call_id": c.call_id, "output": "ok"} for c in calls]
    nxt = client.responses.create(model=MODEL, previous_response_id=final.response.id,
                                  tools=_tools(EXPECTED_NAMES[name]), input=outputs, stream=True)
    assert list(nxt)[-1].type == "response.completed"
    _check_next_turn(rep.bodies[-1], want)


@pytest.mark.parametrize("name", STREAMS)
def test_chat_stream(replay, name: str) -> None:
    stack, rep = replay
    want = oracle(chunks(name))
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    tools = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}}
             for t in _tools(EXPECTED_NAMES[name])]
    rep.stream = name
    got: dict[int, dict[str, str]] = {}
    finish = []
    for chunk in client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "go"}],
                                                tools=tools, stream=True):
        if not chunk.choices:
            continue
        finish.append(chunk.choices[0].finish_reason)
        for tc in chunk.choices[0].delta.tool_calls or []:
            slot = got.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] += tc.id or ""
            slot["name"] += tc.function.name or "" if tc.function else ""
            slot["arguments"] += tc.function.arguments or "" if tc.function else ""
    assert [x for x in finish if x] == ["tool_calls"]
    calls = [got[i] for i in sorted(got)]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [(c["name"], c["args"]) for c in want]
    rep.stream = "gemini-text.jsonl"
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls]}] + [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
    client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
    _check_next_turn(rep.bodies[-1], want)


@pytest.mark.parametrize("name", STREAMS)
def test_native_gemini_stream_keeps_the_session_turn(replay, name: str) -> None:
    """/v1/gemini keeps the conversation: the turn it stores holds each recorded call whole."""
    import aiohttp

    stack, rep = replay
    want = oracle(chunks(name))
    rep.stream = name

    async def run() -> None:
        decls = [{"name": n, "description": n, "parameters": {"type": "OBJECT"}} for n in dict.fromkeys(
            EXPECTED_NAMES[name])]
        async with aiohttp.ClientSession() as s:
            body = {"conversation": f"rec-{name}", "model": MODEL, "stream": True,
                    "tools": [{"functionDeclarations": decls}], "input": "go"}
            async with s.post(f"{stack.url}/v1/gemini", json=body) as r:
                assert r.status == 200, await r.text()
                await r.read()
            responses = [{"functionResponse": {"name": c["name"], "response": {"ok": True}}} for c in want]
            rep.stream = "gemini-text.jsonl"
            body = {**body, "input": [{"role": "user", "parts": responses}]}
            async with s.post(f"{stack.url}/v1/gemini", json=body) as r:
                assert r.status == 200, await r.text()
                await r.read()

    asyncio.run(run())
    calls, _ = _replayed_calls(rep.bodies[-1])
    assert [(p["functionCall"]["name"], p["functionCall"].get("args", {})) for p in calls] == \
        [(c["name"], c["args"]) for c in want]


# ---- the mock agrees with the recordings ----------------------------------------------------------

def _shape(part: dict[str, Any]) -> tuple:
    """A fragment's shape: which keys it has, and for each partialArg which value key and willContinue."""
    fc = part["functionCall"]
    pas = tuple((next(k for k in pa if k.endswith("Value")), bool(pa.get("willContinue")), type(pa.get(
        "stringValue")) is str and pa.get("stringValue") == "") for pa in fc.get("partialArgs") or [])
    return (bool(fc.get("name")), bool(fc.get("willContinue")), "args" in fc, pas)


def test_mock_streams_arguments_in_the_recorded_shape() -> None:
    """The mock fragments the two-call recording's calls; its fragments have the recording's shapes."""
    recorded = [p for c in chunks("vertex-stream-args-two-calls.jsonl")
                for p in c["candidates"][0]["content"]["parts"]]
    whole = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "getWeather", "args": {"location": "Boston"}}, "thoughtSignature": "c2ln"}]},
        "finishReason": "STOP"}]}
    mocked = [p for c in fragment_calls([whole]) for p in c["candidates"][0]["content"]["parts"]]
    assert [_shape(p) for p in mocked] == [_shape(p) for p in recorded[:4]]
    assert mocked[-1] == {"functionCall": {}}, "Google's end marker, not willContinue: false"
    nested = [p for c in chunks("vertex-stream-args-nested.jsonl") for p in c["candidates"][0]["content"]["parts"]]
    assert {"functionCall": {"willContinue": True}} in nested
    two = {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "cookRecipe", "args": {
        "recipe": {"ingredients": [{"amount": "1", "name": "a"}, {"amount": "2", "name": "b"}]}}}}]}}]}
    mocked = [p for c in fragment_calls([two]) for p in c["candidates"][0]["content"]["parts"]]
    assert {"functionCall": {"willContinue": True}} in mocked, "a bare continuation between array elements"


@pytest.mark.parametrize("name", STREAMS)
def test_interactions_stream(replay, name: str) -> None:
    """google-genai's client.interactions (3.x) through the front-end: one function_call step per recorded
    call, arguments whole, and the next turn sends each call back named and whole."""
    from google import genai

    stack, rep = replay
    want = oracle(chunks(name))
    c = genai.Client(api_key="test-key", http_options={"base_url": stack.url, "api_version": "v1beta"})
    rep.stream = name
    tools = _tools(EXPECTED_NAMES[name])
    args: dict[int, str] = {}
    steps: dict[int, dict[str, Any]] = {}
    last = None
    for e in c.interactions.create(model=MODEL, input="go", tools=tools, stream=True):
        last = e
        if e.event_type == "step.start":
            steps[e.index] = e.step.model_dump(exclude_none=True)
        elif e.event_type == "step.delta" and e.delta.type == "arguments_delta":
            args[e.index] = args.get(e.index, "") + e.delta.arguments
    assert last is not None and last.event_type == "interaction.completed"
    calls = [steps[i] | ({"arguments": json.loads(args[i])} if i in args else {})
             for i in sorted(steps) if steps[i]["type"] == "function_call"]
    assert [(s["name"], s.get("arguments", {})) for s in calls] == [(c["name"], c["args"]) for c in want]
    rep.stream = "gemini-text.jsonl"
    list(c.interactions.create(model=MODEL, previous_interaction_id=last.interaction.id, tools=tools, stream=True,
                               input=[{"type": "function_result", "call_id": s["id"], "name": s["name"],
                                       "result": "ok"} for s in calls]))
    _check_next_turn(rep.bodies[-1], want)


# ---- recorded error bodies ------------------------------------------------------------------------

def _native_error(stack: Stack, rep: Replay, status: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """What a Gemini-native client gets when the replayed upstream answers `status` with `body`."""
    import aiohttp

    async def native() -> tuple[int, dict[str, Any]]:
        rep.error = (status, body)
        async with aiohttp.ClientSession() as s, s.post(
                f"{stack.url}/v1beta/models/{MODEL}:generateContent", headers={"x-goog-api-key": "k"},
                json={"contents": [{"role": "user", "parts": [{"text": "go"}]}]}) as r:
            return r.status, await r.json()

    return asyncio.run(native())


def _recorded_400s() -> list[dict[str, Any]]:
    data = json.loads((REC / "error-400-thinking.json").read_text())
    return [data["reasoningNoneResponse"], data["thinkingLevelAndBudgetResponse"]]


@pytest.mark.parametrize("which", [0, 1])
def test_recorded_400s_reach_each_client_in_its_own_protocol(replay, which: int) -> None:

    stack, rep = replay
    body = _recorded_400s()[which]
    message = body["error"]["message"]
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    rep.error = (400, body)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input="go")
    assert message in str(e.value.body)
    rep.error = (400, body)
    with pytest.raises(openai.BadRequestError) as e:
        list(client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "go"}], stream=True))
    assert message in str(e.value.body)
    before = len(rep.bodies)

    status, got = _native_error(stack, rep, 400, body)
    assert status == 400 and got["error"]["message"] == message and got["error"]["status"] == "INVALID_ARGUMENT"
    assert len(rep.bodies) == before + 1, "a 400 is Google's final word: asked once"


def test_recorded_403_is_not_retried_and_reaches_each_client(replay) -> None:
    """A 403 is Google's final word: asked once, and the client sees Google's own message."""

    stack, rep = replay
    body = json.loads((REC / "error-403-scope.json").read_text())
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    before = len(rep.bodies)
    rep.error = (403, body)
    with pytest.raises(openai.PermissionDeniedError) as e:
        client.responses.create(model=MODEL, input="go")
    assert "insufficient authentication scopes" in str(e.value.body) and len(rep.bodies) == before + 1
    rep.error = (403, body)
    with pytest.raises(openai.PermissionDeniedError):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "go"}])

    status, got = _native_error(stack, rep, 403, body)
    assert status == 403 and got["error"]["status"] == "PERMISSION_DENIED"
    assert got["error"]["details"][0]["reason"] == "ACCESS_TOKEN_SCOPE_INSUFFICIENT", "Google's details pass through"


def test_recorded_429_is_read_as_google_wrote_it() -> None:
    """The recorded 429 (QuotaFailure, then RetryInfo "34.4s"): the proxy reads the delay from it, and
    the mock's 429 has the same details in the same order."""
    from proxy.mock.validate import GeminiRejection
    from proxy.upstream.gemini.client import _error_from

    text = (REC / "error-429-retry-info.json").read_text()
    recorded = json.loads(text)["error"]
    error = _error_from(429, text)
    assert error.retry_after == 34.4 and error.status == 429
    mocked = GeminiRejection(429, "quota", "RESOURCE_EXHAUSTED", retry_delay="34.4s").body()["error"]
    assert [d["@type"] for d in mocked["details"]] == [d["@type"] for d in recorded["details"]]
    assert set(mocked) == set(recorded) and mocked["status"] == recorded["status"]
    assert _error_from(429, json.dumps({"error": mocked})).retry_after == 34.4


def _recorded_5xx() -> list[dict[str, Any]]:
    data = json.loads((REC / "error-500-internal.json").read_text())
    return [data["olderMessage"], data["newerMessage"], json.loads((REC / "error-503-overloaded.json").read_text())]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_recorded_5xx_is_retried_and_the_answer_arrives(replay, monkeypatch, which: int) -> None:
    """Google's 500 and 503 are passing trouble: asked again, and the client sees only the answer."""
    from proxy.upstream import http as retry

    monkeypatch.setattr(retry, "BASE_DELAY", 0.01)
    stack, rep = replay
    body = _recorded_5xx()[which]
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    before = len(rep.bodies)
    rep.error = (body["error"]["code"], body)
    out = client.responses.create(model=MODEL, input="go")
    assert out.status == "completed" and out.output_text and len(rep.bodies) == before + 2


@pytest.mark.parametrize("which", [0, 1, 2])
def test_recorded_5xx_that_persists_reaches_each_client_in_its_own_protocol(replay, monkeypatch, which: int) -> None:
    from proxy.upstream import http as retry

    monkeypatch.setattr(retry, "BASE_DELAY", 0.01)
    stack, rep = replay
    body = _recorded_5xx()[which]
    code, message = body["error"]["code"], body["error"]["message"]
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    attempts = retry.DEFAULT_MAX_RETRIES + 1
    before = len(rep.bodies)
    rep.error, rep.error_times = (code, body), attempts
    with pytest.raises(openai.InternalServerError) as e:
        client.responses.create(model=MODEL, input="go")
    assert e.value.status_code == code and message in str(e.value.body)
    assert len(rep.bodies) == before + attempts, "asked again as often as the policy allows, no more"
    rep.error, rep.error_times = (code, body), attempts
    with pytest.raises(openai.InternalServerError) as e:
        list(client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "go"}], stream=True))
    assert e.value.status_code == code and message in str(e.value.body)

    rep.error_times = attempts
    status, got = _native_error(stack, rep, code, body)
    assert status == code and got["error"] == body["error"], "Google's own error passes through"


def test_mock_5xx_bodies_are_the_recorded_ones() -> None:
    """The mock's 500 and 503 say what Google says, in the same shape (no details)."""
    from proxy.mock.model import ERRORS
    from proxy.mock.validate import GeminiRejection

    for recorded in _recorded_5xx()[1:]:
        err = recorded["error"]
        name, message = ERRORS[err["code"]]
        assert GeminiRejection(err["code"], message, name).body() == recorded


def _grounded_answer() -> tuple[str, dict[str, Any]]:
    """An answer carrying the recorded groundingMetadata (tests/recorded/grounding-search.json). The
    metadata is Google's; the answer's text was not recorded, so ours fills the bytes between the
    recorded segments, each segment at its recorded byte offsets."""
    grounding = json.loads((REC / "grounding-search.json").read_text())["groundingMetadata"]
    text = b""
    for support in grounding["groundingSupports"]:
        seg = support["segment"]
        text += b"-" * (seg["startIndex"] - len(text)) + seg["text"].encode()
        assert len(text) == seg["endIndex"]
    text += b" That is all."
    return text.decode(), {"candidates": [{"content": {"role": "model", "parts": [{"text": text.decode()}]},
                                           "finishReason": "STOP", "groundingMetadata": grounding}],
                           "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 140,
                                             "totalTokenCount": 149}, "modelVersion": "gemini-2.5-flash"}


def test_recorded_grounding_becomes_citations_on_each_front_end(replay) -> None:
    """Recorded grounding (two supports, each citing one web chunk by byte offsets; two queries): each
    support is a url_citation over exactly its recorded text, naming the recorded page, on Responses
    (whole and streamed) and Chat; the searches Google ran are shown as searches."""
    stack, rep = replay
    text, answer = _grounded_answer()
    grounding = answer["candidates"][0]["groundingMetadata"]
    want = [(s["segment"]["text"], grounding["groundingChunks"][i]["web"]["uri"],
             grounding["groundingChunks"][i]["web"]["title"])
            for s in grounding["groundingSupports"] for i in s["groundingChunkIndices"]]
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    rep.answer = answer
    try:
        whole = client.responses.create(model="gemini-2.5-flash", input="docs?")
        streamed = list(client.responses.create(model="gemini-2.5-flash", input="docs?", stream=True))[-1].response
        chat = client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": "docs?"}])
    finally:
        rep.answer = None
    for out in (whole, streamed):
        [message] = [o for o in out.output if o.type == "message"]
        got = message.content[0]
        assert got.text == text
        assert [(text[a.start_index:a.end_index], a.url, a.title) for a in got.annotations] == want
        searches = [o for o in out.output if o.type == "web_search_call"]
        assert [q for o in searches for q in (o.action.queries or [o.action.query])] == grounding["webSearchQueries"]
    msg = chat.choices[0].message
    assert [(msg.content[a.url_citation.start_index:a.url_citation.end_index], a.url_citation.url)
            for a in msg.annotations] == [(t, u) for t, u, _ in want]


# ---- recorded Interactions SSE, through --upstream-api interactions ---------------------------------

class InteractionsReplay:
    """Answers POST /{version}/interactions with a recorded Interactions stream, one event per line."""

    def __init__(self) -> None:
        self.stream = "interactions-basic.jsonl"
        self.bodies: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        if not body.get("stream"):  # the recorded whole interaction of the same scenario
            return web.json_response(json.loads((REC / self.stream.replace(".jsonl", ".json")).read_text()))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for line in (REC / self.stream).read_bytes().splitlines():
            if line.strip():
                event = json.loads(line)
                await resp.write(f"event: {event['event_type']}\ndata: ".encode() + line + b"\n\n")
        return resp


@pytest.fixture(scope="module")
def interactions_replay():
    from proxy.upstream.interactions.client import InteractionsUpstream
    from proxy.upstream.routes import RoutedUpstream

    lt, rep = LoopThread(), InteractionsReplay()
    runner, url = _serve(lt, "/{version}/interactions", rep.handle)
    stack = Stack(wrap=lambda up: RoutedUpstream(up, [("*", InteractionsUpstream(url, api_key="test-key"))]))
    yield stack, rep
    stack.close()
    lt.run(runner.cleanup())
    lt.stop()


def _interaction_text(name: str) -> str:
    """The answer text of a recorded interaction: its text deltas (stream) or model_output steps (whole)."""
    if name.endswith(".json"):
        steps = json.loads((REC / name).read_text())["steps"]
        return "".join(c["text"] for s in steps if s["type"] == "model_output" for c in s.get("content") or []
                       if c.get("type") == "text")
    return "".join(json.loads(line)["delta"]["text"] for line in (REC / name).read_text().splitlines()
                   if '"type":"text"' in line and json.loads(line).get("event_type") == "step.delta")


@pytest.mark.parametrize("name", ["interactions-basic.jsonl", "interactions-google-search.jsonl"])
def test_recorded_interactions_text_reaches_responses_and_chat(interactions_replay, name: str) -> None:
    stack, rep = interactions_replay
    rep.stream = name
    want = _interaction_text(name)
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    events = list(client.responses.create(model="gemini-2.5-flash", input="hi", stream=True))
    assert events[-1].type == "response.completed", events[-1].response.error
    assert events[-1].response.output_text == want
    chat = client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": "hi"}])
    assert chat.choices[0].message.content == _interaction_text(name.replace(".jsonl", ".json"))
    assert chat.choices[0].finish_reason == "stop"


def test_recorded_interactions_tool_call_loop(interactions_replay) -> None:
    """A recorded function_call step (arguments {} at the start, the real ones in one delta) is one call
    with the delta's arguments on Responses and Chat; the recorded answer after the result is the text."""
    stack, rep = interactions_replay
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    tool = {"type": "function", "name": "getWeather", "parameters": {"type": "object", "properties": {
        "location": {"type": "string"}}}}
    rep.stream = "interactions-tool-call-step1.jsonl"
    events = list(client.responses.create(model="gemini-2.5-flash", input="weather?", tools=[tool], stream=True))
    final = events[-1].response
    [call] = [o for o in final.output if o.type == "function_call"]
    assert call.name == "getWeather" and json.loads(call.arguments) == {"location": "San Francisco"}
    rep.stream = "interactions-tool-call-step2.jsonl"
    answer = client.responses.create(model="gemini-2.5-flash", previous_response_id=final.id, tools=[tool],
                                     input=[{"type": "function_call_output", "call_id": call.call_id,
                                             "output": "sunny, 27C"}])
    assert answer.output_text == _interaction_text("interactions-tool-call-step2.json")
    rep.stream = "interactions-tool-call-step1.jsonl"
    chat_tool = {"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}}
    chat = client.chat.completions.create(model="gemini-2.5-flash", tools=[chat_tool],
                                          messages=[{"role": "user", "content": "weather?"}])
    [tc] = chat.choices[0].message.tool_calls
    assert tc.function.name == "getWeather" and json.loads(tc.function.arguments) == {"location": "San Francisco"}
    assert chat.choices[0].finish_reason == "tool_calls"


def _recorded_citations(name: str) -> list[dict[str, Any]]:
    return [a for line in (REC / name).read_text().splitlines() if "text_annotation_delta" in line
            for a in json.loads(line)["delta"]["annotations"]]


def test_recorded_interactions_search_shows_as_a_search_with_citations(interactions_replay) -> None:
    """Google Search on the Interactions upstream: the search is a web_search_call item with Google's
    queries, and each recorded url_citation is an annotation over the same text, on Responses
    (streamed and whole) and Chat."""
    stack, rep = interactions_replay
    rep.stream = "interactions-google-search.jsonl"
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    text = _interaction_text(rep.stream)
    final = list(client.responses.create(model="gemini-2.5-flash", input="news?", stream=True))[-1].response
    [search] = [o for o in final.output if o.type == "web_search_call"]
    queries = next(json.loads(line)["delta"]["arguments"]["queries"] for line in (REC / rep.stream).read_text()
                   .splitlines() if '"type":"google_search_call","arguments"' in line)
    assert search.status == "completed" and search.action.query == queries[0]
    [message] = [o for o in final.output if o.type == "message"]
    got = [(a.url, a.start_index, a.end_index) for a in message.content[0].annotations]
    want = _recorded_citations(rep.stream)
    assert got == [(a["url"], a["start_index"], a["end_index"]) for a in want]
    for a in message.content[0].annotations:
        assert 0 <= a.start_index < a.end_index <= len(text)
    whole = client.responses.create(model="gemini-2.5-flash", input="news?")
    assert any(o.type == "web_search_call" for o in whole.output)
    assert any(o.type == "message" and o.content[0].annotations for o in whole.output)
    chat = client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": "news?"}])
    assert chat.choices[0].message.annotations and all(
        a.type == "url_citation" for a in chat.choices[0].message.annotations)


# ---- the MITM addon in a real mitmdump, in front of the recordings --------------------------------

def mitm_over(folder: Path, handle: Any):
    """A real mitmdump whose Gemini upstream answers every model call with `handle`."""
    from tests.mitm_harness import MitmStack

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/{version}/models/{target}", handle)
    return MitmStack(folder, upstream_app=app)


@pytest.fixture(scope="module")
def mitm_replay(tmp_path_factory: pytest.TempPathFactory):
    rep = Replay()
    stack = mitm_over(tmp_path_factory.mktemp("mitm-recorded"), rep.handle)
    yield stack, rep
    stack.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in STREAMS if n.startswith("vertex-")])
def test_mitm_captures_recorded_streams_and_replays_them_whole(mitm_replay, name: str) -> None:
    """An app's recorded Vertex stream through a real mitmdump with a session: every call is captured
    whole (the end markers read as Google means them), and the next round's history carries each call
    whole, named, signed as recorded, with a named response."""
    import aiohttp

    stack, rep = mitm_replay
    want = oracle(chunks(name))
    session = "rec-" + name.split(".")[0]
    url = f"https://generativelanguage.googleapis.com/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"

    async def run() -> tuple[list[dict[str, Any]], list[int]]:
        async with aiohttp.ClientSession() as s:
            async with s.put(f"{stack.frontend_url}/v1/sessions/{session}/tools",
                             json={"tools": _tools(EXPECTED_NAMES[name])}) as r:
                assert r.status == 200, await r.text()

            async def through(contents: list[dict[str, Any]]) -> int:
                async with s.post(url, json={"contents": contents}, proxy=stack.proxy_url, ssl=stack.client_ssl(),
                                  headers={"x-goog-api-key": "k"}) as r:
                    await r.read()
                    return r.status

            first = {"role": "user", "parts": [{"text": f"<session:{session}> go"}]}
            rep.stream = name
            statuses = [await through([first])]
            async with s.get(f"{stack.frontend_url}/v1/sessions/{session}") as r:
                rounds = (await r.json())["rounds"]
            outputs = [{"call_id": c["call_id"], "output": "ok"} for c in rounds[-1]["calls"]]
            async with s.post(f"{stack.frontend_url}/v1/sessions/{session}/tool_outputs",
                              json={"outputs": outputs}) as r:
                assert r.status == 200, await r.text()
            rep.stream = "gemini-text.jsonl"
            statuses.append(await through([first, {"role": "model", "parts": [{"text": "Tool call completed"}]},
                                           {"role": "user", "parts": [{"text": "."}]}]))
            return rounds[-1]["calls"], statuses

    calls, statuses = asyncio.run(run())
    assert statuses == [200, 200]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [(c["name"], c["args"]) for c in want]
    _check_next_turn(rep.bodies[-1], want)
