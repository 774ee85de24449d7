"""An app speaking the Interactions API through a real mitmdump with the addon: the session's tools
are injected, the streamed function_call step is captured as it passes, and the app's next turn
(a placeholder) is rewritten with the captured call and the result the front-end recorded."""

import json
from pathlib import Path

import pytest

from proxy.mock.validate import sign
from tests.mitm_harness import MitmStack
from tests.test_mitm_e2e import GL, WEATHER, gemini, post_outputs, run, session_state, set_tools

URL = f"{GL}/v1beta/interactions"
MODEL = "gemini-3-flash-preview"


@pytest.fixture(scope="module")
def mitm(tmp_path_factory: pytest.TempPathFactory):
    stack = MitmStack(tmp_path_factory.mktemp("mitm-interactions"))
    yield stack
    stack.close()


def events(data: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in data.decode().split("\n")
            if line.startswith("data: ") and line[6:].strip() != "[DONE]"]


def test_streamed_interaction_gets_tools_is_captured_and_rewritten(mitm: MitmStack) -> None:
    session = "ia"
    run(set_tools(mitm, session, [WEATHER]))
    own = {"type": "function", "name": "read_file", "parameters": {"type": "object"}}
    first = {"model": MODEL, "input": "call get_weather city=Paris", "tools": [own], "stream": True}
    status, data, stamps = run(gemini(mitm, URL, first, headers={"x-gtp-session": session}))
    assert status == 200, data
    sent = mitm.received[-1]
    assert [t["name"] for t in sent["body"]["tools"]] == ["get_weather"], "the session's tools replace the app's"
    assert "x-gtp-session" not in {k.lower() for k in sent["headers"]}
    evs = events(data)
    assert evs[-1]["event_type"] == "interaction.completed", "the stream reached the app whole"
    iid = evs[0]["interaction"]["id"]
    call = run(session_state(mitm, session))["rounds"][-1]["calls"][0]
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"city": "Paris"})
    assert run(post_outputs(mitm, session, [{"call_id": call["call_id"], "output": "sunny"}])) == 200
    # The app knows nothing of the call: it chains and says the placeholder.
    status, data, _ = run(gemini(mitm, URL, {"model": MODEL, "previous_interaction_id": iid,
                                             "input": "Tool call completed"}, headers={"x-gtp-session": session}))
    assert status == 200, data
    answer = next(s for s in json.loads(data)["steps"] if s["type"] == "model_output")
    assert answer["content"][0]["text"] == 'Tool results: get_weather returned {"output": "sunny"}'
    assert mitm.received[-1]["body"]["input"] == [{"type": "function_result", "call_id": call["call_id"],
                                                   "name": "get_weather", "result": {"output": "sunny"}}]


def test_stateless_app_placeholder_becomes_the_signed_call(mitm: MitmStack) -> None:
    session = "ia-stateless"
    run(set_tools(mitm, session, [WEATHER]))
    prompt = {"type": "user_input", "content": [{"type": "text", "text": "call get_weather city=Kyiv"}]}
    status, data, _ = run(gemini(mitm, URL, {"model": MODEL, "input": [prompt], "store": False},
                                 headers={"x-gtp-session": session}))
    assert status == 200, data
    call = run(session_state(mitm, session))["rounds"][-1]["calls"][0]
    run(post_outputs(mitm, session, [{"call_id": call["call_id"], "output": "cold"}]))
    placeholder = {"type": "model_output", "content": [{"type": "text", "text": "Tool call completed"}]}
    status, data, _ = run(gemini(mitm, URL, {"model": MODEL, "input": [prompt, placeholder], "store": False},
                                 headers={"x-gtp-session": session}))
    assert status == 200, data
    sent = mitm.received[-1]["gemini"]["contents"]
    part = sent[1]["parts"][0]
    assert part["thoughtSignature"] == sign(MODEL, "get_weather", {"city": "Kyiv"}), "the signature came back"
    assert sent[2]["parts"][0]["functionResponse"]["response"] == {"output": "cold"}


def test_placeholder_without_a_round_is_refused(mitm: MitmStack) -> None:
    run(set_tools(mitm, "ia-empty", [WEATHER]))
    before = len(mitm.received)
    placeholder = {"type": "model_output", "content": [{"type": "text", "text": "Tool call completed"}]}
    status, data, _ = run(gemini(mitm, URL, {"model": MODEL, "input": [
        {"type": "user_input", "content": [{"type": "text", "text": "hi"}]}, placeholder]},
        headers={"x-gtp-session": "ia-empty"}))
    assert status == 400 and b"no captured function call history" in data
    assert len(mitm.received) == before


def test_other_interactions_traffic_passes_untouched(tmp_path: Path, mitm: MitmStack) -> None:
    status, data, _ = run(gemini(mitm, URL, {"model": MODEL, "input": "hello there"}))
    assert status == 200 and json.loads(data)["status"] == "completed"
    assert "tools" not in mitm.received[-1]["body"]


@pytest.mark.parametrize("stream", [False, True])
def test_google_genai_continues_a_long_interaction_through_the_interceptor(mitm: MitmStack, stream: bool) -> None:
    """google-genai 3.6's client.interactions continues an interaction Google stopped at its decode limit
    (requires_continuation): the hop it sends (the token, previous_interaction_id, no input) passes the
    addon with the session's tools like the first, and the app gets the whole answer."""
    from google import genai
    from google.genai import types
    session = "ia-hops"
    run(set_tools(mitm, session, [WEATHER]))
    client = genai.Client(api_key="k", http_options=types.HttpOptions(
        api_version="v1beta", headers={"x-gtp-session": session},
        client_args={"proxy": mitm.proxy_url, "verify": mitm.client_ssl()}))
    text = "[[mock:hops 3]] tell me about Lima"
    if stream:
        answer = "".join(e.delta.text for e in client.interactions.create(model=MODEL, input=text, stream=True)
                         if e.event_type == "step.delta" and e.delta.type == "text")
    else:
        done = client.interactions.create(model=MODEL, input=text)
        assert done.status == "completed" and len(done.continuation_ids) == 3
        answer = done.output_text
    assert answer == f"Mock Gemini ({MODEL}) heard: tell me about Lima"
    sent = [r["body"] for r in mitm.received[-3:]]
    assert [("continuation_token" in s, "input" in s) for s in sent] == [(False, True), (True, False), (True, False)]
    assert all([t["name"] for t in s["tools"]] == ["get_weather"] for s in sent), "each hop with the session's tools"
