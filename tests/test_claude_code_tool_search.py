"""The real Claude Code (npm, newest) with `ENABLE_TOOL_SEARCH=true` and 120 MCP tools from a local
MCP server (`--mcp-config`, tests/mcp_many_tools.py), through the proxy: Claude Code marks its MCP
tools (and its rarer own tools) `defer_loading: true` and sends its own ToolSearch tool; without
deferral behind the proxy it would fail with "Deferred custom tools are only supported on ...
endpoints that implement deferral" (anthropics/claude-code #89211). The proxy keeps the deferred
tools out of Gemini's declarations, the model searches, Claude Code answers with `tool_reference`
blocks, the found tool is declared on the next request, its MCP server really runs it, and the loop
completes. The input tokens sent to Gemini are measured against the same session with search off.

The mock's `find QUERY` makes the model call ToolSearch first (Claude Code's `select:NAME` query)."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from proxy.mock.objects import CACHE_BODIES
from tests.npm_tools import npm_binary

pytestmark = pytest.mark.slow
CLAUDE_CODE_VERSION = "2.1.337"  # the newest on npm on 2026-12-08 (`npm view @anthropic-ai/claude-code version`)
SERVER = Path(__file__).with_name("mcp_many_tools.py")
TOOL = "mcp__many__tool_007"
SENTINEL = "skip_thought_signature_validator"


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    return npm_binary("@anthropic-ai/claude-code", CLAUDE_CODE_VERSION, "claude")


def run(claude: Path, stack, tmp: Path, search: bool, prompt: str) -> tuple[subprocess.CompletedProcess[str],
                                                                              list[dict[str, Any]]]:
    """Claude Code in print mode with the 120-tool MCP server; the Gemini requests it caused."""
    home, work = tmp / "home", tmp / "work"
    home.mkdir(parents=True, exist_ok=True)
    work.mkdir(exist_ok=True)
    config = tmp / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"many": {
        "type": "stdio", "command": sys.executable, "args": [str(SERVER), "120"],
        "env": {"MCP_CALLS_LOG": str(tmp / "calls.log")}}}}))
    model = "gemini-3-flash-preview"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "ANTHROPIC_BASE_URL": stack.url,
           "ANTHROPIC_API_KEY": "claude-code-key-0123", "ANTHROPIC_MODEL": model, "ANTHROPIC_SMALL_FAST_MODEL": model,
           "ANTHROPIC_DEFAULT_HAIKU_MODEL": model, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1", "ENABLE_TOOL_SEARCH": "true" if search else "false"}
    done = subprocess.run([str(claude), "-p", prompt, "--output-format", "stream-json", "--verbose",
                           "--permission-mode", "bypassPermissions", "--mcp-config", str(config),
                           "--strict-mcp-config"], env=env, cwd=work, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    tag = f"run={tmp.name}"  # in the prompt: this run's requests hold it (in their contents or their cache's)
    caches = stack.mock_app[CACHE_BODIES]
    sent = [r for r in stack.received if r.get("body") and "contents" in r["body"] and tag in json.dumps(
        [r["body"]["contents"], caches.get(r["body"].get("cachedContent"), {}).get("contents")])]
    return done, sent


def tools_of(stack, body: dict[str, Any]) -> list[str]:
    """The functions a request declared: its own, or those of the cache it reads (prompt_cache.py)."""
    held = stack.mock_app[CACHE_BODIES].get(body.get("cachedContent")) or {}
    return [d["name"] for t in (body.get("tools") or held.get("tools") or []) for d in t.get("functionDeclarations",
                                                                                               [])]


def history(stack, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A request's whole history: the cached prefix's turns, then its own."""
    held = stack.mock_app[CACHE_BODIES].get(body.get("cachedContent")) or {}
    return (held.get("contents") or []) + body["contents"]


def tokens_sent(stack, bodies: list[dict[str, Any]]) -> int:
    """Input tokens Gemini reads for the requests, a quarter of their JSON bytes (token_estimate.py's
    rule), a cache's prefix counted as read: what the session is billed for, cached or not."""
    total = 0
    for body in bodies:
        held = stack.mock_app[CACHE_BODIES].get(body.get("cachedContent")) or {}
        total += (len(json.dumps(body)) + len(json.dumps(held))) // 4 if held else len(json.dumps(body)) // 4
    return total


def test_claude_code_finds_an_mcp_tool_through_tool_search(claude_bin: Path, stack, tmp_path: Path) -> None:
    prompt = f"Use {TOOL} account=acme [[mock:find select:{TOOL}]] [[mock:rounds 2]]"
    done, sent = run(claude_bin, stack, tmp_path / "search", True, prompt + " run=search")
    first = tools_of(stack, sent[0]["body"])
    assert "ToolSearch" in first and not [n for n in first if n.startswith("mcp__")]  # all 120 held back
    later = [tools_of(stack, r["body"]) for r in sent[1:]]
    assert later and all([n for n in names if n.startswith("mcp__")] == [TOOL] for names in later)
    # the search went to Claude Code and back: its tool_reference reached Gemini as the found tool
    results = [p["functionResponse"] for r in sent for c in history(stack, r["body"]) for p in c["parts"]
               if "functionResponse" in p and p["functionResponse"]["name"] == "ToolSearch"]
    assert results and results[0]["response"]["tools"] == [{"name": TOOL}]
    calls = [json.loads(line) for line in (tmp_path / "search" / "calls.log").read_text().splitlines()]
    assert [(c["name"], c["arguments"]) for c in calls] == [("tool_007", {"account": "acme"})]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    [result] = [e for e in events if e.get("type") == "result"]
    assert result["subtype"] == "success" and "tool_007 ran with" in result["result"], result
    last = history(stack, sent[-1]["body"])
    signed = [p for c in last if c["role"] == "model" for p in c["parts"] if "functionCall" in p]
    assert [p["functionCall"]["name"] for p in signed] == ["ToolSearch", TOOL]
    assert all(p.get("thoughtSignature") not in (None, SENTINEL) for p in signed)

    # The same session with search off: every tool declared on every request.
    _, eager = run(claude_bin, stack, tmp_path / "eager", False, f"Use {TOOL} account=acme run=eager")
    assert len([n for n in tools_of(stack, eager[0]["body"]) if n.startswith("mcp__")]) == 120
    deferred_tokens = tokens_sent(stack, [r["body"] for r in sent])
    eager_tokens = tokens_sent(stack, [r["body"] for r in eager])
    per_request = (deferred_tokens / len(sent)) / (eager_tokens / len(eager))
    print(f"input tokens to Gemini: deferred {deferred_tokens} over {len(sent)} requests, eager {eager_tokens} over "
          f"{len(eager)}; per request {per_request:.2f}")
    assert per_request < 0.6  # measured 0.4x on this session (docs/benchmarks.md)
