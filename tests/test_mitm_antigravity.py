"""Antigravity's wire through a real mitmdump with the addon (issue 58): the Cloud Code envelope as
Antigravity's clients send it (`userAgent: "antigravity"`, `requestType`, `requestId`, `sessionId`) on
its hosts (daily-cloudcode-pa, the sandbox ones), a session's tools injected and its calls captured,
Claude's rule (an id on every functionCall / functionResponse the proxy writes back) also after a
switch from a Gemini model, the account's quota read into /metrics, /inspect and the journal, and
Google's refusals passed to the app as sent.

The envelope and answers follow the emulators' code and users' captures, recorded in
tests/recorded/antigravity/ with their provenance (SOURCES.md there); no public recording of a whole
Antigravity request exists, which those files say.
"""

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest

from proxy.mock import antigravity
from tests.mitm_harness import MitmStack
from tests.test_mitm_e2e import WEATHER, gemini, journal, post_outputs, run, session_state, set_tools, sse_chunks, user

RECORDED = Path(__file__).parent / "recorded" / "antigravity"
HOSTS = ("https://daily-cloudcode-pa.googleapis.com", "https://daily-cloudcode-pa.sandbox.googleapis.com",
         "https://cloudcode-pa.googleapis.com", "https://autopush-cloudcode-pa.sandbox.googleapis.com")
STREAM = "/v1internal:streamGenerateContent?alt=sse"
PLACEHOLDER = {"role": "model", "parts": [{"text": "Tool call completed"}]}
PROJECT = "cogent-snow-4mnnp"


def recorded(name: str) -> dict:
    data = json.loads((RECORDED / name).read_text())
    data.pop("_provenance", None)
    return data


def envelope(model: str, contents: list, **request) -> dict:
    """As CLIProxyAPI's executor sends it on its AI-credits retry (enabledCreditTypes; tests/recorded/antigravity)."""
    return {"model": model, "project": PROJECT, "requestId": "agent-9f0c2d55-7a0e-4f5e-8d0b-2b8f3d1c6a77",
            "userAgent": "antigravity", "requestType": "agent", "enabledCreditTypes": ["GOOGLE_ONE_AI"],
            "request": {"contents": contents, "sessionId": "-3748236193375843210", **request}}


BEARER = {"authorization": "Bearer ya29.dummy-antigravity-token", "user-agent": "antigravity/hub/2.9.1 darwin/arm64"}


@pytest.fixture(scope="module")
def mitm(tmp_path_factory: pytest.TempPathFactory):
    stack = MitmStack(tmp_path_factory.mktemp("antigravity"))
    yield stack
    stack.close()


def calls_of(data: bytes) -> list[dict]:
    return [p["functionCall"] for c in sse_chunks(data) for p in c["response"]["candidates"][0]["content"]["parts"]
            if "functionCall" in p]


def text_of(data: bytes) -> str:
    return "".join(p.get("text", "") for c in sse_chunks(data) for p in c["response"]["candidates"][0]["content"][
        "parts"])


def _round(mitm: MitmStack, host: str, session: str, model: str, history: list, output: str) -> list:
    """One tool round: the app's request, the call captured, the client's output; the app's history grows
    by the placeholder and its 'go on' turn, as a relay-style app's does."""
    status, data, _ = run(gemini(mitm, host + STREAM, envelope(model, history), headers=BEARER))
    assert status == 200, data
    assert [c["name"] for c in calls_of(data)] == ["get_weather"], data
    rnd = run(session_state(mitm, session))["rounds"][-1]
    assert run(post_outputs(mitm, session, [{"call_id": rnd["calls"][0]["call_id"], "output": output}])) == 200
    return history + [PLACEHOLDER, user(".")]


@pytest.mark.parametrize("host", HOSTS)
def test_a_tool_loop_on_antigravity_s_wire_keeps_its_envelope(mitm: MitmStack, host: str) -> None:
    session = "ag-" + host.split("//")[1].split(".")[0]
    run(set_tools(mitm, session, [WEATHER]))
    history = _round(mitm, host, session, "gemini-3-flash",
                     [user(f"<session:{session}> call get_weather city=Paris")], "sunny")
    sent = mitm.received[-1]
    assert [d["name"] for d in sent["body"]["tools"][0]["functionDeclarations"]] == ["get_weather"]
    status, data, _ = run(gemini(mitm, host + STREAM, envelope("gemini-3-flash", history), headers=BEARER))
    assert status == 200 and text_of(data) == 'Tool results: get_weather returned {"output": "sunny"}', data
    sent = mitm.received[-1]
    assert sent["envelope"] == {k: v for k, v in envelope("gemini-3-flash", []).items() if k != "request"}
    assert sent["body"]["sessionId"] == "-3748236193375843210"


def test_claude_s_round_is_written_back_with_ids(mitm: MitmStack) -> None:
    """Claude's answers on this wire carry no functionCall ids, and Claude refuses a functionCall or a
    functionResponse without one: the round the proxy writes back has the call's id on both."""
    session, model = "ag-claude", "claude-sonnet-4-6"
    run(set_tools(mitm, session, [WEATHER]))
    history = _round(mitm, HOSTS[0], session, model, [user(f"<session:{session}> call get_weather city=Oslo")], "cold")
    status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, envelope(model, history), headers=BEARER))
    assert status == 200, data
    assert text_of(data) == 'Tool results: get_weather returned {"output": "cold"}'
    contents = mitm.received[-1]["body"]["contents"]
    call, response = contents[1]["parts"][0]["functionCall"], contents[2]["parts"][0]["functionResponse"]
    assert call["id"] and call["id"] == response["id"], contents


def test_a_switch_from_gemini_to_claude_writes_the_ids_too(mitm: MitmStack) -> None:
    session = "ag-switch"
    run(set_tools(mitm, session, [WEATHER]))
    history = _round(mitm, HOSTS[0], session, "gemini-2.5-flash",  # a model that gives calls no id
                     [user(f"<session:{session}> call get_weather city=Rome")], "warm")
    assert "id" not in mitm.received[-1]["body"]["contents"][0]["parts"][0], "the first request had no call yet"
    status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, envelope("claude-opus-4-6-thinking", history),
                                 headers=BEARER))
    assert status == 200, data
    contents = mitm.received[-1]["body"]["contents"]
    assert contents[1]["parts"][0]["functionCall"]["id"] == contents[2]["parts"][0]["functionResponse"]["id"]


def test_the_app_s_own_id_less_round_gets_ids_for_claude(mitm: MitmStack) -> None:
    """An app's own history with a call and its result but no ids (as an app keeps a Claude answer
    that had none): the ids are given, the result paired with its call."""
    history = [user("hi"), {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}}]},
               {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"x": 1}}}]}]
    status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, envelope("claude-sonnet-4-6", history), headers=BEARER))
    assert status == 200, data
    sent = mitm.received[-1]["body"]["contents"]
    assert sent[1]["parts"][0]["functionCall"]["id"] == sent[2]["parts"][0]["functionResponse"]["id"]


def test_claude_s_refusals_reach_the_app_as_google_sends_them(mitm: MitmStack) -> None:
    """A result that names another call than the one before it: Claude's error, Anthropic's JSON in a
    Gemini 400, reaches the app unchanged (the mock's words follow users' reports: tests/recorded/antigravity)."""
    history = [user("hi"), {"role": "model", "parts": [{"functionCall": {"id": "toolu_1", "name": "get_weather",
                                                                         "args": {}}}]},
               {"role": "user", "parts": [{"functionResponse": {"id": "toolu_2", "name": "get_weather",
                                                                "response": {"x": 1}}}]}]
    status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, envelope("claude-sonnet-4-6", history), headers=BEARER))
    assert status == 400, data
    error = json.loads(data)["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    refusal = json.loads(error["message"])
    assert refusal["type"] == "error" and "`tool_use` ids were found without `tool_result`" in refusal["error"][
        "message"]


def test_google_s_account_refusals_reach_the_app(mitm: MitmStack) -> None:
    body = envelope("gemini-3-flash", [user("hi")])
    # (the mock takes a credential named exhausted-* as spent; the test helper sends it as x-goog-api-key)
    status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, body, headers={**BEARER, "x-goog-api-key": "exhausted-1"}))
    assert status == 429, data
    error = json.loads(data)["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED"
    info = next(d for d in error["details"] if d["@type"].endswith("ErrorInfo"))
    assert info["metadata"]["quotaResetTimeStamp"] and info["reason"] == "QUOTA_EXHAUSTED"
    status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, envelope("gemini-9-ultra", [user("hi")]), headers=BEARER))
    assert status == 403 and json.loads(data)["error"]["status"] == "PERMISSION_DENIED", data
    status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, {**body, "clientName": "x"}, headers=BEARER))
    assert status == 400 and 'Unknown name "clientName"' in json.loads(data)["error"]["message"], data


def _upper_types(schema):
    if isinstance(schema, dict):
        return {k: (v.upper() if k == "type" and isinstance(v, str) else _upper_types(v)) for k, v in schema.items()}
    return [_upper_types(v) for v in schema] if isinstance(schema, list) else schema


def test_a_recorded_request_passes_byte_for_byte_outside_what_the_proxy_changes(mitm: MitmStack) -> None:
    """The request emulators send (rebuilt from their code: tests/recorded/antigravity). With no session
    the proxy's only change is the schema repair every app gets (OpenAPI types in upper case): a body
    that needs none reaches Google as the app's bytes; with a session only the tools change."""
    body = recorded("stream-request-gemini-tools.json")["body"]
    status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, body, headers=BEARER))
    assert status == 200, data
    sent = mitm.received[-1]
    assert sent["envelope"] == {k: v for k, v in body.items() if k != "request"}
    assert sent["body"] == {**body["request"], "tools": _upper_types(body["request"]["tools"])}
    clean = {**body, "request": {**body["request"], "tools": _upper_types(body["request"]["tools"])}}
    raw = json.dumps(clean).encode()
    status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, {}, headers=BEARER, raw=raw))
    assert status == 200, data
    assert mitm.received[-1]["raw"] == raw, "nothing to change: the app's bytes"
    run(set_tools(mitm, "ag-recorded", [WEATHER]))
    status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, {}, raw=raw, headers={**BEARER,
                                                                                "x-gtp-session": "ag-recorded"}))
    assert status == 200, data
    sent = mitm.received[-1]
    assert sent["envelope"] == {k: v for k, v in body.items() if k != "request"}
    changed = {"tools", "toolConfig"}
    assert {k: v for k, v in sent["body"].items() if k not in changed} == {
        k: v for k, v in body["request"].items() if k not in changed}
    assert [d["name"] for d in sent["body"]["tools"][0]["functionDeclarations"]] == ["get_weather"]


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        return r.status, await r.text()


def test_the_recorded_quota_buckets_appear_in_metrics_inspect_and_the_journal(mitm: MitmStack) -> None:
    summary, models = recorded("retrieveUserQuotaSummary-answer.json"), recorded("fetchAvailableModels-answer.json")
    real = dict(antigravity.ACCOUNT_ANSWERS)
    antigravity.ACCOUNT_ANSWERS.update(retrieveUserQuotaSummary=lambda: summary, fetchAvailableModels=lambda: models)
    try:
        raw = json.dumps({"project": PROJECT}).encode()
        status, data, _ = run(gemini(mitm, HOSTS[0] + "/v1internal:retrieveUserQuotaSummary", {}, raw=raw,
                                     headers=BEARER))
        assert status == 200 and json.loads(data) == summary, "passed untouched"
        assert mitm.received[-1]["raw"] == raw
        status, data, _ = run(gemini(mitm, HOSTS[2] + "/v1internal:fetchAvailableModels", {}, raw=raw,
                                     headers=BEARER))
        assert status == 200 and json.loads(data) == models
    finally:
        antigravity.ACCOUNT_ANSWERS.clear()
        antigravity.ACCOUNT_ANSWERS.update(real)
    _, metrics = run(_get(f"{mitm.frontend_url}/metrics"))
    for bucket, value in (("gemini-5h", 0.8160709), ("gemini-weekly", 0.7836881), ("3p-5h", 1.0),
                          ("3p-weekly", 1.0), ("model:gemini-3-flash", 0.96553755)):
        line = f'gtp_quota_remaining_ratio{{account="{PROJECT}",bucket="{bucket}"}} {value}'
        assert line in metrics, (line, [m for m in metrics.splitlines() if "quota" in m])
    assert f'gtp_quota_reset_timestamp_seconds{{account="{PROJECT}",bucket="gemini-5h"}} 1.789435885e+09' in metrics, \
        "2026-09-15T01:31:25Z"
    status, text = run(_get(f"{mitm.frontend_url}/inspect/api/quota"))
    assert status == 200
    shown = {b["bucket"]: b for b in json.loads(text)["buckets"] if b["account"] == PROJECT}
    assert shown["3p-weekly"]["reset"] == "2026-09-21T23:59:01Z" and shown["gemini-5h"]["group"] == "Gemini Models"
    rows = run(journal(mitm, "/inspect/api/exchanges?kind=mitm"))["exchanges"]
    row = next(r for r in rows if r["path"].endswith("retrieveUserQuotaSummary"))
    decisions = run(journal(mitm, f"/inspect/api/exchanges/{row['id']}"))["decisions"]
    [note] = [d for d in decisions if d["kind"] == "quota"]
    assert "gemini-5h 82%" in note["message"] and "3p-weekly 100%" in note["message"], note


def test_quota_is_not_shown_to_client_keys(tmp_path: Path) -> None:
    """Under client keys the intercepted account's quota is no key's: /inspect/api/quota refuses, and
    /metrics (which every key may read) has none of its buckets."""
    stack = MitmStack(tmp_path, "--set", "gtp_api_key=tenant-key-0123456789abcdef")
    try:
        status, data, _ = run(gemini(stack, HOSTS[0] + "/v1internal:retrieveUserQuotaSummary", {},
                                     raw=json.dumps({"project": "keyed-project"}).encode(), headers=BEARER))
        assert status == 200 and json.loads(data)["groups"], data
        status, text = asyncio.run(_authorized(f"{stack.frontend_url}/inspect/api/quota"))
        assert status == 403 and "quota" in text, text
        status, metrics = asyncio.run(_authorized(f"{stack.frontend_url}/metrics"))
        assert status == 200 and "keyed-project" not in metrics, [m for m in metrics.splitlines() if "quota" in m]
    finally:
        stack.close()


async def _authorized(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(
            url, headers={"authorization": "Bearer tenant-key-0123456789abcdef"}) as r:
        return r.status, await r.text()


def test_the_proxy_s_own_refusal_for_claude_is_in_claude_s_shape(mitm: MitmStack) -> None:
    """A placeholder with no captured round is refused before Google is asked; for a Claude model the
    refusal is what the app gets from Claude on this wire: Anthropic's JSON in a Gemini 400."""
    before = mitm.accepted
    history = [user("<session:ag-none> hi"), PLACEHOLDER, user(".")]
    for model, claude in (("claude-sonnet-4-6", True), ("gemini-3-flash", False)):
        status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, envelope(model, history), headers=BEARER))
        assert status == 400, data
        error = json.loads(data)["error"]
        if claude:
            assert error["status"] == "INVALID_ARGUMENT"
            inner = json.loads(error["message"])
            assert inner["type"] == "error" and inner["error"]["type"] == "invalid_request_error"
            assert "no captured functionCall history" in inner["error"]["message"]
        else:
            assert error["status"] == "FAILED_PRECONDITION" and "no captured functionCall" in error["message"]
    assert mitm.accepted == before, "nothing reached Google"


STRICT = {"type": "function", "name": "find_files", "description": "Find files", "parameters": {
    "type": "object", "properties": {"pattern": {"type": "string", "minLength": 1, "pattern": "^[^/]",
                                                 "description": "a glob"},
                                     "format": {"type": "string", "enum": ["short", "long"], "default": "short"},
                                     "limit": {"type": "integer", "minimum": 1, "maximum": 50}},
    "required": ["pattern"]}}


def test_claude_gets_tool_schemas_in_the_subset_it_takes(mitm: MitmStack) -> None:
    """In VALIDATED mode (the emulators' mode for Claude) Claude refuses string patterns and lengths,
    formats and defaults in a schema (CLIProxyAPI's cleaner): the session's tools reach a Claude model
    without them, its properties (one named `pattern`, one `format`) and other bounds kept; a Gemini
    model gets them whole."""
    run(set_tools(mitm, "ag-strict", [STRICT]))
    validated = {"functionCallingConfig": {"mode": "VALIDATED"}}
    for model, claude in (("claude-sonnet-4-6", True), ("gemini-3-flash", False)):
        body = envelope(model, [user("<session:ag-strict> call find_files pattern=*.py")], toolConfig=validated)
        status, data, _ = run(gemini(mitm, HOSTS[0] + STREAM, body, headers={**BEARER, "x-gtp-session": "ag-strict"}))
        assert status == 200, data
        params = mitm.received[-1]["body"]["tools"][0]["functionDeclarations"][0]["parameters"]
        props = params["properties"]
        assert set(props) == {"pattern", "format", "limit"} and props["limit"]["maximum"] == 50
        assert props["format"]["enum"] == ["short", "long"]
        if claude:
            assert "minLength" not in props["pattern"] and "pattern" not in props["pattern"]
            assert "default" not in props["format"]
        else:
            assert props["pattern"]["minLength"] == 1 and props["pattern"]["pattern"] == "^[^/]"


def test_a_whole_answer_on_antigravity_s_wire_is_captured_too(mitm: MitmStack) -> None:
    """`:generateContent` (whole, `{response, traceId}`), as the emulators send it for a non-streamed turn."""
    session = "ag-whole"
    run(set_tools(mitm, session, [WEATHER]))
    body = envelope("claude-sonnet-4-6", [user(f"<session:{session}> call get_weather city=Nice")])
    status, data, _ = run(gemini(mitm, HOSTS[0] + "/v1internal:generateContent", body, headers=BEARER))
    assert status == 200, data
    answer = json.loads(data)
    assert answer["traceId"] and answer["response"]["candidates"][0]["content"]["parts"][0]["functionCall"][
        "name"] == "get_weather"
    assert run(session_state(mitm, session))["rounds"][-1]["calls"][0]["name"] == "get_weather"
