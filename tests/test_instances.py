"""Issue 12 items 1-2: several real proxy processes sharing a real redis-server, behind a real
HAProxy. A conversation whose turns land on different instances works on every API; the addon of a
mitmdump injects tools set through another instance; Redis stopped and restarted mid-conversation
is a 503 in the client's protocol, then everything continues; a restarted instance loses nothing."""

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import openai
import pytest
from google import genai
from google.genai._gaos.lib.compat_errors import APIError  # what client.interactions raises

from proxy.mock.validate import sign
from tests.mitm_harness import MitmStack
from tests.servers import HAProxy, Process, RedisServer, mock_gemini, proxy_instance
from tests.test_mitm_e2e import GL, WEATHER, gemini, run, user

MODEL = "gemini-3-flash-preview"  # signatures required: a turn on another instance must find them


class Fleet:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.redis = RedisServer(tmp)
        self.mock, self.mock_url = mock_gemini(tmp)
        self.instances: list[tuple[Process, str]] = [self.start(f"proxy{i}") for i in range(2)]
        self.lb = HAProxy(tmp, [url for _, url in self.instances])

    def start(self, name: str) -> tuple[Process, str]:
        return proxy_instance(self.tmp, name, self.mock_url, "--store", self.redis.url)

    @property
    def urls(self) -> list[str]:
        return [url for _, url in self.instances]

    def client(self, url: str, **headers: str) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{url}/v1", api_key="k", _strict_response_validation=True, max_retries=0,
                             default_headers=headers or None)

    def stop(self) -> None:
        self.lb.stop()
        for proc, _ in self.instances:
            proc.stop()
        self.mock.stop()
        self.redis.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    f = Fleet(tmp_path_factory.mktemp("fleet"))
    yield f
    f.stop()


def post(url: str, body: dict) -> tuple[int, dict]:
    async def go() -> tuple[int, dict]:
        async with aiohttp.ClientSession() as s, s.post(url, json=body) as r:
            return r.status, await r.json(content_type=None)
    return run(go())


def test_a_chained_conversation_alternates_instances(fleet: Fleet) -> None:
    a, b = (fleet.client(u) for u in fleet.urls)
    r1 = a.responses.create(model=MODEL, input="call get_weather city=Paris", tools=[WEATHER])
    call = next(o for o in r1.output if o.type == "function_call")
    r2 = b.responses.create(model=MODEL, previous_response_id=r1.id, tools=[WEATHER],
                            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}])
    assert r2.status == "completed" and r2.output_text
    r3 = a.responses.create(model=MODEL, previous_response_id=r2.id, input="call get_weather city=Oslo",
                            tools=[WEATHER])
    assert any(o.type == "function_call" for o in r3.output)
    assert b.responses.retrieve(r3.id).id == r3.id, "stored on one instance, read on the other"


def test_stateless_resends_alternate_instances(fleet: Fleet) -> None:
    items: list = [{"role": "user", "content": "call get_weather city=Rome"}]
    for turn in range(4):
        client = fleet.client(fleet.urls[turn % 2])
        r = client.responses.create(model=MODEL, input=items, tools=[WEATHER], store=False,
                                    include=["reasoning.encrypted_content"])
        items += [o.model_dump(exclude_none=True) for o in r.output]
        calls = [o for o in r.output if o.type == "function_call"]
        if not calls:
            break
        items += [{"type": "function_call_output", "call_id": c.call_id, "output": "warm"} for c in calls]
    assert r.status == "completed" and r.output_text


def test_chat_tool_loop_alternates_instances(fleet: Fleet) -> None:
    a, b = (fleet.client(u) for u in fleet.urls)
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER["parameters"]}}
    messages: list = [{"role": "user", "content": "call get_weather city=Lima"}]
    first = a.chat.completions.create(model=MODEL, messages=messages, tools=[tool])
    msg = first.choices[0].message
    assert msg.tool_calls, first
    messages += [msg.model_dump(exclude_none=True),
                 *[{"role": "tool", "tool_call_id": c.id, "content": "cloudy"} for c in msg.tool_calls]]
    second = b.chat.completions.create(model=MODEL, messages=messages, tools=[tool])
    assert second.choices[0].finish_reason == "stop" and second.choices[0].message.content
    # The replayed call carried Gemini's own signature, found in the store the other instance wrote.
    assert "skip_thought_signature_validator" not in json.dumps(fleet_last_body(fleet))


def fleet_last_body(fleet: Fleet) -> dict:
    status, seen = post_get(f"{fleet.mock_url}/mock/last")
    assert status == 200
    return seen["body"]


def test_gemini_native_conversation_alternates_instances(fleet: Fleet) -> None:
    for i in range(4):
        status, answer = post(f"{fleet.urls[i % 2]}/v1/gemini", {"model": "gemini-2.5-flash", "input": f"turn {i}",
                                                                 "conversation": "shared-conv"})
        assert status == 200, answer
    status, answer = post(f"{fleet.urls[0]}/v1/gemini", {"model": "gemini-2.5-flash", "input": "how many turns?",
                                                         "conversation": "shared-conv"})
    assert status == 200
    # The mock echoes how much history it was sent: all four earlier turns and their answers.
    assert fleet_history_length(fleet) == 9


def fleet_history_length(fleet: Fleet) -> int:
    return len(fleet_last_body(fleet)["contents"])


def test_a_conversation_through_the_load_balancer(fleet: Fleet) -> None:
    lb = fleet.client(fleet.lb.url)
    previous = None
    for i in range(6):
        r = lb.responses.create(model=MODEL, input=f"turn {i}", previous_response_id=previous)
        assert r.status == "completed"
        previous = r.id
    assert len(fleet_last_body(fleet)["contents"]) == 11
    with lb.responses.stream(model=MODEL, input="call get_weather city=Kyiv", tools=[WEATHER],
                             previous_response_id=previous) as s:
        final = s.get_final_response()
    call = next(o for o in final.output if o.type == "function_call")
    done = lb.responses.create(model=MODEL, previous_response_id=final.id, tools=[WEATHER],
                               input=[{"type": "function_call_output", "call_id": call.call_id, "output": "snow"}])
    assert done.status == "completed"


def test_the_addon_injects_tools_set_through_another_instance(fleet: Fleet, tmp_path: Path) -> None:
    run(set_tools_at(fleet.urls[1], "fleet-session", [WEATHER]))
    mitm = MitmStack(tmp_path, "--set", f"gtp_store={fleet.redis.url}")
    try:
        status, body, _ = run(gemini(mitm, f"{GL}/v1beta/models/gemini-2.5-flash:generateContent",
                                     {"contents": [user("call get_weather city=Paris")]},
                                     {"x-gtp-session": "fleet-session"}))
        assert status == 200, body
        sent = mitm.received[-1]["body"]
        assert [d["name"] for d in sent["tools"][0]["functionDeclarations"]] == ["get_weather"]
        # The captured call is in Redis: the other instance lists it.
        status, state = post_get(f"{fleet.urls[0]}/v1/sessions/fleet-session")
        assert status == 200 and state["rounds"][0]["calls"][0]["name"] == "get_weather", state
        # And the addon's journal is shared: another instance's inspector lists and opens the flow.
        deadline, rows = time.monotonic() + 10, []
        while time.monotonic() < deadline and not rows:
            status, listed = post_get(f"{fleet.urls[0]}/inspect/api/exchanges")
            rows = [row for row in listed.get("exchanges", []) if row["kind"] == "mitm"]
            time.sleep(0.2)
        assert rows and rows[0]["calls"][0]["name"] == "get_weather", listed
        status, doc = post_get(f"{fleet.urls[1]}/inspect/api/exchanges/{rows[0]['id']}")
        assert status == 200 and doc["kind"] == "mitm"
        assert doc["upstream"][0]["request"]["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    finally:
        mitm.close()


async def set_tools_at(url: str, session: str, tools: list) -> None:
    async with aiohttp.ClientSession() as s, s.put(f"{url}/v1/sessions/{session}/tools",
                                                   json={"tools": tools}) as r:
        assert r.status == 200, await r.text()


def post_get(url: str) -> tuple[int, dict]:
    async def go() -> tuple[int, dict]:
        async with aiohttp.ClientSession() as s, s.get(url) as r:
            return r.status, await r.json(content_type=None)
    return run(go())


def test_redis_stopped_and_restarted_mid_conversation(fleet: Fleet) -> None:
    a, b = (fleet.client(u) for u in fleet.urls)
    r1 = a.responses.create(model=MODEL, input="before the outage")
    fleet.redis.stop()
    try:
        with pytest.raises(openai.APIStatusError) as e:
            b.responses.create(model=MODEL, input="during", previous_response_id=r1.id)
        assert e.value.status_code == 503 and e.value.body["code"] == "store_unavailable", e.value.body
        # A stream that cannot start fails in its protocol too.
        with pytest.raises(openai.APIStatusError) as e, b.responses.stream(
                model=MODEL, input="during", previous_response_id=r1.id) as s:
            list(s)
        assert e.value.status_code == 503
        status, answer = post(f"{fleet.urls[0]}/v1/gemini", {"model": "gemini-2.5-flash", "input": "x",
                                                             "conversation": "outage"})
        assert status == 503 and answer["error"]["status"] == "UNAVAILABLE", answer
    finally:
        fleet.redis.start()
    r2 = b.responses.create(model=MODEL, input="after", previous_response_id=r1.id)
    assert r2.status == "completed"


def test_a_restarted_instance_loses_nothing(fleet: Fleet) -> None:
    a = fleet.client(fleet.urls[0])
    r1 = a.responses.create(model=MODEL, input="call get_weather city=Nice", tools=[WEATHER])
    call = next(o for o in r1.output if o.type == "function_call")
    proc, _ = fleet.instances[0]
    proc.stop()
    fleet.instances[0] = fleet.start("proxy0-again")
    again = fleet.client(fleet.urls[0])
    r2 = again.responses.create(model=MODEL, previous_response_id=r1.id, tools=[WEATHER],
                                input=[{"type": "function_call_output", "call_id": call.call_id, "output": "mild"}])
    assert r2.status == "completed"
    body = fleet_last_body(fleet)
    replayed = next(p for c in body["contents"] for p in c["parts"] if "functionCall" in p)
    assert replayed["thoughtSignature"] == sign(MODEL, "get_weather", replayed["functionCall"]["args"])


# -- background interactions: one instance runs them, any instance answers for them ---------------------

def genai_client(url: str) -> genai.Client:
    return genai.Client(api_key="test-key", http_options={"base_url": url, "api_version": "v1beta"})


@pytest.fixture
def runner(fleet: Fleet, request: pytest.FixtureRequest) -> Iterator[tuple[Process, genai.Client]]:
    """An instance of the fleet that renews its leases every 0.2 s (--background-lease 1.2)."""
    proc, url = proxy_instance(fleet.tmp, f"runner-{request.node.name}", fleet.mock_url, "--store", fleet.redis.url,
                               "--background-lease", "1.2")
    proc.url = url  # type: ignore[attr-defined]
    yield proc, genai_client(url)
    proc.stop()


def test_a_background_interaction_is_cancelled_through_another_instance(fleet: Fleet, runner) -> None:
    _, owner = runner
    other = genai_client(fleet.urls[0])
    started = owner.interactions.create(model=MODEL, input="[[mock:slow 3]] tell me a story", background=True)
    assert other.interactions.get(started.id).status == "in_progress"
    assert other.interactions.cancel(started.id).status == "cancelled"
    time.sleep(3.5)  # past the answer's time: the owner stopped, its answer never overwrites the cancel
    assert owner.interactions.get(started.id).status == "cancelled"
    # Cancelled already: cancelling again changes nothing and returns it, as Responses does (issue 57).
    assert other.interactions.cancel(started.id).status == "cancelled"


def test_a_background_response_is_polled_and_cancelled_through_another_instance(fleet: Fleet, runner) -> None:
    """Responses' background runs share the interactions' machinery (server/background.py): another
    instance sees the run, cancels it, and the owner's answer never overwrites the cancel."""
    proc, _ = runner
    mine, other = fleet.client(proc.url), fleet.client(fleet.urls[0])
    started = mine.responses.create(model=MODEL, input="[[mock:slow 3]] tell me a story", background=True)
    assert other.responses.retrieve(started.id).status in ("queued", "in_progress")
    assert other.responses.cancel(started.id).status == "cancelled"
    time.sleep(3.5)  # past the answer's time: the owner stopped, its answer never overwrites the cancel
    assert mine.responses.retrieve(started.id).status == "cancelled"


def test_a_background_interaction_deleted_through_another_instance_stays_deleted(fleet: Fleet, runner) -> None:
    _, owner = runner
    other = genai_client(fleet.urls[0])
    started = owner.interactions.create(model=MODEL, input="[[mock:slow 2]] tell me a story", background=True)
    other.interactions.delete(started.id)
    time.sleep(2.5)  # the owner has stopped; had it finished, its answer would be stored again
    for client in (owner, other):
        with pytest.raises(APIError) as e:
            client.interactions.get(started.id)
        assert e.value.status_code == 404


def test_an_interaction_whose_instance_was_killed_is_failed_not_in_progress(fleet: Fleet, runner) -> None:
    proc, owner = runner
    other = genai_client(fleet.urls[1])
    started = owner.interactions.create(model=MODEL, input="[[mock:slow 30]] tell me a story", background=True)
    proc.proc.kill()  # SIGKILL: nothing is settled on the way out
    proc.proc.wait()
    deadline = time.monotonic() + 10
    while (got := other.interactions.get(started.id)).status == "in_progress" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert got.status == "failed", "an abandoned run is never left in progress"
    assert "stopped before it finished" in json.dumps(got.model_dump(mode="json"))
    assert genai_client(fleet.urls[0]).interactions.get(started.id).status == "failed"


def test_a_cancel_while_the_owner_is_frozen_ends_cancelled(fleet: Fleet, runner) -> None:
    """The owner stops renewing (SIGSTOP) while a cancel waits for it: once its lease runs out nothing
    runs any more, so the cancelling instance stores `cancelled` itself; the owner, woken, agrees."""
    proc, owner = runner
    other = genai_client(fleet.urls[0])
    started = owner.interactions.create(model=MODEL, input="[[mock:slow 3]] tell me a story", background=True)
    proc.proc.send_signal(signal.SIGSTOP)
    try:
        assert other.interactions.cancel(started.id).status == "cancelled"
    finally:
        proc.proc.send_signal(signal.SIGCONT)
    time.sleep(3.5)
    assert owner.interactions.get(started.id).status == "cancelled"


# -- the store dies while an answer streams: the client is told it failed, and nothing has a gap ------

def _kill_redis_after_first_event(fleet: Fleet, events: Iterator) -> list:
    """Read a stream; SIGKILL Redis once its first event has arrived (the answer is under way); read
    the rest."""
    seen: list = []
    for event in events:
        seen.append(event)
        if fleet.redis.proc is not None and fleet.redis.proc.poll() is None:
            fleet.redis.proc.send_signal(signal.SIGKILL)
            fleet.redis.proc.wait(10)
    return seen


SLOW = "[[mock:slow 0.3]] a long story please"
WEATHER_FN = {k: v for k, v in WEATHER.items() if k != "type"}


def test_redis_killed_mid_stream_is_a_failure_never_a_completed_response(fleet: Fleet) -> None:
    """Issue 24 item 2: Redis SIGKILLed while a Responses stream (continuing a stored one) runs: the
    stream ends `response.failed` (store_unavailable), not `response.completed` with an id that was
    never stored; a Chat stream ends with an error chunk, not [DONE]."""
    a = fleet.client(fleet.urls[0])
    r1 = a.responses.create(model=MODEL, input="before")
    try:
        events = _kill_redis_after_first_event(fleet, a.responses.create(
            model=MODEL, input=SLOW, previous_response_id=r1.id, stream=True))
        assert events[-1].type == "response.failed", [e.type for e in events][-3:]
        assert "unavailable" in events[-1].response.error.message
        assert not any(e.type == "response.completed" for e in events)
        failed_id = events[-1].response.id
    finally:
        fleet.redis.start()
    with pytest.raises(openai.BadRequestError):  # it was never stored, and the client was told so
        a.responses.create(model=MODEL, input="next", previous_response_id=failed_id)
    r3 = a.responses.create(model=MODEL, input="after", previous_response_id=r1.id)
    assert r3.status == "completed"

    try:
        # A Chat tool call's record must be kept for the next turn (its signature): not kept, not [DONE].
        with pytest.raises(openai.APIError) as e:
            _kill_redis_after_first_event(fleet, a.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "[[mock:slow 0.5]] get_weather get_time city=Oslo"}],
                tools=[{"type": "function", "function": WEATHER_FN},
                       {"type": "function", "function": {**WEATHER_FN, "name": "get_time"}}], stream=True))
        assert "unavailable" in str(e.value)
    finally:
        fleet.redis.start()


def test_redis_killed_mid_stream_leaves_no_gap_in_a_gemini_conversation(fleet: Fleet) -> None:
    """/v1/gemini: the turn whose storing failed ends with Gemini's error object (google-genai raises
    on it); the next turn, after Redis is back, is answered on the history the client was told about
    — the failed turn is not silently missing from a 'successful' past."""
    import httpx

    url = f"{fleet.urls[1]}/v1/gemini"
    status, _ = post(url, {"model": "gemini-2.5-flash", "input": "first turn", "conversation": "kill"})
    assert status == 200
    try:
        with httpx.stream("POST", url, json={"model": "gemini-2.5-flash", "input": SLOW, "conversation": "kill",
                                             "stream": True}, timeout=30) as r:
            events: list = []
            for line in r.iter_lines():
                if line.startswith("data:"):
                    event = json.loads(line[5:])
                    events.append(event)
                    if fleet.redis.proc is not None and fleet.redis.proc.poll() is None and "candidates" in event:
                        fleet.redis.proc.send_signal(signal.SIGKILL)
                        fleet.redis.proc.wait(10)
        assert "error" in events[-1] and events[-1]["error"]["status"] == "UNAVAILABLE", events[-1]
    finally:
        fleet.redis.start()
    status, answer = post(url, {"model": "gemini-2.5-flash", "input": "third turn", "conversation": "kill"})
    assert status == 200
    sent = fleet_last_body(fleet)["contents"]
    texts = [p.get("text", "") for c in sent for p in c["parts"]]
    assert texts[0] == "first turn" and not any(SLOW in t for t in texts), texts
    assert texts[-1] == "third turn"
