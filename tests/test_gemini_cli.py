"""The real Gemini CLI (npm @google/gemini-cli) through the real mitmdump + addon, against the TLS mock.

Installs the CLI from the npm registry into .cache/ on first use (about 100 MB, a few seconds).
"""

import asyncio
import json
import os
import subprocess
from pathlib import Path

import aiohttp
import pytest

from tests.mitm_harness import MitmStack
from tests.npm_tools import npm_binary

pytestmark = pytest.mark.slow
GEMINI_CLI_VERSION = "0.61.0"  # the version docs/clients/gemini-cli.md was observed with
WEATHER = {"type": "function", "name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture(scope="module")
def gemini_bin() -> Path:
    return npm_binary("@google/gemini-cli", GEMINI_CLI_VERSION, "gemini")


def run_cli(binary: Path, m: MitmStack, home: Path, prompt: str, code_assist: bool) -> subprocess.CompletedProcess:
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = {"security": {"auth": {"selectedType": "oauth-personal" if code_assist else "gemini-api-key"},
                             "folderTrust": {"enabled": False}},
                "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GEMINI_CLI_HOME": str(home), "HTTPS_PROXY": m.proxy_url,
           "NODE_EXTRA_CA_CERTS": str(m.ca_cert), "GEMINI_API_KEY": "cli-key", "NO_COLOR": "1"}
    if code_assist:
        env |= {"GOOGLE_GENAI_USE_GCA": "true", "GOOGLE_CLOUD_ACCESS_TOKEN": "cli-token"}
    # Bounded: without a trusted CA the CLI would retry for minutes (seen with 0.61.0).
    return subprocess.run([str(binary), "-m", "gemini-2.5-flash", "-p", prompt, "--yolo"], env=env, cwd=home,
                          capture_output=True, text=True, timeout=180)


async def set_tools(m: MitmStack, session: str) -> None:
    async with aiohttp.ClientSession() as s, s.put(f"{m.frontend_url}/v1/sessions/{session}/tools",
                                                   json={"tools": [WEATHER]}) as r:
        assert r.status == 200


async def state(m: MitmStack, session: str) -> dict:
    async with aiohttp.ClientSession() as s, s.get(f"{m.frontend_url}/v1/sessions/{session}") as r:
        return await r.json()


@pytest.mark.parametrize("code_assist", [False, True], ids=["api-key", "code-assist"])
def test_gemini_cli_tool_round_trip_with_the_sessions_tool(gemini_bin: Path, tmp_path: Path, code_assist) -> None:
    m = MitmStack(tmp_path)
    try:
        asyncio.run(set_tools(m, "cli"))
        done = run_cli(gemini_bin, m, tmp_path / "home", "<session:cli> call get_weather city=Paris", code_assist)
        assert done.returncode == 0, done.stderr[-2000:]
        generate = [r for r in m.received if r["body"] is not None]
        assert len(generate) == 2, "the call, then the CLI's function response"
        first, second = (r["body"] for r in generate)
        # The CLI's 16 own tools (parametersJsonSchema) were replaced by the session's tool.
        assert [d["name"] for d in first["tools"][0]["functionDeclarations"]] == ["get_weather"]
        assert "<session:" not in json.dumps(first["contents"])
        [round_] = asyncio.run(state(m, "cli"))["rounds"][:1]
        assert round_["calls"][0]["name"] == "get_weather" and round_["calls"][0]["arguments"] == '{"city": "Paris"}'
        answer = second["contents"][-1]["parts"][0]["functionResponse"]
        assert answer["name"] == "get_weather" and "not found" in json.dumps(answer["response"])
        assert done.stdout.strip().startswith("Tool results: get_weather returned")
        if code_assist:
            setup = [r["method"] for r in m.received if r["body"] is None]
            assert {"loadCodeAssist", "retrieveUserQuota", "listExperiments"} <= set(setup)
            assert all(r["path"].startswith("/v1internal:") for r in generate)
    finally:
        m.close()
