"""Claude Code (npm, headless) -> antigravity-claude-proxy (npm) -> the real mitmdump -> the mock on
loopback, carrying an openai SDK client's tool loop in relay mode: tests/acp_claude.py (the relay
command) starts antigravity-claude-proxy with a dummy "manual" account (its apiKey is the Bearer, its
projectId skips loadCodeAssist: src/account-manager/credentials.js) and runs `claude -p "{prompt}"`
against it; the proxy's Cloud Code request (daily-cloudcode-pa first, its own envelope and its
Claude ids) passes the MITM, which puts the SDK client's turn into it; the tool output the client
posts carries a marker that the final answer quotes.

antigravity-claude-proxy has no proxy setting and calls Google with Node's global fetch, which on
Node 20 ignores HTTPS_PROXY: a preload (tests/node/env_proxy.mjs, npm undici's EnvHttpProxyAgent as
the global dispatcher) sends it through the MITM, NODE_EXTRA_CA_CERTS trusts the MITM's CA. Both
programs run in a network namespace with only its loopback and a bridge to the MITM
(tests/antigravity_clients.py).
"""

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.antigravity_clients import ROUTED, assert_antigravity_loop, contacted, mitm_dialed, relay_stack, tool_loop
from tests.mitm_harness import ROOT
from tests.npm_tools import npm_binary, npm_packages

pytestmark = pytest.mark.slow
ACP_VERSION = "2.0.4"  # npm view antigravity-claude-proxy version, 2026-12-02
CLAUDE_CODE_VERSION = "2.1.337"  # as tests/test_claude_code_cli.py
UNDICI_VERSION = "7.30.2"  # the newest undici for Node 20 (8.x needs Node >= 22.19)


@pytest.fixture(scope="module")
def programs() -> tuple[Path, Path, Path]:
    # Without its install scripts: better-sqlite3 (read only for the Antigravity app's own token
    # database, never with an accounts.json) would otherwise be compiled when its prebuilt binary
    # cannot be fetched from GitHub, for minutes.
    acp = npm_binary("antigravity-claude-proxy", ACP_VERSION, "antigravity-claude-proxy", ignore_scripts=True)
    claude = npm_binary("@anthropic-ai/claude-code", CLAUDE_CODE_VERSION, "claude")
    prefix = npm_packages(f"undici-{UNDICI_VERSION}", f"undici@{UNDICI_VERSION}")
    shim = prefix / "env_proxy.mjs"  # next to its node_modules, so that `import 'undici'` resolves
    shutil.copyfile(ROOT / "tests" / "node" / "env_proxy.mjs", shim)
    return acp, claude, shim


def seed_home(home: Path) -> None:
    config = home / ".config" / "antigravity-proxy"
    config.mkdir(parents=True)
    (config / "accounts.json").write_text(json.dumps({"settings": {}, "activeIndex": 0, "accounts": [
        {"email": "dummy@example.com", "source": "manual", "enabled": True, "apiKey": "dummy-token",
         "projectId": "dummy-project", "addedAt": "2026-01-01T00:00:00.000Z", "modelRateLimits": {}}]}))


def test_claude_code_through_antigravity_claude_proxy_carries_a_tool_loop(programs, tmp_path: Path) -> None:
    acp, claude, shim = programs
    home, work = tmp_path / "home", tmp_path / "work"
    seed_home(home)
    work.mkdir()
    model = "claude-sonnet-4-6"
    m, hosts = relay_stack(tmp_path, [
        "env", "-i", "-C", str(work), f"PATH={os.environ['PATH']}", f"HOME={home}", "HTTPS_PROXY={proxy}",
        "NODE_EXTRA_CA_CERTS={ca}", sys.executable, str(ROOT / "tests" / "acp_claude.py"), "--acp", str(acp),
        "--claude", str(claude), "--shim", str(shim), "--port", "8080", "--model", model,
        "--log", str(tmp_path / "acp.log"), "{prompt}"])
    try:
        marker = f"gtp-marker-acp-{time.monotonic_ns()}"
        answer, sent = tool_loop(m, model, marker)
        assert answer == f'Tool results: get_weather returned {{"output": "{marker}"}}', (answer, m.logs()[-3000:])
        history = assert_antigravity_loop(sent, model, "dummy-project", marker)
        assert all(r["headers"]["Authorization"] == "Bearer dummy-token" for r in sent)
        assert all("id" in p["functionCall"] for c in history for p in c["parts"] if "functionCall" in p)
        mock = m.mock_url.removeprefix("https://")
        assert mitm_dialed(m) == {mock}, "the MITM itself connected to the mock only"
        seen = contacted(hosts)
        assert "daily-cloudcode-pa.googleapis.com" in seen and seen <= set(ROUTED), seen
    finally:
        m.close()
