"""How a stream opens (server/stream.py): the writer's opening events are made while Gemini is still
working on the request, and the status line and headers go out with them in one write; a stream
whose writer opens with nothing (Chat, native) still sends its headers at once, never held until
Gemini's first chunk. A real upstream server on loopback is held at each step by the test."""

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from proxy.front.app import make_app
from proxy.journal import exchange
from proxy.journal.recorder import Recorder
from proxy.journal.ring import Journal
from proxy.responses.translator import ResponsesTranslator
from proxy.store import MemoryStore
from proxy.upstream.gemini.client import GeminiUpstream

CHUNK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hello"}]}, "index": 0,
                         "finishReason": "STOP"}],
         "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4}}
GATES = web.AppKey("gates", dict)


async def _held(request: web.Request) -> web.StreamResponse:
    """Gemini, held by the test: its headers wait for `headers`, its one chunk for `chunk`."""
    gates = request.app[GATES]
    await request.read()
    gates["arrived"].set()
    await gates["headers"].wait()
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)
    await gates["chunk"].wait()
    await resp.write(f"data: {json.dumps(CHUNK)}\r\n\r\n".encode())
    await resp.write_eof()
    return resp


async def _serve(gemini: Any, gates: dict[str, asyncio.Event] | None = None) -> tuple[list[web.AppRunner], str]:
    """`gemini` (a handler) as Gemini on loopback, and the front-end before it: their runners, its URL."""
    up = web.Application()
    if gates is not None:
        up[GATES] = gates
    up.router.add_post("/v1beta/models/{target}", gemini)
    up_runner, up_port = await _start(up)
    front = make_app(MemoryStore(), GeminiUpstream(f"http://127.0.0.1:{up_port}", api_key="k"),
                     recorder=Recorder(Journal()))  # the journal tells when the upstream call was attempted
    runner, port = await _start(front)
    return [up_runner, runner], f"http://127.0.0.1:{port}"


async def _start(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]


@pytest.fixture
async def front() -> Any:
    gates = {name: asyncio.Event() for name in ("arrived", "headers", "chunk")}
    runners, url = await _serve(_held, gates)
    async with aiohttp.ClientSession() as session:
        yield session, url, gates
    for gate in gates.values():
        gate.set()
    for runner in reversed(runners):
        await runner.cleanup()


async def test_responses_opening_is_made_while_gemini_works_and_sent_with_the_headers(front: Any,
                                                                                    monkeypatch: Any) -> None:
    session, url, gates = front
    made: list[dict[str, Any]] = []
    start = ResponsesTranslator.start

    def recorded(self: ResponsesTranslator) -> Any:
        call = exchange.upstream_call()
        made.append({"headers_released": gates["headers"].is_set(),
                     "attempted": bool(call is not None and call.attempts)})
        return start(self)

    monkeypatch.setattr(ResponsesTranslator, "start", recorded)
    body = {"model": "gemini-2.5-flash", "input": "hi", "stream": True}
    request = asyncio.ensure_future(session.post(url + "/v1/responses", json=body))
    await asyncio.wait_for(gates["arrived"].wait(), 10)
    for _ in range(20):  # the loop turns while Gemini holds its headers: the opening is made now
        await asyncio.sleep(0)
    assert made == [{"headers_released": False, "attempted": True}]
    gates["headers"].set()
    resp = await asyncio.wait_for(request, 10)
    assert resp.status == 200
    # Gemini's chunk is still held: what arrived is the headers and the opening events.
    first = b""
    while b"response.in_progress" not in first:
        first += await asyncio.wait_for(resp.content.readany(), 10)
    assert b"response.created" in first and b"output_text.delta" not in first
    gates["chunk"].set()
    rest = (first + await asyncio.wait_for(resp.content.read(), 10)).decode()
    events = [json.loads(line[6:]) for line in rest.splitlines() if line.startswith("data: ")]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    assert "hello" in [e.get("delta") for e in events]
    assert len(made) == 1  # made once: relay wrote what was made early


async def test_a_stream_opening_with_nothing_sends_its_headers_before_geminis_first_chunk(front: Any) -> None:
    session, url, gates = front
    gates["headers"].set()
    body = {"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    # Chat's writer opens with nothing: the headers must not wait for Gemini's chunk (still held).
    resp = await asyncio.wait_for(session.post(url + "/v1/chat/completions", json=body), 10)
    assert resp.status == 200 and resp.headers["content-type"].startswith("text/event-stream")
    gates["chunk"].set()
    text = (await asyncio.wait_for(resp.content.read(), 10)).decode()
    assert '"content": "hello"' in text or '"content":"hello"' in text
    assert text.rstrip().endswith("data: [DONE]")


async def test_gemini_refusing_before_its_headers_is_an_error_answer_not_a_started_stream(front: Any) -> None:
    """The opening was made early, but Gemini failed: the client gets its protocol's error answer."""
    session, url, gates = front
    upstream_error = {"error": {"code": 400, "message": "bad thing", "status": "INVALID_ARGUMENT"}}

    async def refuse(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response(upstream_error, status=400)

    runners, refused_url = await _serve(refuse)  # the same front-end against a Gemini that refuses at once
    try:
        body = {"model": "gemini-2.5-flash", "input": "hi", "stream": True}
        async with session.post(refused_url + "/v1/responses", json=body) as resp:
            assert resp.status == 400
            answer = await resp.json()
        assert "bad thing" in answer["error"]["message"]
        assert b"response.created" not in json.dumps(answer).encode()
    finally:
        for runner in reversed(runners):
            await runner.cleanup()


async def test_an_opening_that_fails_while_made_early_is_the_streams_failure_not_a_second_start(
        front: Any, monkeypatch: Any) -> None:
    """The failure is raised where the writer's start used to run (relay), so the client is told in
    its protocol, and the opening is not made a second time."""
    session, url, gates = front
    tries = []

    def broken(self: ResponsesTranslator) -> Any:
        tries.append(1)
        raise RuntimeError("the opening could not be made")

    monkeypatch.setattr(ResponsesTranslator, "start", broken)
    gates["headers"].set()
    gates["chunk"].set()
    body = {"model": "gemini-2.5-flash", "input": "hi", "stream": True}
    async with session.post(url + "/v1/responses", json=body) as resp:
        assert resp.status == 200
        text = (await asyncio.wait_for(resp.content.read(), 10)).decode()
    assert "response.failed" in text and "output_text.delta" not in text
    assert len(tries) == 1


def test_aiohttp_still_lets_a_stream_hold_its_headers_for_its_first_write() -> None:
    """stream._HeldHeaders sets an aiohttp class attribute (web.Response's own way of sending its
    headers with its body): an aiohttp without it would send them alone again, silently."""
    from aiohttp.http_writer import StreamWriter

    from proxy.server.stream import _HeldHeaders

    assert web.StreamResponse._send_headers_immediately is True and web.Response._send_headers_immediately is False
    assert _HeldHeaders._send_headers_immediately is False and hasattr(StreamWriter, "send_headers")
