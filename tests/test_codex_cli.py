"""The real Codex CLI (npm @openai/codex) through the front-end against the mock: it runs a shell
command for a function call and the command's output reaches the final answer.

Installs Codex from the npm registry into .cache/ on first use (the package ships a static binary).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from proxy import metrics
from tests.npm_tools import npm_binary

pytestmark = pytest.mark.slow
CODEX_VERSION = "0.171.0"  # the newest on npm on 2026-12-08 (`npm view @openai/codex version`)


@pytest.fixture(scope="module")
def codex_bin() -> Path:
    return npm_binary("@openai/codex", CODEX_VERSION, "codex")


def config(url: str, model: str, websocket: bool = False) -> str:
    # Top-level keys must come before any [table] (TOML: a key after a table belongs to the table).
    return f"""model = "{model}"
model_provider = "gtp"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
[analytics]
enabled = false
[features]
plugins = false
unbounded_connection_retries = false
[model_providers.gtp]
name = "gemini-tool-proxy"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "GTP_API_KEY"
supports_websockets = {"true" if websocket else "false"}
"""


def _websocket_creates() -> float:
    return metrics.child(metrics.WEBSOCKET_MESSAGES, "response.create")._value.get()


@pytest.mark.parametrize("transport", ["http", "websocket"])
@pytest.mark.parametrize(("model", "gemini"), [("gemini-2.5-flash", "gemini-2.5-flash"),
                                                ("gpt-5.5", "gemini-3-flash-preview")])
def test_codex_runs_a_shell_command_through_the_proxy(codex_bin: Path, stack, tmp_path: Path, model, gemini,
                                                      transport) -> None:
    """Over HTTP+SSE, and over the Responses WebSocket (`supports_websockets`, Codex's default transport
    for OpenAI): every turn goes over the socket, with no reconnect and no fallback to HTTP."""
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(config(stack.url, model, transport == "websocket"))
    before, sockets_before = stack.accepted, _websocket_creates()
    marker = f"gtp-marker-{model}"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(home), "GTP_API_KEY": "codex-key"}
    done = subprocess.run([str(codex_bin), "exec", "--json", "--skip-git-repo-check",
                           f'Run exec_command cmd="echo {marker}" and report what it printed'],
                          env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    sent_over_socket = _websocket_creates() - sockets_before
    if transport == "websocket":
        assert sent_over_socket >= stack.accepted - before >= 2, (sent_over_socket, done.stderr[-2000:])
        assert "Reconnecting" not in done.stderr and "fall" not in done.stderr.lower(), done.stderr[-2000:]
    else:
        assert sent_over_socket == 0
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    commands = [e["item"] for e in events if e.get("type") == "item.completed"
                and e["item"].get("type") == "command_execution"]
    assert commands and commands[0]["aggregated_output"].strip() == marker and commands[0]["exit_code"] == 0
    answer = [e["item"]["text"] for e in events if e.get("type") == "item.completed"
              and e["item"].get("type") == "agent_message"][-1]
    assert answer.startswith("Tool results: exec_command returned") and marker in answer
    sent = stack.received[before - stack.accepted:]
    assert {r["model"] for r in sent} == {gemini}
    assert all(r["key"] == "codex-key" for r in sent)
    names = [d["name"] for d in sent[0]["body"]["tools"][0]["functionDeclarations"]]
    assert "exec_command" in names
    if model == "gpt-5.5":  # a known model name unlocks Codex's custom apply_patch tool
        assert "apply_patch" in names
    assert sent[-1]["body"]["contents"][-1]["parts"][0]["functionResponse"]["name"] == "exec_command"
