"""The official Anthropic Node SDK (npm @anthropic-ai/sdk, pinned) against the Anthropic Messages
front-end: a tool loop sync and streamed, and a rate limit raised as its RateLimitError
(tests/node/anthropic_messages.mjs). What it received is validated here by the Python SDK's models."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from tests.npm_tools import npm_packages

pytestmark = pytest.mark.slow
ANTHROPIC_NODE = "@anthropic-ai/sdk@1.14.0"
SCRIPT = Path(__file__).with_name("node") / "anthropic_messages.mjs"


@pytest.fixture(scope="module")
def node_sdk() -> Path:
    prefix = npm_packages("anthropic-node", ANTHROPIC_NODE)
    shutil.copy(SCRIPT, prefix / SCRIPT.name)
    return prefix / SCRIPT.name


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-flash-preview"])
def test_the_node_sdk_runs_a_tool_loop(node_sdk: Path, stack, model: str) -> None:
    done = subprocess.run(["node", str(node_sdk), stack.url, model], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    steps = {s["step"]: s["data"] for s in map(json.loads, done.stdout.splitlines())}
    first = Message.model_validate(steps["first"])
    assert first.stop_reason == "tool_use" and any(b.type == "tool_use" for b in first.content)
    assert any(b.type == "thinking" and b.signature for b in first.content)
    second = Message.model_validate(steps["second"])
    assert second.stop_reason == "end_turn" and "Sunny, 21 C" in second.content[-1].text
    streamed = Message.model_validate(steps["streamed"])
    [use] = [b for b in streamed.content if b.type == "tool_use"]
    assert use.input["location"]
    for event in steps["events"]:
        TypeAdapter(RawMessageStreamEvent).validate_python(event)
    assert steps["error"]["name"] == "RateLimitError" and steps["error"]["status"] == 429
    assert steps["error"]["body"]["error"]["type"] == "rate_limit_error"
