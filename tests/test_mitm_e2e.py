"""End to end through a real mitmdump process: HTTPS clients via the proxy and our CA, a TLS mock Gemini."""

import asyncio
import http.client
import json
import time
from pathlib import Path

import aiohttp
import pytest

from proxy.mock.validate import sign
from tests.mitm_harness import MitmStack

GL = "https://generativelanguage.googleapis.com"
CC = "https://cloudcode-pa.googleapis.com"
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                          "additionalProperties": False}}
CLOCK = {"type": "function", "name": "get_clock", "parameters": {"type": "object", "properties": {
    "zone": {"type": "string"}}, "required": ["zone"]}}


@pytest.fixture(scope="module")
def mitm(tmp_path_factory: pytest.TempPathFactory):
    stack = MitmStack(tmp_path_factory.mktemp("mitm"))
    yield stack
    stack.close()


def run(coro):
    return asyncio.run(coro)


async def set_tools(m: MitmStack, session: str, tools: list, choice=None) -> None:
    async with aiohttp.ClientSession() as s, s.put(f"{m.frontend_url}/v1/sessions/{session}/tools",
                                                   json={"tools": tools, "tool_choice": choice}) as r:
        assert r.status == 200, await r.text()


async def session_state(m: MitmStack, session: str) -> dict:
    async with aiohttp.ClientSession() as s, s.get(f"{m.frontend_url}/v1/sessions/{session}") as r:
        return await r.json()


async def post_outputs(m: MitmStack, session: str, outputs: list) -> int:
    async with aiohttp.ClientSession() as s, s.post(f"{m.frontend_url}/v1/sessions/{session}/tool_outputs",
                                                    json={"outputs": outputs}) as r:
        return r.status


async def gemini(m: MitmStack, url: str, body: dict, headers: dict | None = None,
                 raw: bytes | None = None) -> tuple[int, bytes, list[float]]:
    """POST through the proxy; returns status, body and the arrival time of each received chunk."""
    stamps: list[float] = []
    data = bytearray()
    async with aiohttp.ClientSession() as s, s.post(url, data=raw if raw is not None else json.dumps(body),
                      headers={"x-goog-api-key": "k", "content-type": "application/json", **(headers or {})},
                      proxy=m.proxy_url, ssl=m.client_ssl()) as r:
        async for chunk in r.content.iter_any():
            stamps.append(time.monotonic())
            data += chunk
        return r.status, bytes(data), stamps


def sse_chunks(data: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in data.decode().split("\r\n") if line.startswith("data: ")]


def user(text: str) -> dict:
    return {"role": "user", "parts": [{"text": text}]}


def test_foreign_request_gets_the_sessions_tools(mitm: MitmStack) -> None:
    run(set_tools(mitm, "inject", [WEATHER]))
    own = {"functionDeclarations": [{"name": "read_file", "parametersJsonSchema": {"type": "object"}}]}
    status, body, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash:generateContent",
                                 {"contents": [user("<session:inject> call get_weather city=Paris")],
                                  "tools": [own], "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}}))
    assert status == 200
    sent = mitm.received[-1]["body"]
    assert sent["tools"] == [{"functionDeclarations": [{"name": "get_weather", "description": "Weather", "parameters": {
        "type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}}]}]
    assert "toolConfig" not in sent, "the app's config named its own tools, which were replaced"
    assert sent["contents"] == [user("call get_weather city=Paris")], "the marker never leaves the proxy"
    call = json.loads(body)["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert call == {"name": "get_weather", "args": {"city": "Paris"}}
    state = run(session_state(mitm, "inject"))
    assert state["rounds"][-1]["calls"][0]["name"] == "get_weather"


def test_session_header_and_merge_mode(tmp_path: Path) -> None:
    m = MitmStack(tmp_path, "--set", "gtp_tools=merge")
    try:
        run(set_tools(m, "hdr", [WEATHER], {"type": "function", "name": "get_weather"}))
        own = {"functionDeclarations": [{"name": "read_file", "parameters": {"type": "OBJECT", "properties": {
            "path": {"type": "STRING"}}}}]}
        status, _, _ = run(gemini(m, f"{GL}/v1beta/models/gemini-2.5-flash:generateContent",
                                  {"contents": [user("hello")], "tools": [own]}, headers={"x-gtp-session": "hdr"}))
        assert status == 200
        rec = m.received[-1]
        names = [d["name"] for t in rec["body"]["tools"] for d in t["functionDeclarations"]]
        assert names == ["read_file", "get_weather"]
        assert rec["body"]["toolConfig"] == {"functionCallingConfig": {"mode": "ANY",
                                                                       "allowedFunctionNames": ["get_weather"]}}
        assert "x-gtp-session" not in {k.lower() for k in rec["headers"]}, "the session header is not forwarded"
    finally:
        m.close()


def test_sse_reaches_the_client_as_it_streams_and_calls_are_captured(mitm: MitmStack) -> None:
    run(set_tools(mitm, "sse", [WEATHER]))
    body = {"contents": [user("<session:sse> [[mock:slow 0.4]] call get_weather city=Rome")],
            "generationConfig": {"thinkingConfig": {"includeThoughts": True}}}
    status, data, stamps = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                                      body, headers={"accept-encoding": "gzip, deflate, br"}))
    assert status == 200
    chunks = sse_chunks(data)
    kinds = [sorted(c["candidates"][0]["content"]["parts"][0]) for c in chunks]
    assert len(kinds) >= 3 and kinds[0] == ["text", "thought"] and kinds[-1] == ["functionCall"]
    assert len(stamps) >= 3, "chunks are forwarded as they come, not as one buffered body"
    assert stamps[-1] - stamps[0] >= 0.4 * (len(kinds) - 1) - 0.1
    assert mitm.received[-1]["headers"].get("Accept-Encoding") == "identity"
    rounds = run(session_state(mitm, "sse"))["rounds"]
    assert rounds[-1]["calls"][0]["arguments"] == '{"city": "Rome"}'


def test_cloud_code_wrapper(mitm: MitmStack) -> None:
    run(set_tools(mitm, "cc", [CLOCK]))
    body = {"model": "gemini-2.5-pro", "project": "p-1", "user_prompt_id": "u1",
            "request": {"contents": [user("<session:cc> call get_clock zone=UTC")], "session_id": "s-9",
                        "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}]}}
    status, data, _ = run(gemini(mitm, f"{CC}/v1internal:streamGenerateContent?alt=sse", body))
    assert status == 200
    [chunk] = sse_chunks(data)
    assert chunk["traceId"] == "mock-trace"
    assert chunk["response"]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "get_clock"
    sent = mitm.received[-1]
    assert sent["model"] == "gemini-2.5-pro" and sent["path"] == "/v1internal:streamGenerateContent?alt=sse"
    assert [d["name"] for d in sent["body"]["tools"][0]["functionDeclarations"]] == ["get_clock"]
    assert sent["body"]["sessionId"] == "s-9", "kept (in proto JSON's camelCase spelling)"
    assert run(session_state(mitm, "cc"))["rounds"][-1]["calls"][0]["name"] == "get_clock"
    # Account set-up calls pass through untouched, byte for byte.
    raw = b'{"metadata": {"ideType": "IDE_UNSPECIFIED", "note": "<session:cc>"}}'
    status, data, _ = run(gemini(mitm, f"{CC}/v1internal:loadCodeAssist", {}, raw=raw))
    assert status == 200 and json.loads(data)["cloudaicompanionProject"] == "mock-project"
    assert mitm.received[-1]["raw"] == raw


def test_one_app_connection_carries_many_requests(mitm: MitmStack) -> None:
    """Keep-alive through the tunnel: each request finds mitmproxy's routed connection again (it used to
    open a new one per request and stall on the sixth)."""
    host, port = mitm.proxy_url.removeprefix("http://").split(":")
    conn = http.client.HTTPSConnection(host, int(port), context=mitm.client_ssl(), timeout=15)
    conn.set_tunnel("generativelanguage.googleapis.com", 443)
    before = mitm.accepted
    try:
        for i in range(12):
            conn.request("POST", "/v1beta/models/gemini-2.5-flash:generateContent",
                         body=json.dumps({"contents": [user(f"hello {i}")]}),
                         headers={"x-goog-api-key": "k", "content-type": "application/json"})
            r = conn.getresponse()
            assert r.status == 200 and json.loads(r.read())["candidates"], i
    finally:
        conn.close()
    assert mitm.accepted - before == 12


def test_vertex_path_is_intercepted(mitm: MitmStack) -> None:
    run(set_tools(mitm, "vx", [WEATHER]))
    url = ("https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/publishers/google/"
           "models/gemini-2.5-flash:generateContent")
    status, data, _ = run(gemini(mitm, url, {"contents": [user("<session:vx> get_weather city=Oslo")]}))
    assert status == 200
    assert mitm.received[-1]["body"]["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"


def test_history_rewrite_with_signatures_across_two_rounds(mitm: MitmStack) -> None:
    model, session = "gemini-3-pro-preview", "rounds"
    run(set_tools(mitm, session, [WEATHER]))
    url = f"{GL}/v1beta/models/{model}:streamGenerateContent?alt=sse"
    first = user(f"<session:{session}> [[mock:rounds 2]] call get_weather city=Kyiv")
    placeholder = {"role": "model", "parts": [{"text": "Tool call completed"}]}
    history = [first]
    for n in range(2):
        status, data, _ = run(gemini(mitm, url, {"contents": history}))
        assert status == 200, data
        assert any("functionCall" in p for c in sse_chunks(data) for p in c["candidates"][0]["content"]["parts"])
        rnd = run(session_state(mitm, session))["rounds"][-1]
        assert run(post_outputs(mitm, session, [{"call_id": rnd["calls"][0]["call_id"], "output": f"cold {n}"}])) == 200
        # The relay-style app only saw the placeholder; its history grows by placeholder + a dummy user turn.
        history = history + [placeholder, user(".")]
    status, data, _ = run(gemini(mitm, url, {"contents": history}))
    assert status == 200
    text = "".join(p.get("text", "") for c in sse_chunks(data) for p in c["candidates"][0]["content"]["parts"])
    assert text == 'Tool results: get_weather returned {"output": "cold 1"}'
    sent = mitm.received[-1]["body"]["contents"]
    assert [c["role"] for c in sent] == ["user", "model", "user", "model", "user"]
    for turn, answer in ((sent[1], sent[2]), (sent[3], sent[4])):
        part = turn["parts"][0]
        assert part["thoughtSignature"] == sign(model, "get_weather", part["functionCall"]["args"])
        assert answer["parts"][0]["functionResponse"]["id"] == part["functionCall"]["id"]
    # The journal says where each call's signature came from: the MITM capture.
    row = run(journal(mitm, f"/inspect/api/exchanges?kind=mitm&session={session}"))["exchanges"][0]
    decisions = run(journal(mitm, f"/inspect/api/exchanges/{row['id']}"))["decisions"]
    restored = [n for n in decisions if n["kind"] == "signature"]
    assert [(n["source"], n["signed"]) for n in restored] == [("capture", True), ("capture", True)]
    assert [n["at"] for n in decisions if n["kind"] == "history" and "placeholder" in n["message"]] == [1, 3]


def test_placeholder_without_captured_calls_is_refused(mitm: MitmStack) -> None:
    before = len(mitm.received)
    history = [user("<session:empty> hi"), {"role": "model", "parts": [{"text": "Tool call completed"}]}, user(".")]
    status, data, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash:generateContent",
                                 {"contents": history}))
    assert status == 400
    assert "no captured functionCall history was available for replay" in json.loads(data)["error"]["message"]
    assert len(mitm.received) == before, "nothing malformed reached Gemini"
    # The journal has the refused request, why, and no upstream call (before, refusals went unrecorded).
    [row] = run(journal(mitm, "/inspect/api/exchanges?kind=mitm&session=empty"))["exchanges"]
    assert row["status"] == 400 and "no captured functionCall history" in row["error"] and row["attempts"] == 0
    doc = run(journal(mitm, f"/inspect/api/exchanges/{row['id']}"))
    assert doc["upstream"] == [] and "no captured" in doc["client_answer"]["body"]["error"]["message"]
    assert any(n["kind"] == "error" for n in doc["decisions"])


def test_repairs_for_foreign_traffic_without_a_session(mitm: MitmStack) -> None:
    tools = [{"functionDeclarations": [{"name": "lookup", "parameters": {
        "type": "object", "additionalProperties": False, "properties": {"q": {"type": ["string", "null"]}}}}]}]
    contents = [user("lookup something"),
                {"role": "model", "parts": [{"functionCall": {"name": "lookup", "args": {"q": "x"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "lookup", "response": {"output": 1}}}]}]
    status, data, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-3-flash-preview:generateContent",
                                 {"contents": contents, "tools": tools}))
    assert status == 200, data
    sent = mitm.received[-1]["body"]
    assert sent["tools"][0]["functionDeclarations"][0]["parameters"] == {
        "type": "OBJECT", "properties": {"q": {"type": "STRING", "nullable": True}}}
    assert sent["contents"][1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert sent["contents"][1]["parts"][0]["functionCall"]["args"] == {"q": "x"}, "arguments are data: untouched"


def test_unrelated_traffic_passes_byte_for_byte(mitm: MitmStack) -> None:
    payload = b'{"contents": [{"role": "user", "parts": [{"text": "<session:inject> keep me"}]}], "x":\xff}'
    status, data, _ = run(gemini(mitm, f"{GL}/echo/some/path?key=1", {}, raw=payload))
    assert status == 200 and data == payload
    # A generate call on a host that is not intercepted is not touched either (the test routes every
    # host to the mock, so it answers; the marker and the session header arrive as sent).
    body = {"contents": [user("<session:inject> call get_weather city=X")]}
    status, data, _ = run(gemini(mitm, "https://www.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
                                 body, headers={"x-gtp-session": "inject"}))
    assert status == 200
    assert mitm.received[-1]["body"] == body and mitm.received[-1]["headers"]["x-gtp-session"] == "inject"


def test_two_sessions_at_once_do_not_leak(mitm: MitmStack) -> None:
    run(set_tools(mitm, "alpha", [WEATHER]))
    run(set_tools(mitm, "beta", [CLOCK]))
    url = f"{GL}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"

    async def both():
        return await asyncio.gather(
            gemini(mitm, url, {"contents": [user("<session:alpha> A [[mock:slow 0.2]] get_weather get_clock x=1")]}),
            gemini(mitm, url, {"contents": [user("<session:beta> B [[mock:slow 0.2]] get_weather get_clock x=1")]}))

    results = run(both())
    assert all(status == 200 for status, _, _ in results)
    tools_by_prompt = {r["body"]["contents"][0]["parts"][0]["text"][0]:
                       [d["name"] for d in r["body"]["tools"][0]["functionDeclarations"]] for r in mitm.received[-2:]}
    assert tools_by_prompt == {"A": ["get_weather"], "B": ["get_clock"]}
    alpha = run(session_state(mitm, "alpha"))["rounds"][-1]["calls"]
    beta = run(session_state(mitm, "beta"))["rounds"][-1]["calls"]
    assert [c["name"] for c in alpha] == ["get_weather"] and [c["name"] for c in beta] == ["get_clock"]


def test_unknown_call_id_for_outputs_is_rejected(mitm: MitmStack) -> None:
    assert run(post_outputs(mitm, "inject", [{"call_id": "nope", "output": "x"}])) == 400


def test_outputs_without_call_ids_pair_by_position(mitm: MitmStack) -> None:
    run(set_tools(mitm, "pos", [WEATHER, CLOCK]))
    status, _, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash:generateContent",
                              {"contents": [user("<session:pos> get_clock get_weather zone=UTC city=Rome")]}))
    assert status == 200
    assert run(post_outputs(mitm, "pos", [{"output": "noon"}, {"output": "warm"}])) == 200
    outputs = run(session_state(mitm, "pos"))["rounds"][-1]["outputs"]
    calls = run(session_state(mitm, "pos"))["rounds"][-1]["calls"]
    assert [outputs[c["call_id"]]["output"] for c in calls] == ["noon", "warm"]
    assert run(post_outputs(mitm, "pos", [{"output": "one too many"}])) == 400


def test_spoofed_host_header_is_not_intercepted(mitm: MitmStack) -> None:
    """Issue 8 item 3: a request that really goes to another host but claims Google's in its Host
    header passes through untouched: no session tools, the marker stays, nothing captured."""
    from tests.mitm_harness import FOREIGN_HOST

    run(set_tools(mitm, "spoof", [WEATHER]))
    own = {"functionDeclarations": [{"name": "read_file", "parametersJsonSchema": {"type": "object"}}]}
    body = {"contents": [user("<session:spoof> call get_weather city=Paris")], "tools": [own]}
    before = mitm.accepted
    status, _, _ = run(gemini(mitm, f"https://{FOREIGN_HOST}/v1beta/models/gemini-2.5-flash:generateContent", body,
                              headers={"Host": "generativelanguage.googleapis.com", "x-gtp-session": "spoof"}))
    assert status == 200 and mitm.accepted == before + 1
    rec = mitm.received[-1]
    assert rec["body"] == body, "the request went elsewhere than its Host header says: not ours to touch"
    assert rec["headers"].get("x-gtp-session") == "spoof"
    assert run(session_state(mitm, "spoof")).get("rounds") == []
    # The same request to the host it names is intercepted as before.
    status, _, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash:generateContent", body))
    assert status == 200 and mitm.received[-1]["body"]["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"


def _afc_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize(("model", "stream"), [("gemini-2.5-flash", True), ("gemini-3-flash-preview", False),
                                               ("gemini-3-flash-preview", True)])
def test_google_genai_afc_history_repaired(mitm: MitmStack, model: str, stream: bool) -> None:
    """google-genai's automatic function calling, unmodified, through the real mitmdump: its chunk turns
    are merged and its id-less function responses get their calls' ids (issue 9, item 5)."""
    from google import genai
    from google.genai import types
    client = genai.Client(api_key="k", http_options=types.HttpOptions(
        client_args={"proxy": mitm.proxy_url, "verify": mitm.client_ssl()}))
    config = types.GenerateContentConfig(tools=[_afc_weather], thinking_config=types.ThinkingConfig(
        include_thoughts=True))
    text = f"[[mock:rounds 2]] call _afc_weather city=Quito {model} {stream}"
    if stream:
        answer = "".join(c.text or "" for c in client.models.generate_content_stream(model=model, contents=text,
                                                                                      config=config))
    else:
        answer = client.models.generate_content(model=model, contents=text, config=config).text
    assert "sunny in Quito" in answer
    sent = mitm.received[-1]["body"]["contents"]
    assert [c["role"] for c in sent] == ["user", "model", "user", "model", "user"]
    calls = [p["functionCall"] for c in sent for p in c["parts"] if "functionCall" in p]
    answers = [p["functionResponse"] for c in sent for p in c["parts"] if "functionResponse" in p]
    assert [a.get("id") for a in answers] == [c.get("id") for c in calls]


@pytest.mark.parametrize("stream", [False, True])
def test_google_genai_continues_a_long_answer_through_the_interceptor(mitm: MitmStack, stream: bool) -> None:
    """google-genai 3.6 continues an answer Gemini stopped at its decode limit (finishReason CONTINUATION)
    by sending the request again with the token: through the real mitmdump every hop is rewritten alike
    (the session's tools, its marker gone), so the token continues the request it was issued for and
    the app gets the whole answer (the interceptor leaves continuing to the app: test_long_answers.py)."""
    from google import genai
    from google.genai import types
    run(set_tools(mitm, "inject", [WEATHER]))
    client = genai.Client(api_key="k", http_options=types.HttpOptions(
        client_args={"proxy": mitm.proxy_url, "verify": mitm.client_ssl()}))
    text, model = "<session:inject> [[mock:hops 3]] tell me about Lima", "gemini-3-flash-preview"
    if stream:
        answer = "".join(c.text or "" for c in client.models.generate_content_stream(model=model, contents=text))
    else:
        answer = client.models.generate_content(model=model, contents=text).text
    assert answer == f"Mock Gemini ({model}) heard: tell me about Lima"
    sent = [r["body"] for r in mitm.received[-3:]]
    assert ["continuationToken" in s for s in sent] == [False, True, True]
    assert all(s["contents"] == [user("[[mock:hops 3]] tell me about Lima")] for s in sent)
    assert all(s["tools"] == sent[0]["tools"] for s in sent) and sent[0]["tools"][0]["functionDeclarations"][0][
        "name"] == "get_weather"


async def journal(mitm: MitmStack, path: str) -> dict:
    async with aiohttp.ClientSession() as s, s.get(mitm.frontend_url + path) as r:
        assert r.status == 200, await r.text()
        return await r.json()


def test_intercepted_flows_are_in_the_journal(mitm: MitmStack) -> None:
    """An app's request as it sent it, as it went to Gemini with the session's tools, Gemini's answer,
    and the capture, on the front-end's /inspect API; the app's Gemini key nowhere in it."""
    app_key = "AIzaSyJournalCanary0123456789abcdefghij"
    run(set_tools(mitm, "journal", [WEATHER]))
    own = {"functionDeclarations": [{"name": "app_tool", "parameters": {"type": "OBJECT", "properties": {}}}]}
    status, _, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash:generateContent",
                              {"contents": [user("call get_weather city=Rome")], "tools": [own]},
                              headers={"x-gtp-session": "journal", "x-goog-api-key": app_key}))
    assert status == 200

    async def read(path: str) -> bytes:
        async with aiohttp.ClientSession() as s, s.get(mitm.frontend_url + path) as r:
            assert r.status == 200, await r.text()
            return await r.read()

    rows = json.loads(run(read("/inspect/api/exchanges?kind=mitm&session=journal")))["exchanges"]
    assert rows and rows[0]["kind"] == "mitm" and rows[0]["calls"][0]["name"] == "get_weather"
    assert rows[0]["tools"] == ["get_weather"] and rows[0]["finish_reasons"]  # read from the kept bodies
    raw = run(read(f"/inspect/api/exchanges/{rows[0]['id']}"))
    assert app_key.encode() not in raw
    doc = json.loads(raw)
    assert doc["client_request"]["body"]["tools"] == [own]  # as the app sent it
    sent = doc["upstream"][0]["request"]["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in sent] == ["get_weather"]  # as Gemini got it: the session's tools
    assert doc["client_request"]["headers"]["x-goog-api-key"] == "[redacted]"
    kinds = [n["kind"] for n in doc["decisions"]]
    assert "rewrite" in kinds and "capture" in kinds


def test_an_intercepted_flows_repairs_are_its_decisions(mitm: MitmStack) -> None:
    """What the rewrite decides for an intercepted flow is noted on its exchange, as for the front-end's:
    the chunk turns merged, the unsigned call sent with the sentinel. Before, these notes went nowhere
    (no exchange was current while the rewrite ran)."""
    run(set_tools(mitm, "journal-notes", [WEATHER]))
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}}
    contents = [user("call get_weather city=Rome"), {"role": "model", "parts": [{"text": "Let me look."}]},
                {"role": "model", "parts": [call]},  # one turn, streamed as two (google-genai's AFC history)
                {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"t": "18C"}}}]}]
    status, _, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-3-flash-preview:generateContent",
                              {"contents": contents}, headers={"x-gtp-session": "journal-notes"}))
    assert status == 200
    sent = mitm.received[-1]["body"]["contents"]
    assert [c["role"] for c in sent] == ["user", "model", "user"]

    [row] = run(journal(mitm, "/inspect/api/exchanges?kind=mitm&session=journal-notes"))["exchanges"]
    assert row["error"] is None
    doc = run(journal(mitm, f"/inspect/api/exchanges/{row['id']}"))
    notes = {n["kind"]: n["message"] for n in doc["decisions"]}
    assert "4 turns became 3" in notes["history"] and "sentinel" in notes["signature"]
    assert "rewrite" in notes

    # Without a session the app's own tools go to Gemini, their schemas repaired: each repair noted.
    own = {"functionDeclarations": [{"name": "app_tool", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 0}},
        "additionalProperties": False}}]}
    status, _, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash:generateContent",
                              {"contents": [user("hello")], "tools": [own]}))
    assert status == 200
    assert "\"exclusiveMinimum\"" not in json.dumps(mitm.received[-1]["body"]["tools"])  # (as a keyword)
    row = run(journal(mitm, "/inspect/api/exchanges?kind=mitm"))["exchanges"][0]
    doc = run(journal(mitm, f"/inspect/api/exchanges/{row['id']}"))
    repairs = {(n["tool"], n["keyword"], n["path"]) for n in doc["decisions"] if n["kind"] == "schema"}
    assert repairs == {("app_tool", "exclusiveMinimum", "/properties/n"), ("app_tool", "additionalProperties", "/")}

    # Gemini's own refusal, passed to the app as it came: the list says why.
    status, _, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash:generateContent",
                              {"contents": [user("[[mock:error 400]] hello")]}))
    assert status == 400
    row = run(journal(mitm, "/inspect/api/exchanges?kind=mitm"))["exchanges"][0]
    assert row["status"] == 400 and row["error"] and row["attempts"] == 1


def test_an_intercepted_stream_is_in_the_journal_as_it_streamed(mitm: MitmStack) -> None:
    run(set_tools(mitm, "journal-sse", [WEATHER]))
    status, body, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                                 {"contents": [user("call get_weather city=Oslo")]},
                                 headers={"x-gtp-session": "journal-sse"}))
    assert status == 200 and b"get_weather" in body

    async def read(path: str) -> dict:
        async with aiohttp.ClientSession() as s, s.get(mitm.frontend_url + path) as r:
            return await r.json()

    [row] = run(read("/inspect/api/exchanges?kind=mitm&session=journal-sse"))["exchanges"]
    assert row["stream"] and row["calls"][0]["name"] == "get_weather" and row["finish_reasons"]
    doc = run(read(f"/inspect/api/exchanges/{row['id']}"))
    assert "get_weather" in doc["client_answer"]["body"] and doc["upstream"][0]["chunks"]
    assert doc["upstream"][0]["answer"]["candidates"][0]["content"]["parts"]  # the stream assembled
