"""What the client never waits on runs after its answer went out: the token counters and the usage
row (observed._count_answer), the request's metrics (metrics._count) and the journal's document
(Recorder.finish_pending). A whole answer yields once between its check and its translation
(answer_turn.whole_answer): work scheduled for the next turn of the loop ran before the answer was
even translated (scripts/critical_path.py found it on the path of every whole answer)."""

import asyncio
import json
import urllib.request
from typing import Any

import pytest
from aiohttp import web_response

from proxy import metrics
from proxy.journal import recorder
from proxy.upstream import observed
from tests.harness import Stack

ROUTES = {
    "responses": ("/v1/responses", {"model": "gemini-2.5-flash", "input": "hello", "store": False}),
    "chat": ("/v1/chat/completions", {"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "hi"}]}),
    "anthropic": ("/v1/messages", {"model": "gemini-2.5-flash", "max_tokens": 50,
                                   "messages": [{"role": "user", "content": "hi"}]}),
    "gemini": ("/v1beta/models/gemini-2.5-flash:generateContent",
               {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
}


@pytest.mark.parametrize("route", list(ROUTES))
def test_the_usage_row_and_the_metrics_come_after_the_answer(stack: Stack, monkeypatch, route: str) -> None:
    events: list[str] = []

    def spy(name: str, orig: Any) -> Any:
        def f(*a: Any, **k: Any) -> Any:
            events.append(name)
            return orig(*a, **k)
        return f

    prepare = web_response.StreamResponse.prepare

    async def prepared(self: web_response.StreamResponse, request: Any) -> Any:
        if request.path == path:
            events.append("answer")
        return await prepare(self, request)

    monkeypatch.setattr(web_response.StreamResponse, "prepare", prepared)
    monkeypatch.setattr(observed, "_count_answer", spy("usage", observed._count_answer))
    monkeypatch.setattr(metrics, "_count", spy("metrics", metrics._count))
    monkeypatch.setattr(recorder.Recorder, "finish_pending", spy("journal", recorder.Recorder.finish_pending))
    path, body = ROUTES[route]
    req = urllib.request.Request(stack.url + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "x-goog-api-key": "k",
                                          "x-api-key": "k", "authorization": "Bearer k"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200
        json.loads(r.read())
    for _ in range(100):  # (the server's loop runs in a thread of its own: its last callbacks may still run)
        if {"usage", "metrics", "journal"} <= set(events):
            break
        stack.lt.run(asyncio.sleep(0.01))
    assert events[0] == "answer", events
    assert {"usage", "metrics", "journal"} <= set(events[1:]), events
