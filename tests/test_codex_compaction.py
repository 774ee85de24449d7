"""The real Codex CLI (npm @openai/codex 0.171.0) compacting a long tool loop through the front-end
against the mock (issue 59).

What Codex 0.171.0 sends, seen on the wire (a logging forwarder between Codex and the proxy, below):
it never sends `context_management` and never calls POST /responses/compact. Past its auto-compact
limit (`model_auto_compact_token_limit` in config.toml, or a catalog entry's
`auto_compact_token_limit`) it compacts in one of two ways, chosen by the provider's *name*
(codex-api `supports_remote_compaction`: "openai" or "azure", any case, or an Azure base URL):

- any other provider (`name = "gemini-tool-proxy"`, the suite's): local compaction. Codex sends an
  ordinary POST /v1/responses whose input is the whole history plus its own summary prompt as a user
  message ("You are performing a CONTEXT CHECKPOINT COMPACTION ..."; turn metadata `request_kind:
  "compaction"`, `implementation: "responses"`), then continues in a new window from the user
  messages and "Another language model started to solve this problem ..." + the summary. No
  compaction item is involved. (`[features] context_management` changes nothing on the wire: it is
  Codex's own local experiment.)
- a provider named "OpenAI": remote compaction v2 (`x-codex-beta-features: remote_compaction_v2`,
  `implementation: "responses_compaction_v2"`). Codex sends POST /v1/responses (streamed) whose input
  is the history followed by `{"type": "compaction_trigger"}`, expects exactly one `compaction` item
  among the streamed output items, then replaces its history by the user/developer messages and that
  item (codex-rs/core/src/compact_remote_v2.rs). The proxy answers the trigger with the compaction alone
  (responses/turn.py): everything before it summarised, nothing else asked of Gemini.

Both run a multi-round `exec_command` loop (`[[mock:rounds 4]]`, each command printing ~9 KB) on
gemini-3-flash-preview with `model_auto_compact_token_limit = 3000`, past which Codex compacts
after its second call.
"""

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, web

from proxy.mock.validate import SENTINELS, call_signature
from proxy.to_gemini.input_to_contents import SUMMARY_INTRO
from tests.npm_tools import npm_binary
from tests.servers import loopback_site
from tests.test_codex_cli import config

pytestmark = pytest.mark.slow
CODEX_VERSION = "0.171.0"  # the newest on npm on 2026-12-02 (`npm view @openai/codex version`)
MODEL = "gemini-3-flash-preview"
LIMIT = 3000  # Codex's estimate of its context passes this after the second 9 KB command output
PROMPT = 'Run exec_command cmd="seq 1 2000" and report what it printed [[mock:rounds 4]]'
CODEX_SUMMARY_PROMPT = "You are performing a CONTEXT CHECKPOINT COMPACTION"
CODEX_SUMMARY_PREFIX = "Another language model started to solve this problem"


@pytest.fixture(scope="module")
def codex_bin() -> Path:
    return npm_binary("@openai/codex", CODEX_VERSION, "codex")


class Forwarder:
    """Codex's requests as it sent them, and the proxy's answers: a pass-through on loopback, run on
    the stack's own loop."""

    def __init__(self, stack) -> None:
        self.stack, self.exchanges = stack, []
        self.runner, self.url = stack.lt.run(self._start())

    async def _start(self) -> tuple[web.AppRunner, str]:
        app = web.Application(client_max_size=1 << 28)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        return await loopback_site(app)

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        entry: dict[str, Any] = {"method": request.method, "path": request.path,
                                 "headers": dict(request.headers), "body": json.loads(body) if body else None}
        self.exchanges.append(entry)
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("host", "content-length", "transfer-encoding")}
        async with ClientSession() as s, s.request(request.method, self.stack.url + request.path_qs, data=body,
                                                   headers=headers) as r:
            answer = web.StreamResponse(status=r.status,
                                        headers={"content-type": r.headers.get("content-type", "application/json")})
            await answer.prepare(request)
            data = bytearray()
            with contextlib.suppress(ConnectionError):  # Codex may close once it has response.completed
                async for chunk in r.content.iter_any():
                    data += chunk
                    await answer.write(chunk)
                await answer.write_eof()
            entry["status"], entry["answer"] = r.status, data.decode(errors="replace")
        return answer

    def close(self) -> None:
        self.stack.lt.run(self.runner.cleanup())


def sse_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()
            not in ("", "[DONE]")]


def turn_metadata(body: dict[str, Any]) -> dict[str, Any]:
    return json.loads((body.get("client_metadata") or {}).get("x-codex-turn-metadata") or "{}")


def texts(content: dict[str, Any]) -> str:
    return " ".join(p.get("text", "") for p in content.get("parts") or [])


def calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for c in body["contents"] for p in c.get("parts") or [] if "functionCall" in p]


def assert_gemini_signed(parts: list[dict[str, Any]]) -> None:
    """Each replayed call carries the signature Gemini (the mock) gave it, not a sentinel."""
    for p in parts:
        sig = p.get("thoughtSignature")
        assert sig and sig not in SENTINELS, p
        fc = p["functionCall"]
        assert sig == call_signature(MODEL, fc["name"], fc.get("args") or {}), p


def run_codex(codex_bin: Path, stack, tmp_path: Path, provider_name: str | None = None) -> tuple:
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    forwarder = Forwarder(stack)
    toml = f"model_auto_compact_token_limit = {LIMIT}\n" + config(forwarder.url, MODEL)
    if provider_name:
        toml = toml.replace('name = "gemini-tool-proxy"', f"name = {json.dumps(provider_name)}")
    (home / "config.toml").write_text(toml)
    before = stack.accepted
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(home), "GTP_API_KEY": "codex-key"}
    try:
        done = subprocess.run([str(codex_bin), "exec", "--json", "--skip-git-repo-check", PROMPT], env=env,
                              cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240)
    finally:
        forwarder.close()
    sent = stack.received[before - stack.accepted:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    rollout = [json.loads(line) for f in sorted(home.glob("sessions/**/*.jsonl")) for line in f.read_text().splitlines()
               if line.strip()]
    return done, forwarder.exchanges, sent, events, rollout


def final_answer(events: list[dict[str, Any]]) -> str:
    answers = [e["item"]["text"] for e in events if e.get("type") == "item.completed"
               and e["item"].get("type") == "agent_message"]
    assert answers and events[-1]["type"] == "turn.completed", events[-3:]
    return answers[-1]


def test_codex_compacts_a_long_loop_locally_through_the_proxy(codex_bin: Path, stack, tmp_path: Path) -> None:
    """The suite's provider name: Codex's local compaction, an ordinary Responses turn for the proxy."""
    done, exchanges, sent, events, rollout = run_codex(codex_bin, stack, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    bodies = [x["body"] for x in exchanges]
    # Every request is a plain POST /v1/responses: no /responses/compact, no context_management, no trigger.
    assert {(x["method"], x["path"]) for x in exchanges} == {("POST", "/v1/responses")}
    assert all("context_management" not in b for b in bodies)
    assert all(i.get("type") != "compaction_trigger" for b in bodies for i in b["input"])
    assert all(x["status"] == 200 for x in exchanges)

    # The compaction: Codex's summary prompt after the whole loop so far, answered like any turn.
    kinds = [turn_metadata(b).get("request_kind") for b in bodies]
    assert kinds.count("compaction") == 1, kinds
    k = kinds.index("compaction")
    assert turn_metadata(bodies[k])["compaction"]["implementation"] == "responses"
    compact_input = bodies[k]["input"]
    assert compact_input[-1]["role"] == "user"
    assert compact_input[-1]["content"][0]["text"].startswith(CODEX_SUMMARY_PROMPT)
    outputs = [i for i in compact_input if i.get("type") == "function_call_output"]
    assert len(outputs) >= 2 and all("1999\n2000" in i["output"] for i in outputs)
    [asked] = [r["body"] for r in sent if texts(r["body"]["contents"][-1]).startswith(CODEX_SUMMARY_PROMPT)]
    replayed = calls(asked)
    assert len(replayed) == len(outputs), asked["contents"]
    assert_gemini_signed(replayed)  # the calls reach Gemini with their own signatures (Codex's reasoning items)
    summary = "".join(part.get("text", "") for e in sse_events(exchanges[k]["answer"])
                      if e.get("type") == "response.output_item.done" and e["item"].get("type") == "message"
                      for part in e["item"]["content"])
    assert summary  # (the mock's answer to the summary prompt)

    # The next request starts a new window: the user messages and the summary, none of the calls.
    after = bodies[k + 1]
    assert turn_metadata(after)["window_number"] == turn_metadata(bodies[k])["window_number"] + 1
    assert all(i.get("type") == "message" for i in after["input"])
    handoff = after["input"][-1]["content"][0]["text"]
    assert handoff.startswith(CODEX_SUMMARY_PREFIX) and summary in handoff
    assert [i["content"][0]["text"] for i in after["input"] if i.get("role") == "user"][-2] == PROMPT
    gemini_after = sent[-1]["body"]
    assert calls(gemini_after) == [] and texts(gemini_after["contents"][-1]).startswith(CODEX_SUMMARY_PREFIX)
    assert "1999\n2000" not in json.dumps(gemini_after)  # the long outputs are gone
    # Codex recorded the compaction in its session log, and the loop completed.
    assert [r for r in rollout if r.get("type") == "compacted"]
    assert final_answer(events)


def test_codex_remote_compaction_v2_continues_from_the_compaction_item(codex_bin: Path, stack,
                                                                       tmp_path: Path) -> None:
    """A provider named "OpenAI": Codex asks the server to compact (a `compaction_trigger` item ending
    the input), installs the one `compaction` item of the answer, and continues from it."""
    done, exchanges, sent, events, rollout = run_codex(codex_bin, stack, tmp_path, provider_name="OpenAI")
    bodies = [x["body"] for x in exchanges]
    assert all("context_management" not in b for b in bodies)
    assert {(x["method"], x["path"]) for x in exchanges} == {("POST", "/v1/responses")}
    kinds = [turn_metadata(b).get("request_kind") for b in bodies]
    assert "compaction" in kinds, kinds
    k = kinds.index("compaction")
    assert turn_metadata(bodies[k])["compaction"]["implementation"] == "responses_compaction_v2"
    assert bodies[k]["input"][-1] == {"type": "compaction_trigger"}
    assert exchanges[k]["status"] == 200, exchanges[k]["answer"][:2000]
    assert done.returncode == 0, done.stderr[-3000:]

    # The answer: exactly one compaction item, streamed as added then done, and a completed response.
    answer = sse_events(exchanges[k]["answer"])
    done_items = [e["item"] for e in answer if e.get("type") == "response.output_item.done"]
    [item] = [i for i in done_items if i["type"] == "compaction"]
    assert item["encrypted_content"].startswith("gtp.c1.")
    assert any(e.get("type") == "response.output_item.added" and e["item"]["type"] == "compaction" for e in answer)
    assert answer[-1]["type"] == "response.completed"

    # The next request sends the item back after the retained messages; the proxy expands it: Gemini's
    # request starts with the summary, the long outputs replaced by it.
    after = bodies[k + 1]
    back = [i for i in after["input"] if i.get("type") == "compaction"]
    assert [i["encrypted_content"] for i in back] == [item["encrypted_content"]]
    assert all(i.get("type") in ("message", "compaction") for i in after["input"][:after["input"].index(back[0])])
    gemini = [r["body"] for r in sent if texts(r["body"]["contents"][0]).startswith(SUMMARY_INTRO)]
    assert gemini, [texts(r["body"]["contents"][0])[:80] for r in sent]
    assert "1999\n2000" not in json.dumps(gemini[0]["contents"][1:])
    # Every call the turn replays after the compaction carries Gemini's own signature.
    for body in gemini:
        assert_gemini_signed(calls(body))
    assert [r for r in rollout if r.get("type") == "compacted"]
    assert final_answer(events)
