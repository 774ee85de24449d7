"""The official openai Node SDK (npm `openai`, pinned, with `ws` for its ResponsesWS) against the
front-end and the strict mock: sync, stream, the Responses WebSocket and a compaction round trip
(tests/node/openai_responses.mjs). The Node SDK checks types only at compile time, so what it got
is validated here: bodies by the openai Python SDK's models and the Open Responses schema, stream
events by the SDK's event unions."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from openai.types.responses import Response, ResponseStreamEvent
from openai.types.responses.responses_server_event import ResponsesServerEvent
from pydantic import TypeAdapter

from tests.npm_tools import npm_packages
from tests.open_responses_spec import CompactResource, check_events, check_response

pytestmark = pytest.mark.slow
OPENAI_NODE = "openai@7.57.0"
WS = "ws@8.23.0"
SCRIPT = Path(__file__).with_name("node") / "openai_responses.mjs"


@pytest.fixture(scope="module")
def node_sdk() -> Path:
    prefix = npm_packages("openai-node", OPENAI_NODE, WS)
    shutil.copy(SCRIPT, prefix / SCRIPT.name)
    return prefix / SCRIPT.name


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-flash-preview"])
def test_the_node_sdk_runs_every_transport(node_sdk: Path, stack, model: str) -> None:
    done = subprocess.run(["node", str(node_sdk), f"{stack.url}/v1", model], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    steps = {s["step"]: s["data"] for s in map(json.loads, done.stdout.splitlines())}

    sync = Response.model_validate(check_response(steps["sync"]).model_dump())
    assert any(o.type == "function_call" for o in sync.output)

    stream = steps["stream"]
    for event in stream:
        TypeAdapter(ResponseStreamEvent).validate_python(event)
    check_events(stream)
    assert stream[-1]["type"] == "response.completed"

    socket = steps["websocket"]
    for event in socket:
        TypeAdapter(ResponsesServerEvent).validate_python(event)
    check_events(socket)
    ends = [e for e in socket if e["type"] in ("response.completed", "response.failed", "error")]
    assert [e["type"] for e in ends] == ["response.completed", "response.completed"], ends
    assert ends[1]["response"]["previous_response_id"] == ends[0]["response"]["id"]

    compacted = CompactResource.model_validate(steps["compact"])
    assert compacted.output[-1]["type"] == "compaction"
    after = check_response(steps["after_compact"])
    assert after.status == "completed"
    contents = stack.last_body()["contents"]
    assert "Summary of the earlier part" in json.dumps(contents[0])
    assert any("functionResponse" in p for c in contents for p in c["parts"])
