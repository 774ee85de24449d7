"""opencode (npm opencode-ai, a Bun binary) with the opencode-antigravity-auth plugin (npm), carrying
an openai SDK client's tool loop on Antigravity's wire in relay mode: `opencode run "{prompt}"` is
the relay app; its Cloud Code request (daily-cloudcode-pa.sandbox first, the plugin's envelope)
passes the real mitmdump, which puts the SDK client's turn (its tools, its history) into it; the
tool output the client posts carries a marker that the final answer quotes. On a Gemini and on a
Claude model (whose calls and results must carry ids on this wire).

The client runs in a network namespace with only its loopback and a bridge to the MITM
(tests/antigravity_clients.py): opencode honours HTTPS_PROXY and NODE_EXTRA_CA_CERTS (seen here);
its npm, models.dev, opencode.ai and updater calls get the MITM's 403 at once. The account is a
dummy: opencode's auth store holds an unexpired token for provider `google` whose refresh string
names a managed project (so the plugin asks no OAuth host and no loadCodeAssist), the plugin's
account file holds the same, and its proactive refresh and auto-update are off (the plugin's
dist/src/plugin/auth.js, project.js, config/schema.js; research/antigravity-facts.md §6.2).
"""

import json
import os
import time
from pathlib import Path

import pytest

from tests.antigravity_clients import ROUTED, assert_antigravity_loop, contacted, mitm_dialed, relay_stack, tool_loop
from tests.npm_tools import npm_binary, npm_packages

pytestmark = pytest.mark.slow
OPENCODE_VERSION = "1.18.33"  # npm view opencode-ai version, 2026-12-02
PLUGIN_VERSION = "1.6.0"  # npm view opencode-antigravity-auth dist-tags.latest
# The hosts opencode and the plugin ask for besides Cloud Code's (all refused by the MITM here).
EXPECTED_ELSEWHERE = {"registry.npmjs.org", "antigravity-auto-updater-974169037036.us-central1.run.app",
                      "antigravity.google", "oauth2.googleapis.com", "opencode.ai", "models.dev"}


@pytest.fixture(scope="module")
def opencode() -> tuple[Path, Path]:
    binary = npm_binary("opencode-ai", OPENCODE_VERSION, "opencode")
    prefix = npm_packages(f"opencode-antigravity-auth-{PLUGIN_VERSION}", f"opencode-antigravity-auth@{PLUGIN_VERSION}")
    return binary, prefix / "node_modules" / "opencode-antigravity-auth"


def seed_home(home: Path, plugin: Path) -> None:
    config, data = home / ".config" / "opencode", home / ".local" / "share" / "opencode"
    config.mkdir(parents=True)
    data.mkdir(parents=True)
    limit = {"context": 200000, "output": 64000}
    models = {"antigravity-claude-sonnet-4-6": {"name": "Claude Sonnet 4.6 (Antigravity)", "limit": limit},
              "antigravity-gemini-3-flash": {"name": "Gemini 3 Flash (Antigravity)", "limit": limit}}
    (config / "opencode.json").write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json", "plugin": [plugin.as_uri()], "autoupdate": False,
        "share": "disabled", "provider": {"google": {"models": models}}}))
    (config / "antigravity.json").write_text(json.dumps({"proactive_token_refresh": False, "auto_update": False}))
    (config / "antigravity-accounts.json").write_text(json.dumps({"version": 4, "activeIndex": 0, "accounts": [
        {"email": "dummy@example.com", "refreshToken": "dummy-refresh", "projectId": "dummy-proj",
         "managedProjectId": "dummy-proj", "addedAt": 1, "lastUsed": 1, "enabled": True}]}))
    far = int((time.time() + 365 * 86400) * 1000)
    (data / "auth.json").write_text(json.dumps({"google": {
        "type": "oauth", "refresh": "dummy-refresh|dummy-proj|dummy-proj", "access": "dummy-access", "expires": far}}))


@pytest.mark.parametrize(("opencode_model", "model"), [("antigravity-gemini-3-flash", "gemini-3-flash"),
                                                       ("antigravity-claude-sonnet-4-6", "claude-sonnet-4-6")],
                         ids=["gemini", "claude"])
def test_opencode_carries_a_tool_loop_on_antigravity_s_wire(opencode, tmp_path: Path, opencode_model, model) -> None:
    binary, plugin = opencode
    home, work = tmp_path / "home", tmp_path / "work"
    seed_home(home, plugin)
    work.mkdir()
    env = [f"HOME={home}", f"XDG_CONFIG_HOME={home}/.config", f"XDG_DATA_HOME={home}/.local/share",
           f"XDG_CACHE_HOME={home}/.cache", f"XDG_STATE_HOME={home}/.local/state", f"PATH={os.environ['PATH']}",
           "HTTPS_PROXY={proxy}", "HTTP_PROXY={proxy}", "NO_PROXY=", "NODE_EXTRA_CA_CERTS={ca}",
           "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1"]
    m, hosts = relay_stack(tmp_path, ["env", "-i", "-C", str(work), *env, str(binary), "run", "{prompt}",
                                      "--model", f"google/{opencode_model}"])
    try:
        marker = f"gtp-marker-{model}-{time.monotonic_ns()}"
        answer, sent = tool_loop(m, model, marker)
        assert answer == f'Tool results: get_weather returned {{"output": "{marker}"}}', (answer, m.logs()[-3000:])
        assert_antigravity_loop(sent, model, "dummy-proj", marker)
        assert all(r["body"]["sessionId"] for r in sent), "the plugin's session id kept"
        mock = m.mock_url.removeprefix("https://")
        assert mitm_dialed(m) == {mock}, "the MITM itself connected to the mock only"
        seen = contacted(hosts)
        assert seen & set(ROUTED), seen
        assert seen <= set(ROUTED) | EXPECTED_ELSEWHERE, seen
    finally:
        m.close()
