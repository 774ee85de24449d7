"""scripts/translating_hop.py, the floor bench_tails.py and callgrind_serve.py measure the proxy
against: it must do the whole translation of the bench's bodies (every turn, call, result and tool
reaches the strict mock; nothing is skipped to look cheap) and answer in each client's protocol, as
the official SDKs' types read it."""

import asyncio
import json
import sys
from pathlib import Path

import anthropic.types
import httpx
import openai.types.chat
import openai.types.responses
import pytest

from scripts.bench import KEY, last_sent
from scripts.bench_tails import LARGE, PATHS, SMALL, body
from tests.mitm_harness import ROOT
from tests.servers import Process, free_port, mock_gemini

ANSWERS = {"responses": openai.types.responses.Response, "chat": openai.types.chat.ChatCompletion,
           "anthropic": anthropic.types.Message}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("floor")
    mock, mock_url = mock_gemini(tmp)
    port = free_port()
    floor = Process(tmp, "floor", [sys.executable, str(ROOT / "scripts" / "translating_hop.py"), str(port), mock_url],
                    "ready")
    yield mock_url, f"http://127.0.0.1:{port}"
    floor.stop()
    mock.stop()


def _counts(contents: list[dict]) -> dict[str, int]:
    out = {"functionCall": 0, "functionResponse": 0, "text": 0, "inlineData": 0}
    for content in contents:
        for part in content["parts"]:
            for k in out:
                out[k] += k in part
    return out


@pytest.mark.parametrize("kind", ["responses", "chat", "anthropic"])
@pytest.mark.parametrize("workload", ["small", "large"])
def test_the_floor_translates_the_whole_body(servers, kind: str, workload: str) -> None:
    mock_url, floor_url = servers
    b = body(kind, SMALL if workload == "small" else LARGE)
    r = httpx.post(floor_url + PATHS[kind], content=json.dumps(b), headers={**KEY, "content-type": "application/json"},
                   timeout=30)
    assert r.status_code == 200, r.text
    ANSWERS[kind].model_validate(r.json(), strict=False)
    sent = asyncio.run(last_sent(mock_url))["body"]
    declared = sum(len(t["functionDeclarations"]) for t in sent["tools"])
    assert declared == len(b["tools"]), "every tool reaches Gemini"
    got = _counts(sent["contents"])
    if workload == "large":
        assert got["functionCall"] == got["functionResponse"] == 24, got  # bench_tails.events' 24 rounds
        assert sent["systemInstruction"]["parts"][0]["text"], "the agent's system prompt reaches Gemini"
    assert got["text"] >= 1 and "{turn}" in json.dumps(sent["contents"][-1]), "the last user turn reaches Gemini"


def test_the_bench_scripts_name_the_floor() -> None:
    """bench_tails and callgrind_serve both run it (its path is theirs)."""
    for script in ("bench_tails.py", "callgrind_serve.py"):
        assert "translating_hop.py" in (Path(ROOT) / "scripts" / script).read_text()
