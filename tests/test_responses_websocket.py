"""The Responses API's WebSocket mode (proxy/responses/websocket.py) with the official openai SDK's
`responses.connect()` (strict: every server event validated by its ResponsesServerEvent union) and a
plain `websockets` client for what the SDK never sends (bad JSON, binary and huge frames)."""

import base64
import json
import os
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest
import websockets.sync.client as ws_client
from openai.types.responses.responses_server_event import ResponsesServerEvent
from pydantic import TypeAdapter
from websockets.exceptions import ConnectionClosed, InvalidStatus

from proxy.responses import websocket
from proxy.server.site import ServerLimits
from tests.harness import Stack
from tests.open_responses_spec import check_events

MODELS = ["gemini-2.5-flash", "gemini-3-flash-preview"]
SERVER_EVENT = TypeAdapter(ResponsesServerEvent)
WEATHER = {"type": "function", "name": "get_weather", "description": "Get the current weather",
           "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}
BETA = {"OpenAI-Beta": "responses_websockets=2026-02-06"}


def _client(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)


def _until_end(conn: Any) -> list[dict[str, Any]]:
    """The events of one response (or one error), each validated by the SDK's server event union."""
    events = []
    for _ in range(10_000):
        raw = json.loads(conn.recv_bytes())
        SERVER_EVENT.validate_python(raw)
        events.append(raw)
        if raw["type"] in ("response.completed", "response.failed", "response.incomplete", "error"):
            break
    check_events(events)
    return events


@pytest.mark.parametrize("model", MODELS)
def test_several_responses_on_one_socket_continue_from_its_own_cache(stack: Stack, model: str) -> None:
    """A tool loop as Codex runs it: store false, each turn only the new items plus previous_response_id."""
    with _client(stack).responses.connect(extra_headers=BETA) as conn:
        conn.send({"type": "response.create", "model": model, "store": False, "tools": [WEATHER],
                   "input": "What's the weather in Paris? (get_weather)"})
        first = _until_end(conn)
        assert [e["type"] for e in first][:2] == ["response.created", "response.in_progress"]
        assert first[-1]["type"] == "response.completed"
        seqs = [e["sequence_number"] for e in first]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        call = next(e["item"] for e in first if e["type"] == "response.output_item.done"
                    and e["item"]["type"] == "function_call")
        rid = first[-1]["response"]["id"]

        conn.send({"type": "response.create", "model": model, "store": False, "tools": [WEATHER],
                   "previous_response_id": rid,
                   "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "Sunny, 21 C"}]})
        second = _until_end(conn)
        assert second[-1]["type"] == "response.completed", second[-1]
        assert second[-1]["response"]["previous_response_id"] == rid
        contents = stack.last_body()["contents"]
        assert [c["role"] for c in contents] == ["user", "model", "user"]
        fc = contents[1]["parts"][-1]["functionCall"]
        assert fc["name"] == "get_weather" and "functionResponse" in contents[2]["parts"][0]
        if model.startswith("gemini-3"):
            assert contents[1]["parts"][-1]["thoughtSignature"] != "skip_thought_signature_validator"

        # store false: the response lives only in this connection's cache, never in the store
        with pytest.raises(openai.NotFoundError):
            _client(stack).responses.retrieve(rid)


def test_errors_are_events_and_the_socket_stays_usable(stack: Stack) -> None:
    with _client(stack).responses.connect(extra_headers=BETA) as conn:
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "previous_response_id": "resp_gone",
                   "input": "hi"})
        [err] = _until_end(conn)
        assert err["type"] == "error" and err["status"] == 400
        assert err["error"]["code"] == "previous_response_not_found"
        assert err["error"]["param"] == "previous_response_id"
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "input": "hello"})
        ok = _until_end(conn)
        assert ok[-1]["type"] == "response.completed"
        rid = ok[-1]["response"]["id"]
        # A continuation that fails evicts the cached response: it is not continued from again.
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "store": False,
                   "previous_response_id": rid,
                   "input": [{"type": "function_call_output", "call_id": "call_unknown", "output": "x"}]})
        [err] = _until_end(conn)
        assert err["type"] == "error" and err["status"] == 400
        # ...but it was stored (store defaults to true), so the store still has it
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "previous_response_id": rid,
                   "input": "again"})
        assert _until_end(conn)[-1]["type"] == "response.completed"


def test_a_failed_continuation_of_an_unstored_response_is_evicted(stack: Stack) -> None:
    with _client(stack).responses.connect(extra_headers=BETA) as conn:
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "store": False, "input": "hello"})
        rid = _until_end(conn)[-1]["response"]["id"]
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "store": False,
                   "previous_response_id": rid, "input": "hi [[mock:error 400]]"})
        failed = _until_end(conn)
        assert failed[-1]["type"] == "error" and failed[-1]["status"] == 400
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "store": False,
                   "previous_response_id": rid, "input": "hi"})
        [err] = _until_end(conn)
        assert err["error"]["code"] == "previous_response_not_found"


def test_a_stream_that_fails_after_it_started_ends_with_response_failed(stack: Stack) -> None:
    with _client(stack).responses.connect(extra_headers=BETA) as conn:
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "input": "hello [[mock:stream_error]]"})
        events = _until_end(conn)
        assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.failed"
        assert events[-1]["response"]["error"]["message"]
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "input": "hello"})
        assert _until_end(conn)[-1]["type"] == "response.completed"  # the socket is still usable


def test_generate_false_warms_up_and_is_continued(stack: Stack) -> None:
    """Codex's prewarm: the response is created and completed without asking Gemini; the next
    request continues from it with only its new input."""
    before = stack.accepted
    with _client(stack).responses.connect(extra_headers=BETA) as conn:
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "store": False, "generate": False,
                   "instructions": "Be brief.", "input": "My name is Alice."})
        warm = _until_end(conn)
        assert [e["type"] for e in warm] == ["response.created", "response.in_progress", "response.completed"]
        assert warm[-1]["response"]["output"] == [] and stack.accepted == before
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "store": False,
                   "previous_response_id": warm[-1]["response"]["id"], "input": "What is my name?"})
        assert _until_end(conn)[-1]["type"] == "response.completed"
    assert "Alice" in json.dumps(stack.last_body()["contents"])


def test_stream_ids_are_echoed_and_acknowledgements_ignored(stack: Stack) -> None:
    with ws_client.connect(f"{stack.url.replace('http', 'ws')}/v1/responses",
                           additional_headers={"authorization": "Bearer k", **BETA}) as ws:
        ws.send(json.dumps({"type": "response.processed", "response_id": "resp_x"}))
        ws.send(json.dumps({"type": "response.create", "model": "gemini-2.5-flash", "input": "hi", "stream_id": "s1"}))
        events = []
        while not events or events[-1]["type"] != "response.completed":
            events.append(json.loads(ws.recv(timeout=30)))
        assert {e.get("stream_id") for e in events} == {"s1"}


@pytest.mark.parametrize(("frame", "param"), [
    ("{not json", None), ('["a list"]', "type"), ('{"type": "response.steer"}', "type"),
    ('{"type": "response.create"}', "model"), ('{"type": "response.create", "model": "m", "input": 5}', "input"),
    ('{"type": "response.create", "model": "gemini-2.5-flash", "input": "x", "background": true}', "background"),
    ('{"type": {"a": 1}}', "type"),
    (b"\x00\x01binary", None), ('{"type": "response.create", "model": "m", "input": "\\ud800"}', None),
])
def test_bad_messages_get_an_error_event_and_the_socket_stays_usable(stack: Stack, frame: Any, param: Any) -> None:
    with ws_client.connect(f"{stack.url.replace('http', 'ws')}/v1/responses",
                           additional_headers={"authorization": "Bearer k"}) as ws:
        ws.send(frame)
        err = json.loads(ws.recv(timeout=30))
        SERVER_EVENT.validate_python(err)
        assert err["type"] == "error" and 400 <= err["status"] < 500 and err["error"]["message"]
        if param:
            assert err["error"]["param"] == param
        ws.send(json.dumps({"type": "response.create", "model": "gemini-2.5-flash", "input": "still here?"}))
        while json.loads(ws.recv(timeout=30))["type"] != "response.completed":
            pass


def test_a_frame_over_the_body_limit_closes_the_socket_with_a_reason() -> None:
    small = Stack(max_body=64 * 1024)
    try:
        with ws_client.connect(f"{small.url.replace('http', 'ws')}/v1/responses", max_size=None,
                               additional_headers={"authorization": "Bearer k"}) as ws:
            ws.send(json.dumps({"type": "response.create", "model": "gemini-2.5-flash", "input": "x" * 100_000}))
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=30)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        # the front-end keeps serving
        assert _client(small).responses.create(model="gemini-2.5-flash", input="hi").status == "completed"
    finally:
        small.close()


def test_client_keys_are_checked_at_the_upgrade() -> None:
    keyed = Stack(keys=["right-key-0123456789"], limits=ServerLimits())
    try:
        url = f"{keyed.url.replace('http', 'ws')}/v1/responses"
        for headers in ({}, {"authorization": "Bearer wrong"}):
            with pytest.raises(InvalidStatus) as refused:
                ws_client.connect(url, additional_headers=headers).close()
            assert refused.value.response.status_code == 401
        with ws_client.connect(url, additional_headers={"authorization": "Bearer right-key-0123456789"}) as ws:
            ws.send(json.dumps({"type": "response.create", "model": "gemini-2.5-flash", "input": "hi"}))
            while json.loads(ws.recv(timeout=30))["type"] != "response.completed":
                pass
    finally:
        keyed.close()


def test_a_plain_get_is_refused_in_openai_shape(stack: Stack) -> None:
    import urllib.error
    import urllib.request
    req = urllib.request.Request(f"{stack.url}/v1/responses", headers={"authorization": "Bearer k"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 405 and json.loads(e.value.read())["error"]["message"].startswith("GET /v1/responses")


def _upgrade(url: str) -> socket.socket:
    """A WebSocket handshake by hand, then silence: a peer that never answers a ping."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /v1/responses HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  "Authorization: Bearer k\r\n\r\n").encode())
    assert sock.recv(4096).startswith(b"HTTP/1.1 101")
    return sock


def test_a_peer_that_answers_no_ping_is_dropped_and_an_idle_one_closed(monkeypatch) -> None:
    """The socket's limits are the front-end's: a ping every --client-timeout, the peer dropped when no
    pong comes within half of it; a socket that sends no request for IDLE_SECONDS is closed (1000)."""
    quick = Stack(limits=ServerLimits(client_timeout=1.0))
    try:
        sock = _upgrade(quick.url)
        started, data = time.monotonic(), b""
        while chunk := sock.recv(4096):  # a ping (0x89) arrives, then the end, with no pong sent
            data += chunk
        assert data[:1] == b"\x89" and time.monotonic() - started < 5
        sock.close()

        monkeypatch.setattr(websocket, "IDLE_SECONDS", 0.5)
        with ws_client.connect(f"{quick.url.replace('http', 'ws')}/v1/responses",
                               additional_headers={"authorization": "Bearer k"}) as ws:
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd is not None and (closed.value.rcvd.code, closed.value.rcvd.reason) == (1000,
                                                                                                          "idle")
    finally:
        quick.close()


def test_a_new_socket_continues_a_stored_response(stack: Stack) -> None:
    """Reconnect recovery: what was stored continues on any new socket (and any instance sharing the
    store); what a closed socket kept only in its cache is said to be gone, and the full history resent
    continues it."""
    with _client(stack).responses.connect(extra_headers=BETA) as conn:
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "input": "My name is Alice."})
        stored = _until_end(conn)[-1]["response"]
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "store": False, "input": "I like tea."})
        unstored = _until_end(conn)[-1]["response"]
    with _client(stack).responses.connect(extra_headers=BETA) as conn:
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "previous_response_id": stored["id"],
                   "input": "What is my name?"})
        assert _until_end(conn)[-1]["type"] == "response.completed"
        assert "Alice" in json.dumps(stack.last_body()["contents"])
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "store": False,
                   "previous_response_id": unstored["id"], "input": "What do I like?"})
        [err] = _until_end(conn)
        assert err["error"]["code"] == "previous_response_not_found"
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "store": False, "input": [
            {"role": "user", "content": "I like tea."}, *unstored["output"],
            {"role": "user", "content": "What do I like?"}]})
        assert _until_end(conn)[-1]["type"] == "response.completed"


def test_stopping_the_front_end_closes_its_sockets_with_going_away() -> None:
    own = Stack()
    ws = ws_client.connect(f"{own.url.replace('http', 'ws')}/v1/responses",
                           additional_headers={"authorization": "Bearer k"})
    try:
        own.close()
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    finally:
        ws.close()


def test_a_base_url_without_v1_reaches_the_same_routes(stack: Stack) -> None:
    """Codex builds ws://HOST/responses from a base_url that has no /v1: served the same."""
    bare = openai.OpenAI(base_url=stack.url, api_key="k", _strict_response_validation=True, max_retries=0)
    first = bare.responses.create(model="gemini-2.5-flash", input="hello")
    assert bare.responses.retrieve(first.id).id == first.id
    with bare.responses.connect(extra_headers=BETA) as conn:
        conn.send({"type": "response.create", "model": "gemini-2.5-flash", "previous_response_id": first.id,
                   "input": "again"})
        assert _until_end(conn)[-1]["type"] == "response.completed"


@pytest.mark.parametrize(("shutdown", "end"), [(10.0, "response.completed"), (1.5, "response.failed")])
def test_a_busy_socket_ends_its_response_before_it_is_closed(shutdown: float, end: str) -> None:
    """A stop while a response streams: it finishes within the shutdown's grace, or ends with
    response.failed when the grace runs out; then the socket closes with 1001, never a silent cut."""
    own = Stack(limits=ServerLimits(shutdown_timeout=shutdown))
    ws = ws_client.connect(f"{own.url.replace('http', 'ws')}/v1/responses",
                           additional_headers={"authorization": "Bearer k"})
    try:
        ws.send(json.dumps({"type": "response.create", "model": "gemini-2.5-flash",
                            "input": "count slowly [[mock:slow 2.5]]"}))
        assert json.loads(ws.recv(timeout=30))["type"] == "response.created"
        stopper = threading.Thread(target=own.close)
        stopper.start()
        events = []
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                events.append(json.loads(ws.recv(timeout=30)))
        stopper.join(30)
        assert events and events[-1]["type"] == end, [e["type"] for e in events]
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    finally:
        ws.close()
