"""The upstream side's one HTTP engine (proxy/upstream/http.py), proved for each peer over it — Gemini,
the Interactions API, an OpenAI-compatible server: a refusal marked as passing is retried and counted
in /metrics, a stream that goes silent (SSE comments are not progress) ends with a 504 after the idle
timeout, and a full connection pool gives a 503. Real aiohttp servers on loopback play each peer.
Then an ast check: no module of the upstream side but http.py holds a request, retry or SSE loop."""

import ast
import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from proxy import metrics
from proxy.errors import UpstreamError
from proxy.upstream.gemini.client import GeminiUpstream
from proxy.upstream.http import HttpEngine, RetryPolicy
from proxy.upstream.interactions.client import InteractionsUpstream
from proxy.upstream.openai.client import OpenAIUpstream

MODEL = "gemini-2.5-flash"
BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
READ_TIMEOUT = 0.6
# Each peer: its path on the server, how to make its client, and a stream's data that ends at once.
PEERS: dict[str, tuple[str, Callable[..., HttpEngine], bytes]] = {
    "gemini": ("/v1beta/models/{target}", lambda url, **kw: GeminiUpstream(url, api_key="k", **kw), b""),
    "interactions": ("/v1beta/interactions", lambda url, **kw: InteractionsUpstream(url, api_key="k", **kw), b""),
    "openai": ("/chat/completions", lambda url, **kw: OpenAIUpstream(url, api_key="k", **kw), b"data: [DONE]\n\n"),
}
STATE = web.AppKey("state", dict)


async def _peer(request: web.Request) -> web.StreamResponse:
    """The peer as the test sets it: `refuse` 503s first, then a stream that ends, or one that sends only
    comments until `release` is set."""
    state = request.app[STATE]
    await request.read()
    state["hits"] += 1
    if state["refuse"] > 0:
        state["refuse"] -= 1
        return web.json_response({"error": {"code": 503, "status": "UNAVAILABLE", "message": "overloaded"}},
                                 status=503)
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)
    if state["silent"]:
        while not state["release"].is_set():
            await resp.write(b": keep-alive\n\n")  # a comment: not a whole event, no progress
            await asyncio.sleep(0.1)
    else:
        await resp.write(state["ending"])
    await resp.write_eof()
    return resp


@pytest.fixture(params=list(PEERS))
async def peer(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, dict[str, Any], str]]:
    name = request.param
    path, _, ending = PEERS[name]
    state = {"hits": 0, "refuse": 0, "silent": False, "release": asyncio.Event(), "ending": ending}
    app = web.Application()
    app[STATE] = state
    app.router.add_post(path, _peer)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield name, state, f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    state["release"].set()
    await runner.cleanup()


def _client(name: str, url: str, **kw: Any) -> HttpEngine:
    return PEERS[name][1](url, read_timeout=READ_TIMEOUT, total_timeout=30.0, retry=RetryPolicy(3), **kw)


def _count(sample: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(sample, labels) or 0.0


async def _drain(chunks: Any) -> list[dict[str, Any]]:
    return [chunk async for chunk in chunks]


async def test_a_passing_refusal_is_retried_and_counted(peer: tuple[str, dict[str, Any], str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from proxy.upstream import http
    monkeypatch.setattr(http, "BASE_DELAY", 0.01)
    name, state, url = peer
    up = _client(name, url)
    state["refuse"] = 1
    retries, errors = _count("gtp_upstream_retries_total"), _count("gtp_upstream_errors_total", status="503",
                                                                   error_class="server_error")
    try:
        chunks = await _drain(await up.stream(MODEL, BODY))
    finally:
        await up.close()
    assert not any("error" in c for c in chunks) and state["hits"] == 2
    assert _count("gtp_upstream_retries_total") == retries + 1
    assert _count("gtp_upstream_errors_total", status="503", error_class="server_error") == errors + 1


async def test_a_silent_stream_ends_with_504_after_the_idle_timeout(peer: tuple[str, dict[str, Any], str]) -> None:
    name, state, url = peer
    up = _client(name, url)
    state["silent"] = True
    started = time.monotonic()
    try:
        chunks = await _drain(await up.stream(MODEL, BODY))
    finally:
        await up.close()
    took = time.monotonic() - started
    assert chunks[-1]["error"]["code"] == 504 and chunks[-1]["error"]["status"] == "DEADLINE_EXCEEDED", chunks
    assert READ_TIMEOUT * 0.9 <= took < READ_TIMEOUT + 5  # the comments every 0.1 s did not hold it open


async def test_a_full_pool_gives_503(peer: tuple[str, dict[str, Any], str]) -> None:
    name, state, url = peer
    up = _client(name, url, pool_size=1, pool_timeout=0.2)
    state["silent"] = True
    held = await up.stream(MODEL, BODY)  # open: holds the pool's one connection
    try:
        with pytest.raises(UpstreamError) as e:
            await up.stream(MODEL, BODY)
        assert e.value.status == 503 and e.value.code == "upstream_connections_busy"
        assert e.value.headers.get("Retry-After") == "1"
    finally:
        state["release"].set()
        await _drain(held)
        await up.close()


UPSTREAM = Path(__file__).resolve().parents[1] / "proxy" / "upstream"
# What only the engine does: an aiohttp session or connector, a request, reading a body or a stream,
# an SSE decoder, a deadline, or a wait between attempts.
ENGINE_NAMES = {"ClientSession", "TCPConnector", "SSEDecoder", "read_whole", "timeout_at", "timeout"}
ENGINE_METHODS = {"post", "request", "put", "patch", "delete", "readany", "read", "iter_any", "iter_chunked",
                  "iter_chunks", "sleep"}


def test_only_the_engine_holds_a_request_retry_or_sse_loop() -> None:
    found = []
    for path in sorted(UPSTREAM.rglob("*.py")):
        if path.name == "http.py" and path.parent == UPSTREAM:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in ENGINE_NAMES or (isinstance(func, ast.Attribute) and name in ENGINE_METHODS):
                found.append(f"{path.relative_to(UPSTREAM.parents[1])}:{node.lineno} {name}()")
    assert not found, "outside proxy/upstream/http.py: " + ", ".join(found)
