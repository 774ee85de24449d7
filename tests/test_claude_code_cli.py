"""The real Claude Code CLI (npm @anthropic-ai/claude-code, pinned; its binary ships in the package)
in print mode with ANTHROPIC_BASE_URL at the proxy and a Gemini model: its Bash tool runs, the result
goes back, and the answer holds what the command printed -- on 2.5 and 3, with its adaptive thinking.
Its system prompt and tools (past Gemini's minimum) become an explicit cache that its second request
reads, and Claude Code's own usage says so. Then across a restart of the proxy: Claude Code resends
the whole conversation, and the new process (fresh memory, the same carrier keys) gives Gemini back
its own thought signatures from the sealed thinking blocks. As root, Claude Code refuses
--dangerously-skip-permissions; IS_SANDBOX=1 with --permission-mode bypassPermissions is the way (the
issue's note)."""

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from proxy.mock.objects import CACHE_BODIES
from tests.npm_tools import npm_binary
from tests.servers import mock_gemini, proxy_instance

pytestmark = pytest.mark.slow
# the newest on npm on 2026-12-08; tests/recorded/claude-code-2.1.337-request.json was captured from it
CLAUDE_CODE_VERSION = "2.1.337"
SENTINEL = "skip_thought_signature_validator"


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    return npm_binary("@anthropic-ai/claude-code", CLAUDE_CODE_VERSION, "claude")


def run_claude(claude: Path, url: str, model: str, tmp: Path, prompt: str, *extra: str
               ) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    home, work = tmp / "home", tmp / "work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "ANTHROPIC_BASE_URL": url,
           "ANTHROPIC_API_KEY": "claude-code-key-0123", "ANTHROPIC_MODEL": model,
           "ANTHROPIC_SMALL_FAST_MODEL": model, "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1"}
    done = subprocess.run([str(claude), "-p", prompt, "--output-format", "stream-json", "--verbose",
                           "--permission-mode", "bypassPermissions", *extra], env=env, cwd=work,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return done, events


def _blocks(events: list[dict[str, Any]], role: str, kind: str) -> list[dict[str, Any]]:
    return [b for e in events if e.get("type") == role for b in e["message"]["content"]
            if isinstance(b, dict) and b.get("type") == kind]


def _check_tool_loop(done: subprocess.CompletedProcess[str], events: list[dict[str, Any]], marker: str) -> None:
    assert done.returncode == 0, done.stderr[-2000:]
    uses = _blocks(events, "assistant", "tool_use")
    assert uses and uses[0]["name"] == "Bash" and marker in uses[0]["input"]["command"]
    results = _blocks(events, "user", "tool_result")
    assert results and marker in json.dumps(results[0]["content"]) and not results[0].get("is_error")
    [result] = [e for e in events if e.get("type") == "result"]
    assert result["subtype"] == "success" and marker in result["result"], result


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-flash-preview"])
def test_claude_code_runs_a_tool_loop(claude_bin: Path, stack, tmp_path: Path, model: str) -> None:
    marker = f"gtp-claude-{model}"
    before = stack.accepted
    done, events = run_claude(claude_bin, stack.url, model, tmp_path,
                              f'Use Bash with command="echo {marker}" and report what it printed')
    _check_tool_loop(done, events, marker)
    sent = stack.received[before - stack.accepted:]
    assert len(sent) == 2 and {r["model"] for r in sent} == {model}
    assert all(r["body"]["generationConfig"]["thinkingConfig"]["includeThoughts"] for r in sent)
    # Its system prompt and tools passed Gemini's minimum: the first request made an explicit cache of
    # them (server/prompt_cache.py), the second read it; Claude Code saw the read in its usage.
    cache = sent[0]["body"]["cachedContent"]
    assert sent[1]["body"]["cachedContent"] == cache and "tools" not in sent[1]["body"]
    held = stack.mock_app[CACHE_BODIES][cache]
    assert len(held["tools"][0]["functionDeclarations"]) >= 10  # its whole tool set, schemas repaired
    [result] = [e for e in events if e.get("type") == "result"]
    assert result["usage"]["cache_read_input_tokens"] > 0 and result["usage"]["cache_creation_input_tokens"] > 0
    [call] = [p for c in sent[1]["body"]["contents"] if c["role"] == "model" for p in c["parts"]
              if "functionCall" in p]
    assert call["functionCall"]["name"] == "Bash"
    if model.startswith("gemini-3"):
        assert call["thoughtSignature"] != SENTINEL


def test_claude_code_continues_across_a_proxy_restart(claude_bin: Path, tmp_path: Path) -> None:
    """Turn one through one proxy process; the proxy restarts (nothing kept but its carrier keys);
    Claude Code continues the conversation, resending it whole: the thinking blocks' sealed signatures
    give Gemini 3 its own signatures back, and the second tool loop completes."""
    model = "gemini-3-flash-preview"
    mock, mock_url = mock_gemini(tmp_path)
    first, url = proxy_instance(tmp_path, "first", mock_url)
    try:
        done, events = run_claude(claude_bin, url, model, tmp_path,
                                  'Use Bash with command="echo gtp-before" and report what it printed')
        _check_tool_loop(done, events, "gtp-before")
        first.stop()
        second, url = proxy_instance(tmp_path, "second", mock_url)
        try:
            done, events = run_claude(claude_bin, url, model, tmp_path,
                                      'Now use Bash with command="echo gtp-after" and report it', "--continue")
            _check_tool_loop(done, events, "gtp-after")
        finally:
            second.stop()
        last = _mock_last(mock_url)
        last = (last["answered"] or last["body"])["contents"]  # with the prefix of the cache it names, if any
        calls = [p for c in last if c["role"] == "model" for p in c["parts"] if "functionCall" in p]
        assert len(calls) == 2, "both turns' calls are in the history Claude Code resent"
        assert all(p.get("thoughtSignature") and p["thoughtSignature"] != SENTINEL for p in calls), calls
    finally:
        mock.stop()


def _mock_last(mock_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{mock_url}/mock/last", timeout=10) as r:
        return json.loads(r.read())
