"""The real Codex CLI (npm, newest) with its client-run `tool_search` and MCP namespaces, through the
front-end against the mock (issue 59 item 1): Codex sends `tool_search` only for a model whose catalog
entry has `supports_search_tool: true`, so the test gives it a catalog (Codex's own bundled `gpt-5.5`
entry, renamed to the Gemini model). Its 120 MCP tools (tests/mcp_many_tools.py) are then left out of
`tools`; Gemini is declared `tool_search` and none of them, the model searches, Codex runs its own BM25
search and answers with the namespace it found, the proxy declares just those tools to Gemini as
`mcp__many__<tool>`, the model calls one, Codex's MCP server really runs it, and the final answer
quotes its result. The search's call (with Gemini's own thought signature) and its result stay in
the later Gemini requests. The same task with search off (all 120 tools declared up front) costs
more tokens: the numbers are printed."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.npm_tools import npm_binary
from tests.test_codex_cli import config

pytestmark = pytest.mark.slow
CODEX_VERSION = "0.171.0"  # the newest on npm on 2026-12-02 (`npm view @openai/codex version`)
MODEL = "gemini-3-flash-preview"
MCP_SERVER = Path(__file__).resolve().parent / "mcp_many_tools.py"
PYTHON = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "python"
TOOL = "mcp__many__tool_007"  # "Operation 7 of the payroll service"
SENTINEL = "skip_thought_signature_validator"


@pytest.fixture(scope="module")
def codex_bin() -> Path:
    return npm_binary("@openai/codex", CODEX_VERSION, "codex")


def declared(body: dict) -> list[str]:
    return [d["name"] for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]


def mcp_declared(body: dict) -> list[str]:
    return [n for n in declared(body) if n.startswith("mcp__many__")]


def catalog(codex_bin: Path, home: Path, search: bool) -> Path:
    """Codex's bundled catalog entry for gpt-5.5, as the Gemini model, with tool search on or off."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(home)}
    out = subprocess.run([str(codex_bin), "debug", "models", "--bundled"], env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    entry = next(m for m in json.loads(out)["models"] if m["slug"] == "gpt-5.5")
    assert entry["supports_search_tool"] is True
    entry |= {"slug": MODEL, "display_name": MODEL, "supports_search_tool": search}
    path = home / "catalog.json"
    path.write_text(json.dumps({"models": [entry]}))
    return path


def run_codex(codex_bin: Path, stack, tmp_path: Path, search: bool, prompt: str) -> tuple:
    home, work = tmp_path / f"codex-home-{search}", tmp_path / f"work-{search}"
    home.mkdir()
    work.mkdir()
    calls_log = tmp_path / f"mcp-calls-{search}.jsonl"
    toml = f"model_catalog_json = {json.dumps(str(catalog(codex_bin, home, search)))}\n" + config(stack.url, MODEL)
    toml += f"""[mcp_servers.many]
command = {json.dumps(str(PYTHON))}
args = [{json.dumps(str(MCP_SERVER))}, "120"]
default_tools_approval_mode = "approve"
[mcp_servers.many.env]
MCP_CALLS_LOG = {json.dumps(str(calls_log))}
"""
    (home / "config.toml").write_text(toml)
    before = stack.accepted
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(home), "GTP_API_KEY": "codex-key"}
    done = subprocess.run([str(codex_bin), "exec", "--json", "--skip-git-repo-check", prompt],
                          env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    sent = stack.received[before - stack.accepted:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    calls = [json.loads(line) for line in calls_log.read_text().splitlines()] if calls_log.exists() else []
    return done, sent, events, calls


def tokens(sent: list[dict]) -> int:
    return sum(len(json.dumps(r["body"])) // 4 for r in sent)


def test_codex_finds_an_mcp_tool_by_search_and_runs_it(codex_bin: Path, stack, tmp_path: Path) -> None:
    prompt = f"Use {TOOL} account=acme note=launch and report what it returned"
    done, sent, events, calls = run_codex(codex_bin, stack, tmp_path, True,
                                          f"{prompt} [[mock:find payroll operation 7]] [[mock:rounds 2]]")
    assert done.returncode == 0, done.stderr[-3000:]
    # three hops: the search; the tool, now declared; the answer
    assert len(sent) == 3, [declared(r["body"]) for r in sent]
    assert all(r["model"] == MODEL for r in sent)
    first = sent[0]["body"]
    # The 120 MCP tools are deferred: Gemini is declared the search, and none of them.
    assert "tool_search" in declared(first) and mcp_declared(first) == [], declared(first)
    after = [r["body"] for r in sent if mcp_declared(r["body"])]
    assert after, [declared(r["body"]) for r in sent]
    found = mcp_declared(after[0])
    assert TOOL in found and len(found) < 120 and len(set(found)) == len(found), found
    # ... and just what Codex's search found, as the search's result names them.
    for body in after:
        parts = [p for c in body["contents"] for p in c.get("parts") or []]
        search_calls = [p for p in parts if (p.get("functionCall") or {}).get("name") == "tool_search"]
        results = [p["functionResponse"] for p in parts
                   if (p.get("functionResponse") or {}).get("name") == "tool_search"]
        assert len(search_calls) == 1 and len(results) == 1, parts
        assert search_calls[0]["functionCall"]["args"] == {"query": "payroll operation 7"}
        signature = search_calls[0].get("thoughtSignature")
        assert signature and signature != SENTINEL, search_calls[0]
        listed = [t["name"] for t in results[0]["response"]["tools"]]
        assert sorted(mcp_declared(body)) == sorted(listed) == sorted(found), (listed, mcp_declared(body))
    # Codex's MCP server really ran the tool, with the model's arguments.
    ran = [(c["name"], c["arguments"]) for c in calls]
    assert ran == [("tool_007", {"account": "acme", "note": "launch"})], calls
    mcp_items = [e["item"] for e in events if e.get("type") == "item.completed"
                 and e["item"].get("type") == "mcp_tool_call"]
    assert mcp_items and mcp_items[0]["server"] == "many" and mcp_items[0]["tool"] == "tool_007", mcp_items
    answer = [e["item"]["text"] for e in events if e.get("type") == "item.completed"
              and e["item"].get("type") == "agent_message"][-1]
    assert mcp_items[0]["result"]["content"][0]["text"] == 'tool_007 ran with {"account": "acme", "note": "launch"}'
    # The result reached Gemini as the call's functionResponse, and the answer quotes it (JSON-escaped).
    assert json.dumps(mcp_items[0]["result"]["content"][0]["text"])[1:-1] in answer, answer
    last = sent[-1]["body"]["contents"][-1]["parts"][0]["functionResponse"]
    assert last["name"] == TOOL and "tool_007 ran with" in json.dumps(last), last

    # The same task with search off: all 120 tools go to Gemini in every request.
    off_done, off_sent, _, off_calls = run_codex(codex_bin, stack, tmp_path, False, prompt)
    assert off_done.returncode == 0, off_done.stderr[-3000:]
    assert all("tool_search" not in declared(r["body"]) and len(mcp_declared(r["body"])) == 120 for r in off_sent)
    assert [(c["name"], c["arguments"]) for c in off_calls] == ran
    deferred, upfront = tokens(sent), tokens(off_sent)
    print(f"\ntokens (len(json)//4 over the Gemini requests): deferred {deferred} in {len(sent)} requests, "
          f"all-up-front {upfront} in {len(off_sent)} requests, ratio {deferred / upfront:.3f}")
    assert deferred < upfront
