"""What the Antigravity client tests share: a MitmStack in relay mode whose relay command runs a real
client in a network namespace with only its loopback (tests/loopback_only.py), the MITM answering
every host but Google's Gemini and Cloud Code hosts with a 403 of its own (mitmproxy's block_list,
before any upstream connection: connection_strategy=lazy), and an SDK client driving the tool loop."""

import json
import re
import shlex
import sys
from pathlib import Path

import openai

from proxy.ca import generate_ca
from tests.mitm_harness import ROOT, MitmStack, free_port

ROUTED = ("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "daily-cloudcode-pa.googleapis.com",
          "daily-cloudcode-pa.sandbox.googleapis.com", "autopush-cloudcode-pa.sandbox.googleapis.com")
BLOCK_OTHERS = ":!~d \"^(" + "|".join(h.replace(".", r"\.") for h in ROUTED) + ")$\":403"
WEATHER = {"type": "function", "name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def relay_stack(tmp: Path, client: list[str], timeout: float = 120) -> tuple[MitmStack, Path]:
    """`client`: the relay app's argv, `{prompt}` where the turn's prompt goes, `{proxy}` for the
    proxy's URL inside the namespace, `{ca}` for the MITM's CA file."""
    port = free_port()
    ca = generate_ca(tmp / "proxy-ca")
    hosts = tmp / "hosts.log"
    argv = [sys.executable, str(ROOT / "tests" / "loopback_only.py"), "--port", str(port), "--log", str(hosts), "--",
            *(a.replace("{proxy}", f"http://127.0.0.1:{port}").replace("{ca}", str(ca)) for a in client)]
    command = shlex.join(argv).replace("'{prompt}'", "{prompt}")
    stack = MitmStack(tmp, "--set", f"gtp_relay={command}", "--set", f"gtp_relay_timeout={timeout:.0f}",
                      "--set", f"block_list={BLOCK_OTHERS}", frontend_upstream="relay", listen_port=port)
    return stack, hosts


def contacted(hosts: Path) -> set[str]:
    """The hosts the client asked the proxy for; every connection out of its namespace was a CONNECT."""
    lines = [line for line in hosts.read_text().splitlines() if line] if hosts.exists() else []
    assert all(line.startswith("CONNECT ") for line in lines), lines
    return {line.split()[1].rsplit(":", 1)[0] for line in lines}


def mitm_dialed(m: MitmStack) -> set[str]:
    """Every address the MITM itself connected to (mitmproxy logs each `server connect`)."""
    return set(re.findall(r"server connect (\S+)", m.logs()))


def tool_loop(m: MitmStack, model: str, marker: str) -> tuple[str, list[dict]]:
    """An openai SDK client's whole tool loop through the front-end: the call, then the tool's output
    (carrying `marker`); returns the final answer and the generate requests the mock received."""
    client = openai.OpenAI(base_url=f"{m.frontend_url}/v1", api_key="k", _strict_response_validation=True,
                           max_retries=0, timeout=300)
    before = len(m.received)
    r1 = client.responses.create(model=model, input="call get_weather city=Turin", tools=[WEATHER])
    [call] = [o for o in r1.output if o.type == "function_call"]
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Turin"}
    r2 = client.responses.create(model=model, previous_response_id=r1.id, tools=[WEATHER], input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": marker}])
    return r2.output_text, [r for r in m.received[before:] if r.get("body") is not None]


def assert_antigravity_loop(sent: list[dict], model: str, project: str, marker: str) -> list[dict]:
    """What a real client's two turns must have carried to the mock: Antigravity's envelope on the
    Cloud Code stream path, only the session's tool, and the tool's output (with the marker) in the
    second turn's history, paired with its call by id for Claude (which refuses it otherwise). Returns
    the history."""
    assert len(sent) == 2, "one Cloud Code request per turn reached Google"
    for r in sent:
        assert r["path"] == "/v1internal:streamGenerateContent?alt=sse"
        assert r["envelope"]["userAgent"] == "antigravity" and r["envelope"]["requestType"] == "agent"
        assert r["envelope"]["model"] == model and r["envelope"]["project"] == project
        assert [d["name"] for t in r["body"]["tools"] for d in t["functionDeclarations"]] == ["get_weather"]
    history = sent[1]["body"]["contents"]
    [call] = [p["functionCall"] for c in history for p in c["parts"] if "functionCall" in p]
    [result] = [p["functionResponse"] for c in history for p in c["parts"] if "functionResponse" in p]
    assert marker in json.dumps(result["response"])
    if model.startswith("claude"):
        assert call["id"] and result["id"] == call["id"], history
    return history
