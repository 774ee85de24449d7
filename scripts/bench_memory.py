"""Memory of a stored `previous_response_id` chain, measured from outside in bytes.

A real `gemini-tool-proxy serve` subprocess (journal off) over the mock Gemini in a process of its own
(`--upstream mock` runs it inside the proxy, where what it keeps of every request it answered would be
counted as the proxy's), a chain of TURNS Responses
turns each adding about SIZE bytes of new input, RSS (VmRSS of /proc/PID/status) read before and after:
the growth against the bytes sent. `python scripts/bench_memory.py [TURNS ...]` prints the rows
(docs/benchmarks.md, "Memory of a stored chain"). Bytes, not time: repeatable on a loaded machine.
"""

import asyncio
import re
import sys
import tempfile
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from proxy import fast_json  # noqa: E402

SIZE = 40_000
SHORT = " [[mock:finish STOP]]"
HEADERS = {"authorization": "Bearer bench-key", "content-type": "application/json"}


def rss(pid: int) -> int:
    """The process's resident set, in bytes."""
    found = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    assert found is not None
    return int(found.group(1)) * 1024


def turn_text(i: int, size: int) -> str:
    # Distinct text per turn (nothing a compressor or an interning could share across turns).
    word = f"t{i}w"
    out, n = [], 0
    while n < size:
        piece = f"{word}{n} lorem ipsum dolor sit amet "
        out.append(piece)
        n += len(piece)
    # The mock answers a short line (it would echo the whole turn: the answer's bytes, not the input's).
    return "".join(out)[:size - len(SHORT)] + SHORT


async def chain(url: str, turns: int, size: int = SIZE, session: str = "mem") -> int:
    """Run the chain; the bytes of the request bodies sent."""
    sent = 0
    async with aiohttp.ClientSession() as s:
        parent = None
        for i in range(1, turns + 1):
            body = {"model": "gemini-2.5-flash", "input": turn_text(i, size)}
            if parent:
                body["previous_response_id"] = parent
            data = fast_json.dumps(body)
            sent += len(data)
            async with s.post(url + "/v1/responses", data=data, headers={**HEADERS, "x-gtp-session": session}) as r:
                answer = await r.read()
                if r.status != 200:
                    raise RuntimeError(f"turn {i}: {r.status} {answer[:300]!r}")
            parent = fast_json.loads(answer)["id"]
    return sent


async def metrics(url: str) -> dict[str, float]:
    async with aiohttp.ClientSession() as s, s.get(url + "/metrics") as r:
        text = await r.text()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(gtp_\w*bytes\w*(?:\{[^}]*\})?) (\S+)$", text, re.M)}


def serve(tmp: Path, upstream: str, *extra: str):
    from tests.servers import Process
    return Process(tmp, "mem-proxy", [sys.executable, "-m", "proxy", "--log-level", "WARNING", "serve",
                                      "--port", "0", "--upstream", upstream, "--journal", "off", *extra], "ready",
                   timeout=120)  # a loaded machine starts it slowly


async def _warm(url: str) -> None:
    await chain(url, 3, 1000, session="warm")  # imports, first-request paths: not the chain's memory


def measure(turns: int, size: int = SIZE, *extra: str, tmp: Path | None = None) -> dict[str, float]:
    """{"before", "after", "sent", "ratio", gtp_*bytes gauges} for one chain in a fresh process."""
    tmp = tmp or Path(tempfile.mkdtemp(prefix="gtp-mem-"))
    from tests.servers import mock_gemini
    mock, mock_url = mock_gemini(tmp)
    proc = serve(tmp, mock_url, *extra)
    try:
        url = proc.url()
        asyncio.run(_warm(url))
        before = rss(proc.proc.pid)
        sent = asyncio.run(chain(url, turns, size))
        after = rss(proc.proc.pid)
        gauges = asyncio.run(metrics(url))
    finally:
        proc.stop()
        mock.stop()
    return {"before": before, "after": after, "sent": sent, "ratio": (after - before) / sent, **gauges}


def main() -> None:
    for turns in [int(a) for a in sys.argv[1:]] or [150, 600]:
        m = measure(turns)
        gauges = ", ".join(f"{k}={v / 1e6:.1f}M" for k, v in m.items() if k.startswith("gtp_"))
        print(f"{turns} turns x {SIZE // 1000} KB: sent {m['sent'] / 1e6:.1f} MB, "
              f"RSS +{(m['after'] - m['before']) / 1e6:.1f} MB ({m['ratio']:.2f}x), {gauges}")


if __name__ == "__main__":
    main()
