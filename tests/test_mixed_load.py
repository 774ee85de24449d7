"""Issue 57 item 9: under mixed load, an Anthropic stream is served as fast as every other protocol's.
Its keep-alive pings once wrapped each of Gemini's chunks in a task of its own and an asyncio.wait:
at 64 concurrent streams Anthropic's p50 was 771 ms against 94-167 ms for the others (equal when
alone). Now one timer per stream writes a ping when the stream was quiet (server/stream.py).

A real `serve` (its own process and GIL) and the mock. The load, 64 streams at once over the four
protocols in turn, comes from a process of its own with a plain aiohttp client: the SDKs' own
parsing costs more than the proxy's work and, in the same two cores, hid the difference (measured:
3.6x with the per-chunk tasks through aiohttp, 1.5x through the SDKs). The anthropic SDK streams
beside the load and reads every event of its answer."""

import asyncio
import json
import statistics
import subprocess
import sys
import time

import anthropic
import pytest

from tests.mitm_harness import ROOT
from tests.servers import mock_gemini, proxy_instance

pytestmark = pytest.mark.serial  # timing-bound: run alone (scripts/test.sh)

CONCURRENCY = 64
ROUNDS = 3  # requests per protocol per task
PROMPT = "say something fairly long so that the answer comes in a few chunks, one after another"
REQUESTS = {
    "responses": ("/v1/responses", {"model": "gemini-2.5-flash", "input": PROMPT, "stream": True}),
    "chat": ("/v1/chat/completions", {"model": "gemini-2.5-flash", "stream": True,
                                      "messages": [{"role": "user", "content": PROMPT}]}),
    "anthropic": ("/v1/messages", {"model": "gemini-2.5-flash", "max_tokens": 200, "stream": True,
                                   "messages": [{"role": "user", "content": PROMPT}]}),
    "gemini": ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
               {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}),
}
ENDS = {"responses": b"response.completed", "chat": b"[DONE]", "anthropic": b"message_stop", "gemini": b"STOP"}


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("mixed-load")
    mock, mock_url = mock_gemini(tmp)
    proc, url = proxy_instance(tmp, "serve", mock_url)
    yield url
    proc.stop()
    mock.stop()


async def _load(url: str) -> dict[str, list[float]]:
    """Seconds each stream took, by protocol (run in a process of its own: python -m tests.test_mixed_load URL)."""
    import aiohttp

    took: dict[str, list[float]] = {name: [] for name in REQUESTS}
    names = list(REQUESTS)
    headers = {"authorization": "Bearer k", "x-api-key": "k", "x-goog-api-key": "k"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        async def one(name: str) -> float:
            path, body = REQUESTS[name]
            start = time.monotonic()
            async with http.post(url + path, json=body, headers=headers) as r:
                data = await r.read()
            assert r.status == 200 and ENDS[name] in data, (name, r.status, data[-300:])
            return time.monotonic() - start

        for name in names:  # warm: connections, the proxy's caches
            await one(name)

        async def worker(i: int) -> None:
            for r in range(ROUNDS * len(names)):
                name = names[(i + r) % len(names)]
                took[name].append(await one(name))

        await asyncio.gather(*(worker(i) for i in range(CONCURRENCY)))
    return took


def test_anthropic_streams_keep_pace_under_mixed_load(serve: str) -> None:
    load = subprocess.Popen([sys.executable, "-m", "tests.test_mixed_load", serve], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    sdk = anthropic.Anthropic(base_url=serve, api_key="k", max_retries=0, timeout=120,
                              _strict_response_validation=True)
    answered = 0
    while load.poll() is None:  # the SDK's own streams, beside the load
        with sdk.messages.stream(model="gemini-2.5-flash", max_tokens=200,
                                 messages=[{"role": "user", "content": PROMPT}]) as s:
            final = s.get_final_message()
        assert final.stop_reason == "end_turn" and final.content[0].text
        answered += 1
    out, err = load.communicate(timeout=300)
    assert load.returncode == 0, err[-3000:]
    p50 = {name: statistics.median(values) for name, values in json.loads(out).items()}
    others = statistics.median([v for n, v in p50.items() if n != "anthropic"])
    shown = {n: round(v * 1000) for n, v in p50.items()}
    # 1.5x, as the issue asks (the per-chunk tasks cost 3-7x). Measured on two loaded cores: 0.98-1.03x.
    assert p50["anthropic"] <= 1.5 * others, shown
    assert answered >= 1


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_load(sys.argv[1]))))
