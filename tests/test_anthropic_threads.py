"""Server-held Anthropic threads (proxy/anthropic/threads.py, beta `message-threads-2026-08-12`).

The anthropic SDK's own `beta.messages.tool_runner()` -- the locked release in-process, and the
newest from PyPI (2.15.0) in its own venv as a subprocess -- runs a two-round tool loop, plain and
streamed, on Gemini 2.5 and 3: it creates a thread, then sends only each new tool_result with
`thread: continue`. Before threads were held, every such loop died on its second request (a
tool_result without its tool_use). One loop's continues go through a second `serve` process on the
same real Redis. The refusals use the SDK's own exception classes, which it picks by
`error.details.error_code` (anthropic/_error_classes.py): a 400/404 naming the field, never a
silent no-op, and another client key's answer looks exactly like an unknown one.
"""

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic import beta_tool
from anthropic.types import (
    ThreadAlreadyContinuedError,
    ThreadContinueInFlightError,
    ThreadFingerprintMismatchError,
    ThreadNotFoundError,
    ThreadUnsupportedRequestError,
)

from proxy.anthropic.threads import BETA
from proxy.mock.validate import SENTINELS
from proxy.server.context import CONTEXT
from proxy.store import MemoryStore
from tests.harness import Stack
from tests.pypi_tools import pypi_venv
from tests.servers import RedisServer, mock_gemini, proxy_instance

MODELS = ["gemini-2.5-flash", "gemini-3-flash-preview"]
ASK = "What's the weather in Paris? get_weather [[mock:rounds 2]]"
WEATHER = {"name": "get_weather", "description": "Get the current weather",
           "input_schema": {"type": "object", "properties": {"location": {"type": "string"}},
                            "required": ["location"]}}
NEWEST = "anthropic==2.15.0"  # the newest release on PyPI (2026-12-02)


@beta_tool
def get_weather(location: str) -> str:
    """Get the current weather in a place."""
    return f"Sunny in {location}"


class Recorder:
    """The SDK's requests (their `thread` and message count) and the proxy's statuses, as sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.statuses: list[int] = []

    def request(self, r: httpx2.Request) -> None:
        body = json.loads(r.content)
        self.sent.append({"thread": body.get("thread"), "messages": len(body["messages"]), "tools": "tools" in body,
                          "beta": r.headers.get("anthropic-beta", "")})

    def client(self, url: str, transport: httpx2.BaseTransport | None = None, **headers: str) -> anthropic.Anthropic:
        http = anthropic.DefaultHttpxClient(transport=transport, event_hooks={
            "request": [self.request], "response": [lambda r: self.statuses.append(r.status_code)]})
        return anthropic.Anthropic(base_url=url, api_key=headers.pop("key", "k"), max_retries=0,
                                   _strict_response_validation=True, http_client=http, default_headers=headers or None)


def _loop(client: anthropic.Anthropic, model: str, stream: bool) -> Any:
    runner = client.beta.messages.tool_runner(model=model, max_tokens=500, tools=[get_weather], stream=stream,
                                              messages=[{"role": "user", "content": ASK}])
    for item in runner:
        if stream:
            for _ in item:
                pass
    return runner.until_done()


def _held_through_the_thread(sent: list[dict[str, Any]], statuses: list[int]) -> None:
    """Three answers, all 200: a create with the prompt and the tools, then two continues, each from
    the answer before with only its tool_result and neither system nor tools (no replay, which the
    SDK would fall back to on a thread error)."""
    assert statuses == [200, 200, 200], (statuses, sent)
    first, *rest = sent
    assert first["thread"] == {"type": "create"} and first["tools"] and BETA in first["beta"]
    assert len(rest) == 2 and all(s["thread"]["type"] == "continue" and s["messages"] == 1 and not s["tools"]
                                  for s in rest), sent
    ids = [s["thread"]["previous_message_id"] for s in rest]
    assert len(set(ids)) == 2 and all(i.startswith("msg_") for i in ids)


def _whole_history_reached_gemini(body: dict[str, Any], model: str) -> None:
    """The last Gemini request holds the thread: the prompt, both calls (Gemini 3's with their own
    thought signatures, which the mock checks) and both results, and the tool declared."""
    parts = [(c["role"], p) for c in body["contents"] for p in c["parts"]]
    assert parts[0] == ("user", {"text": ASK})
    calls = [p for role, p in parts if role == "model" and "functionCall" in p]
    answers = [p for role, p in parts if role == "user" and "functionResponse" in p]
    assert len(calls) == 2 and len(answers) == 2
    assert [p["functionResponse"]["name"] for p in answers] == ["get_weather", "get_weather"]
    if model.startswith("gemini-3"):
        assert all(p.get("thoughtSignature") not in {None, *SENTINELS} and p["functionCall"].get("id") for p in calls)
    assert [d["name"] for t in body["tools"] for d in t.get("functionDeclarations", [])] == ["get_weather"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("model", MODELS)
def test_the_locked_sdks_tool_runner_continues_its_thread(stack: Stack, model: str, stream: bool) -> None:
    rec = Recorder()
    final = _loop(rec.client(stack.url), model, stream)
    assert final.stop_reason == "end_turn" and "Sunny in" in final.content[-1].text
    _held_through_the_thread(rec.sent, rec.statuses)
    _whole_history_reached_gemini(stack.last_body(), model)


def test_the_newest_sdks_tool_runner_continues_its_thread(stack: Stack) -> None:
    """anthropic 2.15.0 (a venv of its own under .cache/), every model plain and streamed, in one run."""
    import subprocess

    python = pypi_venv("anthropic-2.15", NEWEST)
    script = Path(__file__).with_name("anthropic_thread_runner.py")
    out = subprocess.run([str(python), str(script), stack.url, *MODELS], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    runs = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["model"], r["stream"]) for r in runs] == [(m, s) for m in MODELS for s in (False, True)]
    for r in runs:
        assert r["version"] == NEWEST.split("==")[1]
        assert r["text"] and "Sunny in" in r["text"], r
        _held_through_the_thread(r["sent"], r["statuses"])


def test_the_sdks_message_thread_holds_a_chat_across_models_and_forks(stack: Stack) -> None:
    """`client.beta.messages.thread()` (unsupported_request_behavior "error": no silent fallback to
    replays): turns of a chat send only their own message, a turn may switch the model (the held
    history is given to it as conversation_at gives any model's), and a fork replays the history as a
    new thread while the original goes on."""
    rec = Recorder()
    chat = rec.client(stack.url).beta.messages.thread(model="gemini-2.5-flash", max_tokens=200, system="Be brief.",
                                                      tools=[WEATHER])
    assert chat.send({"role": "user", "content": "First line"}).stop_reason == "end_turn"
    chat.send({"role": "user", "content": "Second line"}, model="gemini-3-flash-preview")
    third = chat.send({"role": "user", "content": "Third line"})
    assert third.stop_reason == "end_turn" and chat.previous_message_id == third.id
    body = stack.last_body()
    users = [p["text"] for c in body["contents"] if c["role"] == "user" for p in c["parts"]]
    assert users == ["First line", "Second line", "Third line"]
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert [s["thread"]["type"] for s in rec.sent] == ["create", "continue", "continue"]
    assert [s["messages"] for s in rec.sent] == [1, 1, 1]
    fork = chat.fork()
    assert fork.send({"role": "user", "content": "Fourth line"}).stop_reason == "end_turn"
    assert rec.sent[-1]["thread"] == {"type": "create"} and rec.sent[-1]["messages"] == 7
    assert chat.send({"role": "user", "content": "Back on the first"}).stop_reason == "end_turn"
    assert rec.statuses == [200] * 5


class Alternating(httpx2.HTTPTransport):
    """Each request to the next of `urls` in turn (a load balancer without affinity)."""

    def __init__(self, urls: list[str]) -> None:
        super().__init__()
        self.urls, self.served = urls, [0] * len(urls)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        n = sum(self.served) % len(self.urls)
        self.served[n] += 1
        target = httpx2.URL(self.urls[n])
        request.url = request.url.copy_with(host=target.host, port=target.port)
        return super().handle_request(request)


@pytest.fixture(scope="module")
def two_instances(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    tmp = tmp_path_factory.mktemp("threads-fleet")
    redis = RedisServer(tmp)
    mock, mock_url = mock_gemini(tmp)
    instances = [proxy_instance(tmp, f"proxy{i}", mock_url, "--store", redis.url) for i in range(2)]
    yield [url for _, url in instances]
    for proc, _ in instances:
        proc.stop()
    mock.stop()
    redis.stop()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_thread_continues_on_a_second_instance(two_instances: list[str], stream: bool) -> None:
    """The create on one `serve`, the continues alternately on the other and back: the thread is held
    in the shared Redis, with Gemini 3's signatures (the mock refuses a call without its own)."""
    rec, transport = Recorder(), Alternating(two_instances)
    final = _loop(rec.client(two_instances[0], transport), "gemini-3-flash-preview", stream)
    assert final.stop_reason == "end_turn" and "Sunny in" in final.content[-1].text
    assert transport.served == [2, 1]
    _held_through_the_thread(rec.sent, rec.statuses)


# -- refusals -----------------------------------------------------------------------------------------


def _create(client: anthropic.Anthropic, content: Any, thread: dict[str, Any], **more: Any) -> Any:
    return client.beta.messages.create(model="gemini-2.5-flash", max_tokens=200, betas=[BETA], thread=thread,
                                       messages=[{"role": "user", "content": content}], **more)


def _continue(previous: str) -> dict[str, str]:
    return {"type": "continue", "previous_message_id": previous}


def test_thread_refusals_name_the_field_as_the_api_does(stack: Stack) -> None:
    client = Recorder().client(stack.url)
    first = _create(client, "Hello there", {"type": "create"}, tools=[WEATHER], system="Be brief.")
    assert first.stop_reason == "end_turn" and first.id.startswith("msg_")

    # `thread` without its beta (our guess at the API's answer: an unknown field is refused)
    with pytest.raises(anthropic.BadRequestError, match=f"thread.*{BETA}"):
        client.messages.create(model="gemini-2.5-flash", max_tokens=200, extra_body={"thread": {"type": "create"}},
                               messages=[{"role": "user", "content": "Hi"}])
    for bad, field in (({"type": "fork"}, "thread.type"), ({"type": "continue"}, "thread.previous_message_id"),
                       ({"type": "create", "previous_message_id": first.id}, "thread.previous_message_id"),
                       ({"type": "continue", "previous_message_id": first.id, "depth": 2}, "thread.depth")):
        with pytest.raises(anthropic.BadRequestError, match=re.escape(field)):
            _create(client, "Hi", bad)
    with pytest.raises(anthropic.BadRequestError, match="messages"):  # nothing to resume: no pause_turn here
        client.beta.messages.create(model="gemini-2.5-flash", max_tokens=200, betas=[BETA],
                                    thread=_continue(first.id), messages=[])
    with pytest.raises(ThreadNotFoundError) as unknown:
        _create(client, "Hi", _continue("msg_0123456789abcdef01234567"))
    assert unknown.value.status_code == 404 and unknown.value.body["error"]["details"] == {
        "error_code": "thread_not_found"}
    with pytest.raises(ThreadFingerprintMismatchError, match="tools"):
        _create(client, "Hi", _continue(first.id), tools=[{**WEATHER, "description": "Another"}])
    with pytest.raises(ThreadFingerprintMismatchError, match="system"):
        _create(client, "Hi", _continue(first.id), system="Be verbose.")
    with pytest.raises(ThreadUnsupportedRequestError) as unsupported:
        _create(client, "Hi", _continue(first.id), extra_body={"context_management": {"edits": []}})
    assert unsupported.value.body["error"]["details"]["unsupported"] == ["context_management"]

    # a continue whose answer failed holds nothing: the same answer may be continued again
    with pytest.raises(anthropic.BadRequestError):
        _create(client, "[[mock:error 400]]", _continue(first.id))
    second = _create(client, "And again", _continue(first.id), tools=[WEATHER], system="Be brief.")
    assert stack.last_body()["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    texts = [p.get("text") for c in stack.last_body()["contents"] for p in c["parts"]]
    assert texts[0] == "Hello there" and texts[-1] == "And again" and len(texts) == 3
    with pytest.raises(ThreadAlreadyContinuedError):
        _create(client, "Once more", _continue(first.id))
    assert _create(client, "Once more", _continue(second.id)).stop_reason == "end_turn"

    # an answer is not a Responses response
    request = urllib.request.Request(f"{stack.url}/v1/responses/{first.id}")
    with pytest.raises(urllib.error.HTTPError) as got:
        urllib.request.urlopen(request, timeout=10)
    assert got.value.code == 404


def test_a_cut_stream_is_not_held_and_a_running_continue_holds_its_answer(stack: Stack) -> None:
    """The server holds the whole reply or none: a stream that ended without message_stop raised and
    cannot be continued. A continue still streaming keeps its answer claimed: a second one is
    told so (in flight), and once it ended, that the answer was continued already."""
    client = Recorder().client(stack.url)
    cut = client.beta.messages.stream(model="gemini-2.5-flash", max_tokens=200, betas=[BETA], thread={"type": "create"},
                                      messages=[{"role": "user", "content": "Hi [[mock:cut]]"}])
    with pytest.raises(anthropic.APIError), cut as events:
        started = next(iter(events))
        for _ in events:
            pass
    with pytest.raises(ThreadNotFoundError):
        _create(client, "Hi", _continue(started.message.id))

    first = _create(client, "Hello", {"type": "create"})
    with client.beta.messages.stream(model="gemini-2.5-flash", max_tokens=200, betas=[BETA],
                                     thread=_continue(first.id),
                                     messages=[{"role": "user", "content": "Slowly [[mock:slow 0.3]]"}]) as slow:
        next(iter(slow))
        with pytest.raises(ThreadContinueInFlightError):
            _create(client, "Meanwhile", _continue(first.id))
        assert slow.get_final_message().stop_reason == "end_turn"
    with pytest.raises(ThreadAlreadyContinuedError):
        _create(client, "Meanwhile", _continue(first.id))


def test_a_thread_keeps_the_stores_limits_truthfully(stack: Stack) -> None:
    """The session budget of previous_response_id: a turn too large to hold is a 413 before Gemini is
    asked; an answer too large to hold ends its stream with an error, never message_stop, is not
    continuable, and leaves the answer before it free to continue. count_tokens takes no `thread`."""
    ctx = stack.app[CONTEXT]
    ctx.store, kept = MemoryStore(max_bytes=60_000, session_bytes=60_000), ctx.store
    try:
        client = Recorder().client(stack.url)
        first = _create(client, "Hello", {"type": "create"})
        asked = stack.accepted
        with pytest.raises(anthropic.APIStatusError) as big:
            _create(client, "x" * 70_000, _continue(first.id))
        assert big.value.status_code == 413 and "messages" in big.value.message and stack.accepted == asked
        events = []
        with pytest.raises(anthropic.APIError, match="too large to keep"):  # noqa: SIM117
            with client.beta.messages.stream(model="gemini-2.5-flash", max_tokens=200, betas=[BETA],
                                             thread=_continue(first.id),
                                             messages=[{"role": "user", "content": "[[mock:bulk 70000]]"}]) as s:
                events.extend(e.type for e in s)
        assert "message_stop" not in events and events[0] == "message_start"
        assert _create(client, "Short", _continue(first.id)).stop_reason == "end_turn"
        with pytest.raises(anthropic.BadRequestError, match="thread"):
            client.messages.count_tokens(model="gemini-2.5-flash", extra_body={"thread": _continue(first.id)},
                                         messages=[{"role": "user", "content": "Hi"}])
    finally:
        ctx.store = kept


def test_another_keys_answer_looks_unknown() -> None:
    """Scoped by client key like previous_response_id: Bob continuing Alice's answer is told exactly
    what an unknown id is told, and Alice's thread is still hers to continue afterwards."""
    keyed = Stack(keys=["alice-client-key-0001", "bob-client-key-00002"])
    try:
        alice, bob = (Recorder().client(keyed.url, key=k) for k in ("alice-client-key-0001", "bob-client-key-00002"))
        first = _create(alice, "Hello", {"type": "create"})
        made_up = "msg_" + "f" * 24
        errors = []
        for previous in (first.id, made_up):
            with pytest.raises(ThreadNotFoundError) as got:
                _create(bob, "Hi", _continue(previous))
            errors.append(json.dumps(got.value.body).replace(previous, "ID"))
        assert errors[0] == errors[1]
        assert _create(alice, "Again", _continue(first.id)).stop_reason == "end_turn"
    finally:
        keyed.close()


def test_no_thread_is_a_stateless_request_as_before(stack: Stack) -> None:
    """A request without `thread` is not held: its id cannot be continued (nothing claimed silently)."""
    client = Recorder().client(stack.url)
    plain = client.messages.create(model="gemini-2.5-flash", max_tokens=200,
                                   messages=[{"role": "user", "content": "Hello"}])
    with pytest.raises(ThreadNotFoundError):
        _create(client, "Hi", _continue(plain.id))
