"""Prompt mode through a real mitmdump with the addon: an app's Gemma 4 request gets the session's
tools rendered into its prompt (Gemini refuses them as tools), the answer — JSON and SSE, rewritten
as it streams — reaches the app with ordinary functionCall parts that the session captures, and
the next turn's calls and results go back as the model's own text."""

import json
from pathlib import Path

import pytest

from tests.mitm_harness import MitmStack
from tests.test_mitm_e2e import GL, WEATHER, gemini, journal, run, session_state, set_tools, sse_chunks, user


@pytest.fixture(scope="module")
def mitm(tmp_path_factory: pytest.TempPathFactory):
    stack = MitmStack(tmp_path_factory.mktemp("mitm-text"), "--set", "gtp_tool_mode=gemma-2*=hermes",
                      "--set", "gtp_rescue_text_calls=gemini-2.5-flash-lite=hermes")
    yield stack
    stack.close()


def _calls(chunks: list[dict]) -> list[dict]:
    return [p["functionCall"] for c in chunks for cand in c.get("candidates") or []
            for p in (cand.get("content") or {}).get("parts") or [] if "functionCall" in p]


@pytest.mark.parametrize("stream", [False, True])
def test_gemma4_tool_loop_through_the_addon(mitm: MitmStack, stream: bool) -> None:
    session = f"gemma-{stream}"
    run(set_tools(mitm, session, [WEATHER]))
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    url = f"{GL}/v1beta/models/gemma-4-31b-it:{method}"
    first = {"contents": [user(f"<session:{session}> call get_weather city=Paris")],
             "systemInstruction": {"parts": [{"text": "Be brief."}]}}
    status, data, _ = run(gemini(mitm, url, first))
    assert status == 200, data
    chunks = sse_chunks(data) if stream else [json.loads(data)]
    assert _calls(chunks) == [{"name": "get_weather", "args": {"city": "Paris"}}]
    sent = mitm.received[-1]["body"]
    assert "tools" not in sent
    assert sent["systemInstruction"]["parts"][0]["text"].startswith("Be brief.\n\n<|tool>declaration:get_weather")
    rounds = run(session_state(mitm, session))["rounds"]
    assert rounds[-1]["calls"][0]["name"] == "get_weather"
    # The journal notes the call parsed, with the text it came from (as it streamed, or whole).
    [row] = run(journal(mitm, f"/inspect/api/exchanges?kind=mitm&session={session}"))["exchanges"]
    doc = run(journal(mitm, f"/inspect/api/exchanges/{row['id']}"))
    [parsed] = [n for n in doc["decisions"] if n["kind"] == "dialect"]
    assert parsed["calls"] == ["get_weather"] and "<|tool_call>call:get_weather" in parsed["text"]

    history = [user(f"<session:{session}> call get_weather city=Paris"),
               {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
               {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp": 21}}}]}]
    status, data, _ = run(gemini(mitm, url, {"contents": history}))
    assert status == 200
    chunks = sse_chunks(data) if stream else [json.loads(data)]
    text = "".join(p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"])
    assert text.startswith("Tool results: get_weather returned")
    sent = json.dumps(mitm.received[-1]["body"]["contents"])
    assert "<|tool_call>call:get_weather{city:<|\\\"|>Paris<|\\\"|>}<tool_call|>" in sent
    assert "<|tool_response>response:get_weather{temp:21}<tool_response|>" in sent


def test_a_configured_dialect_and_a_rescued_native_model(mitm: MitmStack) -> None:
    tools = [{"functionDeclarations": [{"name": "get_weather", "parameters": {
        "type": "OBJECT", "properties": {"city": {"type": "STRING"}}}}]}]
    status, data, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemma-2-9b-it:streamGenerateContent?alt=sse",
                                 {"contents": [user("get_weather city=Oslo")], "tools": tools}))
    assert status == 200 and _calls(sse_chunks(data)) == [{"name": "get_weather", "args": {"city": "Oslo"}}]
    assert "<tools>" in mitm.received[-1]["body"]["systemInstruction"]["parts"][0]["text"]
    status, data, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash-lite:generateContent",
                                 {"contents": [user("[[mock:text_call hermes]] get_weather city=Oslo")],
                                  "tools": tools}))
    assert status == 200 and _calls([json.loads(data)]) == [{"name": "get_weather", "args": {"city": "Oslo"}}]
    assert mitm.received[-1]["body"]["tools"] == tools  # native: the app's tools went as they were


def test_addon_refuses_a_bad_tool_mode(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="tool-mode"):
        MitmStack(tmp_path, "--set", "gtp_tool_mode=gemma-4*=klingon")


def _weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("stream", [False, True])
def test_google_genai_tool_loop_with_gemma4_through_the_addon(mitm: MitmStack, stream: bool) -> None:
    """An unmodified google-genai app (automatic function calling) on Gemma 4: its own tools are
    rendered, the model's text calls reach it as calls, it runs them, and the loop completes."""
    from google import genai
    from google.genai import types
    client = genai.Client(api_key="k", http_options=types.HttpOptions(
        client_args={"proxy": mitm.proxy_url, "verify": mitm.client_ssl()}))
    config = types.GenerateContentConfig(tools=[_weather])
    text = f"call _weather city=Quito {stream}"
    if stream:
        answer = "".join(c.text or "" for c in client.models.generate_content_stream(
            model="gemma-4-31b-it", contents=text, config=config))
    else:
        answer = client.models.generate_content(model="gemma-4-31b-it", contents=text, config=config).text
    assert "sunny in Quito" in answer
    sent = json.dumps(mitm.received[-1]["body"])
    assert '"functionDeclarations"' not in sent and "<|tool_call>call:_weather" in sent
