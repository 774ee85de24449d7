"""Relay mode end to end: openai SDK -> front-end -> stand-in relay app -> MITM -> mock, to the final answer."""

import json
import sys
import time
from pathlib import Path

import openai
import pytest

from proxy.ca import generate_ca
from tests.mitm_harness import ROOT, MitmStack, free_port

WEATHER = {"type": "function", "name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture(scope="module")
def relay(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("relay")
    port = free_port()
    ca = generate_ca(tmp / "proxy-ca")
    log = tmp / "relay.log"
    app = f"{sys.executable} {ROOT / 'tests' / 'relay_app.py'} --proxy http://127.0.0.1:{port} --ca {ca} --log {log}"
    stack = MitmStack(tmp, "--set", f"gtp_relay={app} {{prompt}}", "--set", "gtp_relay_timeout=30",
                      frontend_upstream="relay", listen_port=port)
    yield stack, log
    stack.close()


def relay_log(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_a_complete_tool_loop_through_the_relay(relay) -> None:
    m, log = relay
    client = openai.OpenAI(base_url=f"{m.frontend_url}/v1", api_key="k", _strict_response_validation=True,
                           max_retries=0)
    before = m.accepted
    r1 = client.responses.create(model="gemini-3-flash-preview", input="call get_weather city=Turin",
                                 tools=[WEATHER])
    [call] = r1.output
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Turin"}
    sent = m.received[-1]
    assert sent["model"] == "gemini-3-flash-preview", "the turn's model replaces the relay app's"
    assert sent["body"]["contents"] == [{"role": "user", "parts": [{"text": "call get_weather city=Turin"}]}]
    assert sent["body"]["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"

    with client.responses.stream(model="gemini-3-flash-preview", previous_response_id=r1.id, tools=[WEATHER],
                                 input=[{"type": "function_call_output", "call_id": call.call_id,
                                         "output": "foggy"}]) as s:
        deltas = [e.delta for e in s if e.type == "response.output_text.delta"]
        final = s.get_final_response()
    assert final.output_text == 'Tool results: get_weather returned {"output": "foggy"}' == "".join(deltas)
    history = m.received[-1]["body"]["contents"]
    assert history[1]["parts"][0]["thoughtSignature"], "the signature was replayed on the call part"
    assert m.accepted - before == 2, "one real Gemini call per turn; follow-ups never reach Google"

    deadline = time.monotonic() + 20  # the app logs after its follow-up, which may end after our answer
    while len(relay_log(log)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    runs = relay_log(log)
    assert len(runs) == 2
    for run in runs:
        assert run["prompt"].startswith("<session:relay-")
        assert run["first"] == "Tool call completed" and run["follow_up"] == "Tool call completed"


def test_upstream_errors_reach_the_front_end_client(relay) -> None:
    m, _ = relay
    client = openai.OpenAI(base_url=f"{m.frontend_url}/v1", api_key="k", _strict_response_validation=True,
                           max_retries=0)
    with pytest.raises(openai.RateLimitError) as info:
        client.responses.create(model="gemini-2.5-flash", input="[[mock:error 429]]", stream=True)
    assert "Resource has been exhausted" in info.value.message
