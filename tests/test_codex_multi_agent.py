"""The real Codex CLI (npm, newest) with MultiAgentV2 on (`[features] multi_agent_v2`), through the
front-end against the mock: the root agent spawns a sub-agent with `collaboration.spawn_agent` (a
namespace tool whose `message` parameter carries the Responses `encrypted` mark), Codex hands the
task to the child as an `agent_message` item, and the loop completes."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.npm_tools import npm_binary
from tests.test_codex_cli import config

pytestmark = pytest.mark.slow
CODEX_VERSION = "0.171.0"  # the newest on npm on 2026-12-02 (`npm view @openai/codex version`)


@pytest.fixture(scope="module")
def codex_bin() -> Path:
    return npm_binary("@openai/codex", CODEX_VERSION, "codex")


def test_codex_spawns_a_sub_agent_through_the_proxy(codex_bin: Path, stack, tmp_path: Path) -> None:
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    toml = config(stack.url, "gemini-3-flash-preview").replace("[features]\n", "[features]\nmulti_agent_v2 = true\n")
    (home / "config.toml").write_text(toml)
    before = stack.accepted
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(home), "GTP_API_KEY": "codex-key"}
    done = subprocess.run([str(codex_bin), "exec", "--json", "--skip-git-repo-check",
                           'Call collaboration__spawn_agent task_name=worker message="gtp-child-task" '
                           'and collaboration__wait_agent'],
                          env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    sent = stack.received[before - stack.accepted:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    answer = [e["item"]["text"] for e in events if e.get("type") == "item.completed"
              and e["item"].get("type") == "agent_message"][-1]
    # The child's final answer came back to the root as an agent_message, named by its author.
    assert "Agent message from /root/worker to /root" in answer and "FINAL_ANSWER" in answer, answer

    def last_text(r: dict) -> str:
        return " ".join(p.get("text", "") for p in r["body"]["contents"][-1]["parts"])
    child = [r for r in sent if last_text(r).startswith("Agent message from /root to /root/worker:")]
    # The task reached the child in plain text (the proxy marked its spawn_agent call plaintext with
    # `encrypted_function_args: []`): without the mark Codex delivers it as an encrypted_content part,
    # which the proxy names as withheld.
    assert child and last_text(child[0]).endswith("Payload:\ngtp-child-task"), [last_text(r) for r in sent]
    decls = {d["name"]: d for d in sent[0]["body"]["tools"][0]["functionDeclarations"]}
    assert "collaboration__spawn_agent" in decls and "collaboration__send_message" in decls
    assert "encrypted" not in json.dumps(decls["collaboration__spawn_agent"])  # the mark never reaches Gemini
