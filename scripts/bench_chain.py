"""A long `previous_response_id` chain (`scripts/bench.sh` runs it; `python scripts/bench_chain.py`
alone prints the rows): TURNS stored turns of about 2 KB each, and the latency of selected turns
through the proxy against the mock answering the very body the proxy sent it (the paired baseline).
The whole history still goes to Gemini each turn; what the proxy adds must not grow with it."""

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from proxy import fast_json  # noqa: E402

TURNS = int(os.environ.get("BENCH_CHAIN_TURNS", "500"))
MEASURED = (1, 100, TURNS)
REPEAT = 15  # each measured turn is asked again this many times from the same parent (and its baseline too)
KEY = {"authorization": "Bearer bench-key", "x-goog-api-key": "bench-key", "content-type": "application/json"}


def turn_body(i: int, parent: str | None) -> dict:
    text = f"turn {i}: " + "the quick brown fox jumps over the lazy dog " * 46  # ~2 KB
    body = {"model": "gemini-2.5-flash", "input": text}
    if parent:
        body["previous_response_id"] = parent
    return body


async def chain(proxy_url: str, mock_url: str) -> list[tuple[int, float, float]]:
    """(turn, proxy ms, added ms): each measured turn's median over REPEAT asks, alternating with the
    mock asked directly with the body the proxy sent it."""
    out = []
    async with aiohttp.ClientSession() as s:
        async def post(url: str, body: dict) -> tuple[float, dict]:
            start = time.perf_counter()
            async with s.post(url, data=fast_json.dumps(body), headers=KEY) as r:
                data = await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{url}: {r.status} {data[:300]!r}")
            return time.perf_counter() - start, fast_json.loads(data)

        parent = None
        for i in range(1, TURNS + 1):
            body = turn_body(i, parent)
            took, answer = await post(proxy_url + "/v1/responses", body)
            if i in MEASURED:
                async with s.get(mock_url + "/mock/last") as r:
                    sent = await r.json()
                direct = f"{mock_url}/v1beta/models/{sent['model']}:generateContent"
                proxied, diffs = [], []
                for _ in range(REPEAT):
                    a, _ = await post(proxy_url + "/v1/responses", body)
                    b, _ = await post(direct, sent["body"])
                    proxied.append(a)
                    diffs.append(a - b)
                out.append((i, statistics.median(proxied) * 1000, statistics.median(diffs) * 1000))
            parent = answer["id"]
    return out


def main(tmp: Path | None = None) -> list[tuple[int, float, float]]:
    import tempfile

    from tests.servers import Process, free_port
    tmp = tmp or Path(tempfile.mkdtemp(prefix="gtp-chain-"))
    mport, pport = free_port(), free_port()
    mock = Process(tmp, "chain-mock", [sys.executable, "-m", "proxy", "mock", "--port", str(mport)], "ready")
    try:
        proxy = Process(tmp, "chain-proxy", [sys.executable, "-m", "proxy", "--log-level", "WARNING", "serve",
                                             "--port", str(pport), "--upstream", f"http://127.0.0.1:{mport}"],
                        "ready")
        try:
            return asyncio.run(chain(f"http://127.0.0.1:{pport}", f"http://127.0.0.1:{mport}"))
        finally:
            proxy.stop()
    finally:
        mock.stop()


if __name__ == "__main__":
    for turn, ms, added in main():
        print(f"turn {turn}: {ms:.2f} ms, added {added:+.2f} ms")
