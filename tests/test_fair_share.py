"""Issue 57 item 2: nobody hangs behind 100 slow streams. The Gemini client was aiohttp's default
connector (100 connections) with an unbounded wait for one: with 100 slow streams open another
client's one-word request took 57 s, and /healthz said healthy throughout. Now the pool is sized to
the client connections (--upstream-connections, default --max-connections), the wait for a pooled
connection is bounded (--pool-timeout, then a 503 with Retry-After in the client's protocol), one client
key holds at most its share (--max-in-flight-per-key, --max-background-per-key: a 429), and /readyz
reports saturation.

Real `serve` processes and the mock, whose `slow` answers are the scripted slow upstream; 150 streams
are held open by an aiohttp client on a thread of its own while the official SDKs ask beside them."""

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from tests.harness import LoopThread
from tests.servers import Process, mock_gemini, proxy_instance

pytestmark = pytest.mark.serial  # timing-bound: run alone (scripts/test.sh)

SLOW = "[[mock:slow 4]] tell me a story that takes a long while to tell, in a few parts"  # ~12 s a stream
STREAMS = 150
# Another client's small request, under this load on 2 shared cores. The issue asked 1 s; measured (issue 60
# item 7, 2 busy loops beside the serial pass on 2 cores, load average 1-12): answered beside the 150 streams
# in 0.39-1.77 s (1.0 failed once), refused by a full pool in 0.51-0.83 s. 2.5 s keeps over 25 % above the worst
# and still catches what the tests are for: a request waiting for a pooled connection (a slow stream is ~12 s,
# the default --pool-timeout 5 s; the 57 s).
WITHIN = 2.5
A, B = "a" * 24, "b" * 24


class Holder:
    """STREAMS slow Responses streams held open for client key A (each read to its end, or refused)."""

    def __init__(self, url: str, key: str = A) -> None:
        self.lt, self.url, self.key = LoopThread(), url, key
        self.statuses: list[int] = []
        self.future = asyncio.run_coroutine_threadsafe(self._hold(), self.lt.loop)

    async def _hold(self) -> None:
        import aiohttp

        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            async def one() -> None:
                async with http.post(self.url + "/v1/responses", headers={"authorization": f"Bearer {self.key}"},
                                     json={"model": "gemini-2.5-flash", "input": SLOW, "stream": True}) as r:
                    self.statuses.append(r.status)
                    await r.read()
            await asyncio.gather(*(one() for _ in range(STREAMS)), return_exceptions=True)

    def wait_opened(self, count: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.statuses) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.statuses) >= count, self.statuses

    def stop(self) -> None:
        self.future.cancel()
        time.sleep(0.2)
        self.lt.stop()


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator:
    started: list[Process] = []
    mock, mock_url = mock_gemini(tmp_path)

    def start(*extra: str) -> str:
        proc, url = proxy_instance(tmp_path, f"serve{len(started)}", mock_url, *extra)
        started.append(proc)
        return url
    yield start
    for proc in started:
        proc.stop()
    mock.stop()


def _timed(call) -> tuple[float, object]:
    start = time.monotonic()
    try:
        out = call()
    except Exception as e:  # noqa: BLE001 - the refusal is the result, checked by the caller
        out = e
    return time.monotonic() - start, out


def test_by_default_another_client_is_answered_beside_150_slow_streams(serve) -> None:
    """The issue's case, with the default options: the pool is as large as the client connections."""
    url = serve()
    holder = Holder(url)
    try:
        holder.wait_opened(STREAMS)
        time.sleep(0.5)
        oa = openai.OpenAI(base_url=url + "/v1", api_key=B, max_retries=0, timeout=30)
        took, out = _timed(lambda: oa.responses.create(model="gemini-2.5-flash", input="hi"))
        assert took < WITHIN and getattr(out, "status", None) == "completed", (took, out)
        status, ready = _get(url + "/readyz")
        assert status == 200 and ready["upstream_connections"]["in_use"] >= STREAMS, ready
    finally:
        holder.stop()


def test_a_full_pool_refuses_within_the_bound_in_each_protocol_and_readyz_says_so(serve) -> None:
    url = serve("--upstream-connections", "100", "--pool-timeout", "0.5", "--max-in-flight-per-key", "0")
    holder = Holder(url)
    try:
        holder.wait_opened(STREAMS)  # every pooled connection carries a slow stream; 50 more got a 503
        assert holder.statuses.count(200) == 100 and holder.statuses.count(503) == 50, holder.statuses
        time.sleep(0.5)
        status, ready = _get(url + "/readyz")
        assert status == 503 and ready["status"] == "saturated", ready
        # (the 50 that found no connection have had their 503 by now: the pool is full, nobody waits)
        assert ready["upstream_connections"] == {"in_use": 100, "size": 100, "waiting": 0}, ready
        assert _get(url + "/healthz")[0] == 200  # alive, only full
        oa = openai.OpenAI(base_url=url + "/v1", api_key=B, max_retries=0, timeout=30)
        an = anthropic.Anthropic(base_url=url, api_key=B, max_retries=0, timeout=30)
        ge = genai.Client(api_key=B, http_options=types.HttpOptions(base_url=url, timeout=30_000,
                                                                    retry_options=types.HttpRetryOptions(attempts=1)))
        took, out = _timed(lambda: oa.responses.create(model="gemini-2.5-flash", input="hi"))
        assert took < WITHIN and isinstance(out, openai.APIStatusError) and out.status_code == 503, (took, out)
        assert out.response.headers["retry-after"] == "1" and out.body["code"] == "upstream_connections_busy"
        took, out = _timed(lambda: an.messages.create(model="gemini-2.5-flash", max_tokens=10,
                                                      messages=[{"role": "user", "content": "hi"}]))
        assert took < WITHIN and isinstance(out, anthropic.APIStatusError) and out.status_code == 503, (took, out)
        assert out.body["error"]["type"] == "overloaded_error" and out.response.headers["retry-after"] == "1"
        took, out = _timed(lambda: ge.models.generate_content(model="gemini-2.5-flash", contents="hi"))
        assert took < WITHIN and isinstance(out, genai_errors.ServerError) and out.code == 503, (took, out)
        assert out.status == "UNAVAILABLE"
    finally:
        holder.stop()


def test_one_client_key_takes_no_more_than_its_share(serve) -> None:
    url = serve("--api-key", A, "--api-key", B, "--upstream-connections", "100", "--max-in-flight-per-key", "50")
    holder = Holder(url)
    try:
        holder.wait_opened(STREAMS)  # 50 admitted; the other 100 refused at once
        assert holder.statuses.count(200) == 50 and holder.statuses.count(429) == 100, holder.statuses
        oa = openai.OpenAI(base_url=url + "/v1", api_key=B, max_retries=0, timeout=30)
        took, out = _timed(lambda: oa.responses.create(model="gemini-2.5-flash", input="hi"))
        assert took < WITHIN and getattr(out, "status", None) == "completed", (took, out)
        mine = openai.OpenAI(base_url=url + "/v1", api_key=A, max_retries=0, timeout=30)
        with pytest.raises(openai.RateLimitError) as e:  # A's 51st, in the openai SDK's own terms
            mine.responses.create(model="gemini-2.5-flash", input="hi")
        assert "--max-in-flight-per-key" in e.value.message and e.value.response.headers["retry-after"] == "1"
    finally:
        holder.stop()


def test_background_runs_are_capped_per_key(serve) -> None:
    url = serve("--api-key", A, "--api-key", B, "--max-background-per-key", "5")
    mine = openai.OpenAI(base_url=url + "/v1", api_key=A, max_retries=0, timeout=30)
    runs = [mine.responses.create(model="gemini-2.5-flash", input=SLOW, background=True) for _ in range(5)]
    with pytest.raises(openai.RateLimitError) as e:
        mine.responses.create(model="gemini-2.5-flash", input=SLOW, background=True)
    assert "--max-background-per-key" in e.value.message and e.value.response.headers["retry-after"] == "1"
    other = openai.OpenAI(base_url=url + "/v1", api_key=B, max_retries=0, timeout=30)
    took, out = _timed(lambda: other.responses.create(model="gemini-2.5-flash", input="hi", background=True))
    assert took < WITHIN and getattr(out, "status", None) == "queued", (took, out)
    mine.responses.cancel(runs[0].id)  # a place comes free
    assert mine.responses.create(model="gemini-2.5-flash", input="hi", background=True).status == "queued"
