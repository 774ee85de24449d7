"""The recorded wire of 2026 (tests/recorded/, provenance in SOURCES.md) replayed through every front-end:
Gemini 3.7 Flash's own call ids, signatures on calls and on empty text parts, JSON-array streams, usage on
every chunk, and the 400s Google gave, each reaching each client in its own protocol; and the mock held
to the same recordings (where they differ, the recording wins).

Stream fixtures are kept as raw wire: `.sse` (Google's SSE bytes), `.array.json` (the JSON array
streamGenerateContent sends without alt=sse), `.jsonl` (one chunk per line). The replay serves a
recording byte for byte when the proxy asks in the recording's framing, and re-frames the same chunk
bytes otherwise.
"""

import asyncio
import base64
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import openai
import pytest
from aiohttp import web

from proxy.intercept.capture_calls import CallCapture
from proxy.mock.validate import GeminiRejection, call_signature, validate_request
from proxy.upstream.gemini.client import GeminiUpstream
from proxy.wire.merge_chunks import merge_chunks
from tests.harness import LoopThread, Stack
from tests.test_recorded_wire import _serve, mitm_over

REC = Path(__file__).parent / "recorded"


def payloads(name: str) -> list[bytes]:
    """Each recorded chunk's JSON bytes, as they came."""
    raw = (REC / name).read_bytes()
    if name.endswith(".sse"):
        return [e.removeprefix(b"data: ") for e in re.split(rb"\r?\n\r?\n", raw) if e.strip()]
    if name.endswith(".array.json"):
        return [json.dumps(c).encode() for c in json.loads(raw)]
    return [line for line in raw.splitlines() if line.strip()]


def chunks(name: str) -> list[dict[str, Any]]:
    return [json.loads(p) for p in payloads(name)]


def recorded_calls(name: str) -> list[dict[str, Any]]:
    """[{name, args, id, signature}] of every functionCall part in a recording."""
    return [{"name": p["functionCall"]["name"], "args": p["functionCall"].get("args") or {},
             "id": p["functionCall"].get("id"), "signature": p.get("thoughtSignature")}
            for c in chunks(name) for p in c["candidates"][0]["content"]["parts"] if "functionCall" in p]


def recorded_text(name: str) -> str:
    return "".join(p.get("text", "") for c in chunks(name) for p in c["candidates"][0]["content"]["parts"]
                   if not p.get("thought"))


# (recorded call stream, the model it came from, the recorded answer that followed the call's result)
CALL_STREAMS = {
    "gemini37-flash-call-id-stream.sse": ("gemini-3.7-flash", "gemini37-flash-text-stream-2026-09-16.sse"),
    "gemini3-pro-call-stream.sse": ("gemini-3-pro-preview", "gemini3-pro-after-call-stream.sse"),
    "gemini3-flash-call-stream.array.json": ("gemini-3-flash-preview", "gemini3-flash-after-call-stream.array.json"),
}
TEXT_STREAMS = ["gemini37-flash-text-stream-2026-09-14.jsonl", "gemini37-flash-text-stream-2026-09-16.sse",
                "gemini25-flash-usage-mid-stream.sse", "gemini3-pro-after-call-stream.sse",
                "gemini3-flash-after-call-stream.array.json"]


class WireReplay:
    """Answers streamGenerateContent with a recording as Google sent it (one-shot errors when set)."""

    def __init__(self) -> None:
        self.stream = TEXT_STREAMS[0]
        self.bodies: list[dict[str, Any]] = []
        self.error: tuple[int, dict[str, Any]] | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append(await request.json())
        if self.error is not None:
            (status, body), self.error = self.error, None
            return web.json_response(body, status=status)
        sse = request.query.get("alt") == "sse"
        name = self.stream
        if not request.match_info["target"].endswith(":streamGenerateContent"):
            return web.json_response(merge_chunks(chunks(name)))  # a whole answer: the recorded chunks merged
        if sse and name.endswith(".sse") or not sse and name.endswith(".array.json"):
            raw = (REC / name).read_bytes()  # byte for byte
        elif sse:
            raw = b"".join(b"data: " + p + b"\r\n\r\n" for p in payloads(name))
        else:
            raw = b"[" + b",\r\n".join(payloads(name)) + b"]"
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream" if sse else "application/json"})
        await resp.prepare(request)
        await resp.write(raw)
        return resp


@pytest.fixture(scope="module")
def wire():
    lt, rep = LoopThread(), WireReplay()
    runner, url = _serve(lt, "/{version}/models/{target}", rep.handle)
    stack = Stack(wrap=lambda _: GeminiUpstream(url, api_key="test-key"))
    yield stack, rep
    stack.close()
    lt.run(runner.cleanup())
    lt.stop()


def _oai(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)


def _anth(stack: Stack) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0, _strict_response_validation=True)


def _tool_names(name: str) -> list[str]:
    return list(dict.fromkeys(c["name"] for c in recorded_calls(name)))


def _check_sent_back(body: dict[str, Any], want: list[dict[str, Any]]) -> None:
    """The next request: each recorded call whole, with its recorded id and signature, and a response
    for each carrying the call's id (Gemini's own, as it minted it) and name."""
    parts = [p for c in body["contents"] for p in c["parts"]]
    calls = [p for p in parts if "functionCall" in p]
    responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
    assert [(p["functionCall"]["name"], p["functionCall"].get("args", {}), p["functionCall"].get("id"))
            for p in calls] == [(c["name"], c["args"], c["id"]) for c in want]
    assert [p.get("thoughtSignature") for p in calls] == [c["signature"] for c in want]
    assert [(r["name"], r.get("id")) for r in responses] == [(c["name"], c["id"]) for c in want]


@pytest.mark.parametrize("name", CALL_STREAMS)
def test_recorded_call_streams_through_responses(wire, name: str) -> None:
    stack, rep = wire
    model, after = CALL_STREAMS[name]
    want = recorded_calls(name)
    client = _oai(stack)
    tools = [{"type": "function", "name": n, "parameters": {"type": "object"}} for n in _tool_names(name)]
    rep.stream = name
    final = list(client.responses.create(model=model, input="go", tools=tools, stream=True))[-1]
    assert final.type == "response.completed"
    calls = [o for o in final.response.output if o.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [(c["name"], c["args"]) for c in want]
    usage = chunks(name)[-1]["usageMetadata"]
    assert final.response.usage.input_tokens == usage["promptTokenCount"]
    assert final.response.usage.output_tokens_details.reasoning_tokens == usage.get("thoughtsTokenCount", 0)
    rep.stream = after
    nxt = list(client.responses.create(model=model, previous_response_id=final.response.id, tools=tools, stream=True,
                                       input=[{"type": "function_call_output", "call_id": c.call_id, "output": "ok"}
                                              for c in calls]))[-1]
    assert nxt.type == "response.completed" and nxt.response.output_text == recorded_text(after)
    _check_sent_back(rep.bodies[-1], want)


@pytest.mark.parametrize("name", CALL_STREAMS)
def test_recorded_call_streams_through_chat(wire, name: str) -> None:
    stack, rep = wire
    model, after = CALL_STREAMS[name]
    want = recorded_calls(name)
    client = _oai(stack)
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in _tool_names(name)]
    rep.stream = name
    got: dict[int, dict[str, str]] = {}
    for chunk in client.chat.completions.create(model=model, messages=[{"role": "user", "content": "go"}],
                                                tools=tools, stream=True):
        for tc in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            slot = got.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            if not slot["id"]:  # the first delta of each call names it (the AI SDK's strict chunk schema)
                assert tc.id and tc.function and tc.function.name
            slot["id"] += tc.id or ""
            slot["name"] += tc.function.name or "" if tc.function else ""
            slot["arguments"] += tc.function.arguments or "" if tc.function else ""
    calls = [got[i] for i in sorted(got)]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [(c["name"], c["args"]) for c in want]
    rep.stream = after
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in calls]}, *[{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]]
    answer = client.chat.completions.create(model=model, messages=messages, tools=tools, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in answer if c.choices) == recorded_text(after)
    _check_sent_back(rep.bodies[-1], want)


@pytest.mark.parametrize("name", CALL_STREAMS)
def test_recorded_call_streams_through_anthropic(wire, name: str) -> None:
    stack, rep = wire
    model, after = CALL_STREAMS[name]
    want = recorded_calls(name)
    client = _anth(stack)
    tools = [{"name": n, "input_schema": {"type": "object"}} for n in _tool_names(name)]
    rep.stream = name
    with client.messages.stream(model=model, max_tokens=512, tools=tools,
                                messages=[{"role": "user", "content": "go"}]) as s:
        message = s.get_final_message()
    uses = [b for b in message.content if b.type == "tool_use"]
    assert [(u.name, u.input) for u in uses] == [(c["name"], c["args"]) for c in want]
    assert message.stop_reason == "tool_use"
    assert message.usage.input_tokens == chunks(name)[-1]["usageMetadata"]["promptTokenCount"]
    rep.stream = after
    with client.messages.stream(model=model, max_tokens=512, tools=tools, messages=[
            {"role": "user", "content": "go"}, {"role": "assistant", "content": message.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "ok"}
                                         for u in uses]}]) as s:
        final = s.get_final_message()
    assert "".join(b.text for b in final.content if b.type == "text") == recorded_text(after)
    _check_sent_back(rep.bodies[-1], want)


@pytest.mark.parametrize("name", CALL_STREAMS)
def test_recorded_call_streams_through_interactions(wire, name: str) -> None:
    """google-genai's client.interactions: one function_call step per recorded call, and the next turn
    sends each back with its recorded id and signature."""
    from google import genai

    stack, rep = wire
    model, after = CALL_STREAMS[name]
    want = recorded_calls(name)
    c = genai.Client(api_key="test-key", http_options={"base_url": stack.url, "api_version": "v1beta"})
    tools = [{"type": "function", "name": n, "parameters": {"type": "object"}} for n in _tool_names(name)]
    rep.stream = name
    steps: dict[int, dict[str, Any]] = {}
    args: dict[int, str] = {}
    last = None
    for e in c.interactions.create(model=model, input="go", tools=tools, stream=True):
        last = e
        if e.event_type == "step.start":
            steps[e.index] = e.step.model_dump(exclude_none=True)
        elif e.event_type == "step.delta" and e.delta.type == "arguments_delta":
            args[e.index] = args.get(e.index, "") + e.delta.arguments
    assert last is not None and last.event_type == "interaction.completed"
    calls = [steps[i] | ({"arguments": json.loads(args[i])} if i in args else {})
             for i in sorted(steps) if steps[i]["type"] == "function_call"]
    assert [(s["name"], s.get("arguments", {})) for s in calls] == [(c["name"], c["args"]) for c in want]
    rep.stream = after
    list(c.interactions.create(model=model, previous_interaction_id=last.interaction.id, tools=tools, stream=True,
                               input=[{"type": "function_result", "call_id": s["id"], "name": s["name"],
                                       "result": "ok"} for s in calls]))
    _check_sent_back(rep.bodies[-1], want)


def _native(stack: Stack, model: str, body: dict[str, Any], sse: bool) -> tuple[int, str, bytes]:
    async def run() -> tuple[int, str, bytes]:
        async with aiohttp.ClientSession() as s, s.post(
                f"{stack.url}/v1beta/models/{model}:streamGenerateContent" + ("?alt=sse" if sse else ""),
                headers={"x-goog-api-key": "k"}, json=body) as r:
            return r.status, r.headers.get("content-type", ""), await r.read()
    return asyncio.run(run())


def _native_chunks(raw: bytes, sse: bool) -> list[dict[str, Any]]:
    if sse:
        return [json.loads(e.removeprefix(b"data: ")) for e in re.split(rb"\r?\n\r?\n", raw) if e.strip()]
    data = json.loads(raw)
    assert isinstance(data, list), "without alt=sse, streamGenerateContent answers one JSON array"
    return data


@pytest.mark.parametrize("sse", [True, False], ids=["sse", "json-array"])
@pytest.mark.parametrize("name", [*CALL_STREAMS, *TEXT_STREAMS])
def test_native_rest_passes_each_recorded_chunk_on(wire, name: str, sse: bool) -> None:
    """A Gemini-native client gets every recorded chunk as Google sent it, in the framing it asked
    for: each call with its id and signature, each chunk's usageMetadata (live mid-stream, not summed),
    the signature on the closing empty text part."""
    stack, rep = wire
    rep.stream = name
    model = CALL_STREAMS.get(name, ("gemini-3-flash-preview",))[0]
    decls = [{"name": n, "parameters": {"type": "OBJECT"}} for n in _tool_names(name)]
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "go"}]}]}
    if decls:
        body["tools"] = [{"functionDeclarations": decls}]
    status, ctype, raw = _native(stack, model, body, sse)
    assert status == 200, raw[:300]
    assert ctype.startswith("text/event-stream" if sse else "application/json")
    got = _native_chunks(raw, sse)
    want = chunks(name)
    assert [c.get("usageMetadata") for c in got] == [c.get("usageMetadata") for c in want]
    assert [c["candidates"][0]["content"]["parts"] for c in got] == [c["candidates"][0]["content"]["parts"]
                                                                       for c in want]


def test_recorded_mixed_case_request_through_the_native_front_end(wire) -> None:
    """llm-gemini's recorded second request (snake `function_call`/`function_response` next to camel
    `thoughtSignature`, streamGenerateContent without alt=sse): taken, the call and its signature sent on
    whole, and the recorded JSON-array answer reaches the client as a JSON array."""
    stack, rep = wire
    rep.stream = "gemini3-flash-after-call-stream.array.json"
    recorded = json.loads((REC / "gemini3-flash-mixed-case.request.json").read_text())
    status, _, raw = _native(stack, "gemini-3-flash-preview", recorded, sse=False)
    assert status == 200, raw[:300]
    assert "".join(p.get("text", "") for c in _native_chunks(raw, False)
                   for p in c["candidates"][0]["content"]["parts"]) == "5 times 3 is 15."
    sent = [p for c in rep.bodies[-1]["contents"] for p in c["parts"]]
    [call] = [p for p in sent if "functionCall" in p or "function_call" in p]
    fc = call.get("functionCall") or call["function_call"]
    assert (fc["name"], fc["args"]) == ("multiply", {"y": 3, "x": 5})
    assert call["thoughtSignature"] == recorded["contents"][1]["parts"][1]["thoughtSignature"]
    [resp] = [p.get("functionResponse") or p["function_response"] for p in sent
              if "functionResponse" in p or "function_response" in p]
    assert resp["name"] == "multiply" and resp["response"] == {"output": "15"}


@pytest.mark.parametrize("name", TEXT_STREAMS)
def test_recorded_text_streams_with_usage_on_every_front_end(wire, name: str) -> None:
    """Text and usage: the usage reported is the last chunk's (Gemini's usage is cumulative on every
    chunk, never to be summed), thinking tokens as reasoning/output tokens; the empty signed text part
    adds no text."""
    stack, rep = wire
    rep.stream = name
    text, usage = recorded_text(name), chunks(name)[-1]["usageMetadata"]
    output = usage["candidatesTokenCount"] + usage.get("thoughtsTokenCount", 0)
    client = _oai(stack)
    final = list(client.responses.create(model="gemini-3-flash-preview", input="go", stream=True))[-1].response
    assert final.output_text == text
    assert (final.usage.input_tokens, final.usage.output_tokens) == (usage["promptTokenCount"], output)
    pieces, last = [], None
    for chunk in client.chat.completions.create(model="gemini-3-flash-preview", stream=True,
                                                stream_options={"include_usage": True},
                                                messages=[{"role": "user", "content": "go"}]):
        pieces += [chunk.choices[0].delta.content or ""] if chunk.choices else []
        last = chunk.usage or last
    assert "".join(pieces) == text
    assert last is not None and (last.prompt_tokens, last.completion_tokens) == (usage["promptTokenCount"], output)
    with _anth(stack).messages.stream(model="gemini-3-flash-preview", max_tokens=512,
                                      messages=[{"role": "user", "content": "go"}]) as s:
        message = s.get_final_message()
    assert "".join(b.text for b in message.content if b.type == "text") == text
    assert (message.usage.input_tokens, message.usage.output_tokens) == (usage["promptTokenCount"], output)


# ---- the recorded 400s, each reaching each client in its own protocol -------------------------------

def _recorded_400s() -> dict[str, dict[str, Any]]:
    return {"minimal": json.loads((REC / "error-400-thinking-minimal-3.7-flash.json").read_text())["minimal"]["body"],
            "any+json": json.loads((REC / "error-400-any-mode-json-mime.json").read_text())}


@pytest.mark.parametrize("which", ["minimal", "any+json"])
def test_recorded_400s_reach_each_client_naming_the_problem(wire, which: str) -> None:
    """The request that earned each 400 (reasoning effort minimal on gemini-3.7-flash; a forced tool
    with a JSON answer), from each front-end: what the proxy sent is what Google refused, and each
    client gets Google's message in its own protocol's 400."""
    stack, rep = wire
    body = _recorded_400s()[which]
    message = body["error"]["message"]
    tool = {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
    extra: dict[str, Any] = ({"reasoning": {"effort": "minimal"}} if which == "minimal" else
                             {"tools": [tool], "tool_choice": "required", "text": {"format": {"type": "json_object"}}})
    rep.error = (400, body)
    with pytest.raises(openai.BadRequestError) as e:
        _oai(stack).responses.create(model="gemini-3.7-flash", input="go json", **extra)
    assert message in str(e.value.body)
    sent = rep.bodies[-1]
    if which == "minimal":
        assert sent["generationConfig"]["thinkingConfig"]["thinkingLevel"] == "MINIMAL"
    else:
        assert sent["toolConfig"]["functionCallingConfig"]["mode"] == "ANY"
        assert sent["generationConfig"]["responseMimeType"] == "application/json"
    rep.error = (400, body)
    with pytest.raises(openai.BadRequestError) as e:
        list(_oai(stack).chat.completions.create(model="gemini-3.7-flash", stream=True,
                                                 messages=[{"role": "user", "content": "go json"}]))
    assert message in str(e.value.body)
    rep.error = (400, body)
    with pytest.raises(anthropic.BadRequestError) as ae:
        _anth(stack).messages.create(model="gemini-3.7-flash", max_tokens=64,
                                     messages=[{"role": "user", "content": "go"}])
    assert message in str(ae.value.body)
    rep.error = (400, body)
    status, _, raw = _native(stack, "gemini-3.7-flash", {"contents": [{"role": "user", "parts": [{"text": "go"}]}]},
                             sse=True)
    assert status == 400 and json.loads(raw)["error"] == body["error"], "Google's own error passes through"


# ---- the MITM addon's capture, on the recorded JSON-array stream -----------------------------------

def test_capture_reads_recorded_json_array_and_sse_streams() -> None:
    """The interceptor's capture of an app's answer (llm-gemini's JSON array; Gemini 3.7's SSE with its
    own `call_…` id): the call whole, with Gemini's id kept as the call's Gemini id, and its signature."""
    array = CallCapture()
    array.feed_body((REC / "gemini3-flash-call-stream.array.json").read_bytes())
    sse = CallCapture()
    for chunk in chunks("gemini37-flash-call-id-stream.sse"):
        sse.feed(chunk)
    for capture, name in ((array, "gemini3-flash-call-stream.array.json"), (sse, "gemini37-flash-call-id-stream.sse")):
        want = recorded_calls(name)
        assert [(r.name, r.args, r.gemini_id, r.signature) for r in capture.calls] == \
            [(c["name"], c["args"], c["id"], c["signature"]) for c in want]


# ---- the mock agrees with the recordings ----------------------------------------------------------

def _rejection(body: dict[str, Any], model: str, vertex: bool = False) -> dict[str, Any] | None:
    try:
        validate_request(body, model, api="vertex" if vertex else "mldev")
    except GeminiRejection as e:
        return e.body()
    return None


def test_mock_refuses_what_google_refused_with_the_recorded_bodies() -> None:
    levels = json.loads((REC / "error-400-thinking-minimal-3.7-flash.json").read_text())
    hello = {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]}
    for level, want in (("MINIMAL", levels["minimal"]["body"]), ("LOW", None)):
        body = {**hello, "generationConfig": {"thinkingConfig": {"thinkingLevel": level}}}
        assert _rejection(body, "gemini-3.7-flash") == want
    forced = {**hello, "tools": [{"functionDeclarations": [{"name": "lookup"}]}],
              "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
              "generationConfig": {"responseMimeType": "application/json"}}
    assert _rejection(forced, "gemini-3-flash-preview") == _recorded_400s()["any+json"]


def _signed_as_mock(body: dict[str, Any], model: str, urlsafe: bool = False) -> dict[str, Any]:
    """A recorded request with each call's signature (Google's, which the mock cannot check) replaced by
    the mock's own for the same call, in the recording's alphabet."""
    out = json.loads(json.dumps(body))
    for c in out["contents"]:
        for p in c["parts"]:
            fc = p.get("functionCall") or p.get("function_call")
            if fc is not None and "thoughtSignature" in p:
                sig = call_signature(model, fc["name"], fc.get("args") or {})
                p["thoughtSignature"] = base64.urlsafe_b64encode(base64.b64decode(sig)).decode() if urlsafe else sig
    return out


def test_mock_takes_the_requests_google_took() -> None:
    """Every recorded request Google answered 200 the mock takes too: client-minted ids and a PDF as a
    JSON text part on 2.5-flash-lite (vercel/ai issue 16072), llm-gemini's mixed snake/camel casing,
    pydantic-ai's base64url re-encoded signature and `parameters_json_schema`."""
    pdf = json.loads((REC / "pdf-tool-result-exchange-2.5-flash-lite.json").read_text())
    for call in pdf["calls"]:
        assert call["response"]["status"] == 200
        assert _rejection(call["request"]["body"], "gemini-2.5-flash-lite") is None
    mixed = json.loads((REC / "gemini3-flash-mixed-case.request.json").read_text())
    assert _rejection(_signed_as_mock(mixed, "gemini-3-flash-preview"), "gemini-3-flash-preview") is None
    url64 = json.loads((REC / "gemini3-pro-base64url-signature.request.json").read_text())
    assert re.search(r"[-_]", url64["contents"][1]["parts"][0]["thoughtSignature"]), "the recording is base64url"
    assert _rejection(_signed_as_mock(url64, "gemini-3-pro-preview", urlsafe=True), "gemini-3-pro-preview") is None


def test_mock_takes_pdf_in_function_response_parts_on_gemini3_as_documented() -> None:
    """The form the 16072 recording's observation names as right: the PDF in functionResponse.parts
    inlineData (Gemini 3; 2.5 refuses the parts, as the mock's recorded Vertex text says)."""
    pdf = json.loads((REC / "pdf-tool-result-exchange-2.5-flash-lite.json").read_text())
    body = json.loads(json.dumps(pdf["calls"][1]["request"]["body"]))
    answer = body["contents"][2]["parts"]
    data = json.loads(answer.pop()["text"])["data"]["data"]
    answer[0]["functionResponse"]["parts"] = [{"inlineData": {"mimeType": "application/pdf", "data": data,
                                                              "displayName": "catalog.pdf"}}]
    answer[0]["functionResponse"]["response"] = {"document": {"$ref": "catalog.pdf"}}
    body["contents"][1]["parts"][0]["thoughtSignature"] = "skip_thought_signature_validator"
    assert _rejection(body, "gemini-3-flash-preview") is None
    refused = _rejection(body, "gemini-2.5-flash-lite")
    assert refused is not None and "function_response.parts" in refused["error"]["message"]


def test_mock_mints_call_ids_as_gemini_37_flash_does() -> None:
    """Gemini 3.7 Flash mints `call_` and digits (the recorded `call_345658`); so does the mock on 3.5+."""
    import aiohttp as _aiohttp

    from proxy.mock.server import start_mock

    [recorded] = recorded_calls("gemini37-flash-call-id-stream.sse")
    pattern = re.compile(r"call_\d{6}")
    assert pattern.fullmatch(recorded["id"])
    lt = LoopThread()
    runner, url, _ = lt.run(start_mock())

    async def ask() -> dict[str, Any]:
        body = {"contents": [{"role": "user", "parts": [{"text": "use search"}]}],
                "tools": [{"functionDeclarations": [{"name": "search", "parameters": {"type": "OBJECT", "properties": {
                    "q": {"type": "STRING"}}}}]}]}
        async with _aiohttp.ClientSession() as s, s.post(f"{url}/v1beta/models/gemini-3.7-flash:generateContent",
                                                         json=body, headers={"x-goog-api-key": "k"}) as r:
            return await r.json()
    try:
        answer = lt.run(ask())
    finally:
        lt.run(runner.cleanup())
        lt.stop()
    [part] = [p for p in answer["candidates"][0]["content"]["parts"] if "functionCall" in p]
    assert pattern.fullmatch(part["functionCall"]["id"]) and part["thoughtSignature"]


# ---- item 9: functionCall.id per upstream (the rule and its evidence: proxy/upstream/gemini/vertex.py) ----

@pytest.fixture(scope="module")
def vertex(tmp_path_factory: pytest.TempPathFactory):
    """The front-ends with Vertex AI as the upstream (a service account minted a token at the mock's
    endpoint), against the mock's Vertex paths, strict as Vertex about `id`."""
    from proxy.upstream.gemini.credentials import GoogleCredential
    from proxy.upstream.gemini.vertex import VertexUpstream
    from tests.test_vertex_pool import service_account

    tmp = tmp_path_factory.mktemp("vertex-ids")

    def wrap(up: GeminiUpstream) -> VertexUpstream:
        sa = service_account(tmp / "sa.json", f"{up.base_url}/token", "runner@project-two.iam.example", "project-two")
        return VertexUpstream(up.base_url, [GoogleCredential(sa)], location="us-central1")

    stack = Stack(wrap=wrap)
    yield stack
    stack.close()


def _parallel_history(model: str) -> dict[str, Any]:
    """vercel/ai issue 16298's Vertex turn (gemini-3.1-flash-lite: two get_weather calls in one step, only
    the first signed) rebuilt as wire parts by us (the recording is the AI SDK's view of the answer; its
    toolCallIds serve as the ids a Developer-API-minded client sends), answered in the other order,
    Tokyo first."""
    rec = json.loads((REC / "vertex-parallel-calls-first-signed.json").read_text())
    paris, tokyo = rec["toolCalls"]
    assert paris["providerMetadata"]["vertex"]["thoughtSignature"] and tokyo["providerMetadata"] is None
    calls = [{"functionCall": {"id": t["toolCallId"], "name": t["toolName"], "args": t["input"]}}
             for t in (paris, tokyo)]
    calls[0]["thoughtSignature"] = call_signature(model, paris["toolName"], paris["input"])  # the mock's, for it
    answers = [{"functionResponse": {"id": t["toolCallId"], "name": t["toolName"],
                                     "response": {"city": t["input"]["city"]}}} for t in (tokyo, paris)]
    return {"contents": [{"role": "user", "parts": [{"text": rec["prompt"]}]}, {"role": "model", "parts": calls},
                         {"role": "user", "parts": answers}],
            "tools": [{"functionDeclarations": [{"name": "get_weather", "parameters": {
                "type": "OBJECT", "properties": {"city": {"type": "STRING"}}}}]}]}


def _generate(stack: Stack, model: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async def run() -> tuple[int, dict[str, Any]]:
        async with aiohttp.ClientSession() as s, s.post(f"{stack.url}/v1beta/models/{model}:generateContent",
                                                        headers={"x-goog-api-key": "k"}, json=body) as r:
            return r.status, await r.json()
    return asyncio.run(run())


def _function_parts(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(k, p[k]) for c in body["contents"] for p in c["parts"] for k in ("functionCall", "functionResponse")
            if k in p]


@pytest.mark.parametrize("model", ["gemini-3.1-flash-lite", "gemini-2.5-flash"])
def test_vertex_before_35_gets_no_ids_and_parallel_same_name_calls_stay_paired(vertex, model: str) -> None:
    """Vertex refuses `id` for models before 3.5: the proxy leaves it out of calls and responses, after
    putting the responses in call order by id, so each of two get_weather calls keeps its own answer."""
    body = _parallel_history(model)
    if not model.startswith("gemini-3"):
        body["contents"][1]["parts"][0].pop("thoughtSignature")
    status, answer = _generate(vertex, model, body)
    assert status == 200, answer
    sent = vertex.last_body()
    assert vertex.received[-1]["path"].startswith("/v1/projects/project-two/locations/us-central1/publishers/google/")
    parts = _function_parts(sent)
    assert all("id" not in v for _, v in parts), parts
    assert [(k, v["args"] if k == "functionCall" else v["response"]) for k, v in parts] == [
        ("functionCall", {"city": "Paris"}), ("functionCall", {"city": "Tokyo"}),
        ("functionResponse", {"city": "Paris"}), ("functionResponse", {"city": "Tokyo"})]
    assert "thoughtSignature" not in sent["contents"][1]["parts"][1], "only the first parallel call is signed"
    text = "".join(p.get("text", "") for p in answer["candidates"][0]["content"]["parts"])
    assert text.index('"Paris"') < text.index('"Tokyo"')


def test_mock_vertex_refuses_ids_before_35_as_vertex_did() -> None:
    """The mock's Vertex: `Unknown name "id"` (Vertex's words, looplj/axonhub #874) for 3.1, taken on 3.7;
    the Developer API takes them on every model."""
    body = _parallel_history("gemini-3.1-flash-lite")
    refused = _rejection(body, "gemini-3.1-flash-lite", vertex=True)
    assert refused is not None
    assert "Unknown name \"id\" at 'contents[1].parts[0].function_call': Cannot find field." in refused["error"][
        "message"]
    assert "Unknown name \"id\" at 'contents[2].parts[0].function_response'" in refused["error"]["message"]
    assert _rejection(body, "gemini-3.1-flash-lite") is None
    assert _rejection(_parallel_history("gemini-3.7-flash"), "gemini-3.7-flash", vertex=True) is None


@pytest.mark.parametrize("on", ["vertex", "developer"])
def test_ids_go_where_they_are_taken(vertex, on: str) -> None:
    """gemini-3.7-flash: Vertex and the Developer API both take ids (and mint them); the proxy sends the
    history's ids on, the responses in call order."""
    stack = vertex if on == "vertex" else Stack()
    try:
        status, answer = _generate(stack, "gemini-3.7-flash", _parallel_history("gemini-3.7-flash"))
        assert status == 200, answer
        parts = _function_parts(stack.last_body())
        assert [v.get("id") for _, v in parts] == ["lpndqlku", "m6rogicj", "lpndqlku", "m6rogicj"]
    finally:
        if stack is not vertex:
            stack.close()


@pytest.mark.parametrize("model", ["gemini-3.1-pro-preview", "gemini-3.7-flash"])
def test_responses_loop_on_vertex_echoes_only_the_ids_vertex_minted(vertex, model: str) -> None:
    """A Responses tool loop over Vertex: on 3.7 the mock's Vertex mints `call_…` ids and the proxy echoes
    each on its call and response; on 3.1 Vertex mints none and none is sent; both loops complete."""
    client = _oai(vertex)
    tools = [{"type": "function", "name": n, "parameters": {"type": "object", "properties": {"city": {
        "type": "string"}}}} for n in ("get_weather", "get_time")]
    first = client.responses.create(model=model, input="use get_weather and get_time city=Paris", tools=tools)
    calls = [o for o in first.output if o.type == "function_call"]
    assert [c.name for c in calls] == ["get_weather", "get_time"]
    nxt = client.responses.create(model=model, previous_response_id=first.id, tools=tools, input=[
        {"type": "function_call_output", "call_id": c.call_id, "output": c.name} for c in reversed(calls)])
    assert nxt.status == "completed" and "get_weather returned" in nxt.output_text
    parts = _function_parts(vertex.last_body())
    ids = [v.get("id") for _, v in parts]
    if model == "gemini-3.7-flash":
        assert all(re.fullmatch(r"call_\d{6}", i or "") for i in ids) and ids[:2] == ids[2:], ids
        assert [c.call_id for c in calls] == ids[:2], "the client sees Gemini's own ids"
    else:
        assert ids == [None] * 4


@pytest.fixture(scope="module")
def mocked():
    stack = Stack()
    yield stack
    stack.close()


@pytest.mark.parametrize("model", ["gemini-3-flash-preview", "gemini-2.5-flash-lite"])
def test_recorded_pdf_tool_result_goes_in_the_form_each_model_takes(mocked, model: str) -> None:
    """vercel/ai issue 16072's tool result (the recorded PDF's bytes) from an Anthropic client and a
    Responses client: on Gemini 3 in functionResponse.parts as inlineData (what the recording says it
    should have been), on 2.5 as a sibling part after the response (2.5 refuses the parts); the
    bytes unchanged, the strict mock taking both."""
    pdf = json.loads((REC / "pdf-tool-result-exchange-2.5-flash-lite.json").read_text())
    recorded = json.loads(pdf["calls"][1]["request"]["body"]["contents"][2]["parts"][1]["text"])
    data, prompt = recorded["data"]["data"], pdf["calls"][0]["request"]["body"]["contents"][0]["parts"][0]["text"]
    assert base64.b64decode(data).startswith(b"%PDF-")
    tool = {"name": "catalogSearch", "description": "Return catalog PDF metadata and document data.",
            "input_schema": {"type": "object"}}
    message = _anth(mocked).messages.create(model=model, max_tokens=64, tools=[tool], messages=[
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "catalogSearch",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": [
            {"type": "text", "text": "metadata"},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}}]}]}])
    assert message.content
    oai = _oai(mocked)
    first = oai.responses.create(model=model, input=prompt + " [[mock:rounds 1]]", tools=[
        {"type": "function", "name": "catalogSearch", "parameters": {"type": "object"}}],
        tool_choice="required")
    [call] = [o for o in first.output if o.type == "function_call"]
    oai.responses.create(model=model, previous_response_id=first.id, input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": [
            {"type": "input_text", "text": "metadata"},
            {"type": "input_file", "filename": "catalog.pdf", "file_data": f"data:application/pdf;base64,{data}"}]}])
    for body in (mocked.received[-3]["body"], mocked.last_body()):
        last = body["contents"][-1]["parts"]
        fr = last[0]["functionResponse"]
        if model.startswith("gemini-3"):
            assert [m["inlineData"]["mimeType"] for m in fr["parts"]] == ["application/pdf"]
            assert fr["parts"][0]["inlineData"]["data"] == data
        else:
            assert "parts" not in fr
            assert [p["inlineData"]["data"] for p in last if "inlineData" in p] == [data]
            assert last[-1]["inlineData"]["mimeType"] == "application/pdf"


@pytest.fixture(scope="module")
def mitm_wire(tmp_path_factory: pytest.TempPathFactory):
    rep = WireReplay()
    stack = mitm_over(tmp_path_factory.mktemp("mitm-wire-2026"), rep.handle)
    yield stack, rep
    stack.close()


@pytest.mark.slow
def test_mitm_captures_recorded_streams_in_both_framings(mitm_wire) -> None:
    """An app behind a real mitmdump, with a session: llm-gemini's JSON-array answer (no alt=sse) and
    Gemini 3.7's SSE answer with its own `call_…` id are each captured whole, with the recorded id and
    signature; the next round's history carries the call back with both and a response with the id."""
    stack, rep = mitm_wire
    model = "gemini-3.7-flash"

    async def run(name: str, sse: bool) -> list[dict[str, Any]]:
        session = "wire-" + name.split(".")[0]
        url = (f"https://generativelanguage.googleapis.com/v1beta/models/{model}:streamGenerateContent"
               + ("?alt=sse" if sse else ""))
        async with aiohttp.ClientSession() as s:
            tools = [{"type": "function", "name": n, "parameters": {"type": "object"}} for n in _tool_names(name)]
            async with s.put(f"{stack.frontend_url}/v1/sessions/{session}/tools", json={"tools": tools}) as r:
                assert r.status == 200, await r.text()

            async def through(contents: list[dict[str, Any]]) -> bytes:
                async with s.post(url, json={"contents": contents}, proxy=stack.proxy_url, ssl=stack.client_ssl(),
                                  headers={"x-goog-api-key": "k"}) as r:
                    assert r.status == 200
                    return await r.read()

            first = {"role": "user", "parts": [{"text": f"<session:{session}> go"}]}
            rep.stream = name
            await through([first])
            async with s.get(f"{stack.frontend_url}/v1/sessions/{session}") as r:
                calls = (await r.json())["rounds"][-1]["calls"]
            async with s.post(f"{stack.frontend_url}/v1/sessions/{session}/tool_outputs",
                              json={"outputs": [{"call_id": c["call_id"], "output": "ok"} for c in calls]}) as r:
                assert r.status == 200, await r.text()
            rep.stream = "gemini37-flash-text-stream-2026-09-16.sse"
            await through([first, {"role": "model", "parts": [{"text": "Tool call completed"}]},
                           {"role": "user", "parts": [{"text": "."}]}])
            return calls

    for name, sse in (("gemini3-flash-call-stream.array.json", False), ("gemini37-flash-call-id-stream.sse", True)):
        calls = asyncio.run(run(name, sse))
        want = recorded_calls(name)
        assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [(c["name"], c["args"]) for c in want]
        _check_sent_back(rep.bodies[-1], want)


def test_vertex_count_tokens_loses_ids_too(vertex) -> None:
    """A native client's countTokens (its own ids in the history) on Vertex before 3.5: the ids go, as
    for generateContent; the count comes back."""
    history = _parallel_history("gemini-3.1-flash-lite")

    async def run() -> tuple[int, dict[str, Any]]:
        async with aiohttp.ClientSession() as s, s.post(
                f"{vertex.url}/v1beta/models/gemini-3.1-flash-lite:countTokens", headers={"x-goog-api-key": "k"},
                json={"contents": history["contents"]}) as r:
            return r.status, await r.json()
    status, answer = asyncio.run(run())
    assert status == 200 and answer["totalTokens"] > 0, answer
    sent = vertex.received[-1]
    assert sent["method"] == "countTokens" and all("id" not in v for _, v in _function_parts(sent["body"]))


@pytest.mark.parametrize("name", CALL_STREAMS)
def test_recorded_call_streams_through_v1_gemini_sessions(wire, name: str) -> None:
    """/v1/gemini keeps the conversation: the turn it stores holds each recorded call with its id and
    signature, and the next request sends them back, each response given its call's id."""
    stack, rep = wire
    model, after = CALL_STREAMS[name]
    want = recorded_calls(name)
    rep.stream = name

    async def run() -> None:
        decls = [{"name": n, "parameters": {"type": "OBJECT"}} for n in _tool_names(name)]
        async with aiohttp.ClientSession() as s:
            body = {"conversation": f"wire-{name}", "model": model, "stream": True,
                    "tools": [{"functionDeclarations": decls}], "input": "go"}
            async with s.post(f"{stack.url}/v1/gemini", json=body) as r:
                assert r.status == 200, await r.text()
                await r.read()
            rep.stream = after
            # without ids, as google-genai sends them: the proxy gives each its call's (Gemini's own)
            responses = [{"functionResponse": {"name": c["name"], "response": {"ok": True}}} for c in want]
            async with s.post(f"{stack.url}/v1/gemini", json={**body, "input": [{"role": "user", "parts": responses}]}
                              ) as r:
                assert r.status == 200, await r.text()
                await r.read()

    asyncio.run(run())
    _check_sent_back(rep.bodies[-1], want)
