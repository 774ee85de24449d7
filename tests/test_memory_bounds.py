"""Issue 8 item 6: memory bounded by bytes. A real `serve` in front of a real mock process; its RSS
is read from /proc after batches of aborted, stalled and completed 5 MB streams and of 1 MB
requests. Bounds are in bytes, never in time."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.mitm_harness import ROOT, free_port

pytestmark = pytest.mark.serial  # timing- or memory-bound: run alone (scripts/test.sh)

MB = 1 << 20
BULK = "[[mock:bulk 5000000]] a long answer"
# Generous: ten 5 MB streams read at once on a slow CI machine may leave one write pending for a
# couple of seconds, and the watchdog would then (rightly) cut a client that is in fact reading.
CLIENT_TIMEOUT = 6


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mem")
    mock_port, port = free_port(), free_port()
    env = {**os.environ, "GTP_API_KEYS": ""}
    logs = [open(tmp / "mock.log", "w"), open(tmp / "serve.log", "w")]  # noqa: SIM115 - closed below
    mock = subprocess.Popen([sys.executable, "-m", "proxy", "mock", "--port", str(mock_port)], cwd=ROOT,
                            stdout=logs[0], stderr=subprocess.STDOUT, env=env)
    serve = subprocess.Popen([sys.executable, "-m", "proxy", "serve", "--port", str(port), "--upstream",
                              f"http://127.0.0.1:{mock_port}", "--client-timeout", str(CLIENT_TIMEOUT),
                              "--store-max-bytes", "40M", "--session-max-bytes", "20M",
                              # The journal keeps at most its own bytes (tested by the next test and
                              # tests/test_inspect.py); 8M keeps it small beside the streams measured here.
                              "--journal-max-bytes", "8M"], cwd=ROOT,
                             stdout=logs[1], stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"

    async def ready(probe: str) -> None:
        async with aiohttp.ClientSession() as s:
            for _ in range(300):
                try:
                    async with s.get(probe) as r:  # any answer: it listens
                        await r.read()
                        return
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
        raise AssertionError(f"{probe} did not start")

    asyncio.run(ready(f"http://127.0.0.1:{mock_port}/mock/last"))  # a busy machine starts the mock last
    asyncio.run(ready(url + "/healthz"))
    yield serve.pid, url
    for p in (serve, mock):
        p.terminate()
        p.wait(20)
    for f in logs:
        f.close()
    assert "Traceback" not in (tmp / "serve.log").read_text()


async def _stream(s: aiohttp.ClientSession, url: str, how: str, session: str = "mem") -> None:
    body = {"model": "gemini-2.5-flash", "input": BULK, "stream": True}
    headers = {"authorization": "Bearer k", "x-gtp-session": session}
    async with s.post(url + "/v1/responses", json=body, headers=headers) as r:
        assert r.status == 200
        if how == "abort":  # read a little, then close
            await r.content.read(200_000)
        elif how == "stall":  # read nothing for longer than the client timeout
            await asyncio.sleep(CLIENT_TIMEOUT * 2)
        else:
            await r.read()


def _batch(url: str, how: str, n: int = 20) -> None:
    async def go() -> None:
        async with aiohttp.ClientSession() as s:
            await asyncio.gather(*(_stream(s, url, how, f"mem-{how}-{i}") for i in range(n)),
                                 return_exceptions=how == "stall")
        await asyncio.sleep(1.5)  # the server hands freed pages back at most once a second
    asyncio.run(go())


def test_aborted_and_stalled_streams_give_their_memory_back(served) -> None:
    pid, url = served
    _batch(url, "abort")  # warm-up: the allocator's first growth is not a leak
    base = rss(pid)
    after = []
    for _ in range(2):  # (a leak grows with every batch: two show it)
        _batch(url, "abort")
        after.append(rss(pid))
    # measured on two loaded cores (issue 60 item 7): 4.5-5.1 MiB after the aborted batches, 15.8-16.9 after the stalled
    assert max(after) - base < 48 * MB, [a // MB for a in [base, *after]]
    _batch(url, "stall")  # one batch of twenty stalled 5 MB streams, each cut by the watchdog
    after.append(rss(pid))
    assert after[-1] - base < 48 * MB, [a // MB for a in [base, *after]]


def test_completed_streams_and_big_requests_stay_within_the_store_limit(served) -> None:
    pid, url = served
    _batch(url, "full", 10)
    base = rss(pid)
    for _ in range(2):  # 100 MB of answers, each kept for previous_response_id: the store holds 40 MB
        _batch(url, "full", 10)
    grew = rss(pid) - base

    async def big_requests() -> None:
        async with aiohttp.ClientSession() as s:
            for i in range(60):  # 60 MB of input into one session (it may keep 20 MB)
                body = {"model": "gemini-2.5-flash", "input": f"[[mock:max_tokens]] {i} " + "x" * MB}
                async with s.post(url + "/v1/responses", json=body, headers={"x-gtp-session": "big",
                                                                             "authorization": "Bearer k"}) as r:
                    assert r.status == 200, await r.text()
    asyncio.run(big_requests())
    grew_more = rss(pid) - base
    # measured on two loaded cores: grew -3.1-0 MiB, grew_more 14-18 MiB
    assert grew < 100 * MB and grew_more < 160 * MB, (grew // MB, grew_more // MB)


def test_streams_in_flight_cost_at_most_twice_their_bytes(served) -> None:
    """Issue 27: twenty 5 MB Responses answers streaming at once (store false: nothing is kept) raise
    RSS by at most twice the bytes in flight. The closing events each carry the whole text; framed
    all at once they held several copies of every answer (3.3x measured before)."""
    pid, url = served
    body = {"model": "gemini-2.5-flash", "input": BULK, "stream": True, "store": False}

    async def go(n: int) -> int:
        peak, done = 0, asyncio.Event()

        async def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, rss(pid))
                await asyncio.sleep(0.005)

        async def one(s: aiohttp.ClientSession) -> None:
            async with s.post(url + "/v1/responses", json=body, headers={"authorization": "Bearer k"}) as r:
                assert r.status == 200
                async for _ in r.content.iter_chunked(1 << 16):
                    pass
        sampler = asyncio.create_task(sample())
        async with aiohttp.ClientSession() as s:
            await asyncio.gather(*(one(s) for _ in range(n)))
        done.set()
        await sampler
        return peak

    asyncio.run(go(2))  # warm-up
    base = rss(pid)
    peak = asyncio.run(go(20))
    # measured on two loaded cores: 6-46 MiB of the 191 MiB bound
    assert peak - base <= 2 * 20 * 5_000_000, ((peak - base) // MB, base // MB)


# Turns before the growth is measured from (their store entries and exchanges weigh some 100 KB).
WARM_TURNS = 64


def test_many_small_stored_turns_keep_rss_near_the_byte_budget(tmp_path) -> None:
    """Issue 24 item 10: the budget counts what the process holds. Small turns used to cost 5x their
    JSON (orjson's 8 KiB buffers kept whole, uncounted per-entry objects): with a 2 MiB budget, 3,000
    turns (the store full three times over) grow RSS by at most 1.3x the budget, plus 2.5 MiB (before,
    the same turns grew it by about 10 MiB). The exchange journal (issue 28) keeps 1 MiB more beside
    it, and its bytes count the same way. Measured from after WARM_TURNS turns: what the first requests
    import and build is not what the store holds. Measured from start-up instead, the growth depended
    on how the modules were loaded: compiled from source, as where PYTHONDONTWRITEBYTECODE is set and
    no bytecode was installed, start-up leaves freed memory the turns then reuse (4.8 MiB grown); from
    bytecode, as a pip install leaves it, it does not (6.0 MiB)."""
    budget, journal = 2 * MB, 1 * MB
    mock_port, port = free_port(), free_port()
    env = {**os.environ, "GTP_API_KEYS": ""}
    with open(tmp_path / "serve.log", "w") as log:
        mock = subprocess.Popen([sys.executable, "-m", "proxy", "mock", "--port", str(mock_port)], cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT, env=env)
        serve = subprocess.Popen([sys.executable, "-m", "proxy", "serve", "--port", str(port), "--upstream",
                                  f"http://127.0.0.1:{mock_port}", "--store-max-bytes", str(budget),
                                  "--session-max-bytes", str(budget), "--journal-max-bytes", str(journal)],
                                 cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=log, env=env, text=True)
        try:
            assert "ready on" in serve.stdout.readline()

            async def turns(first: int, n: int) -> None:
                async with aiohttp.ClientSession() as s:
                    gate = asyncio.Semaphore(16)

                    async def one(i: int) -> None:
                        async with gate, s.post(f"http://127.0.0.1:{port}/v1/responses", json={
                                "model": "gemini-2.5-flash", "input": f"turn {i} " + "x" * 200}, headers={
                                "authorization": "Bearer k", "x-gtp-session": f"s{i % 50}"}) as r:
                            assert r.status == 200, await r.text()
                    await asyncio.gather(*(one(i) for i in range(first, first + n)))
            asyncio.run(turns(0, WARM_TURNS))
            base = rss(serve.pid)
            asyncio.run(turns(WARM_TURNS, 3000))
            grew = rss(serve.pid) - base
            # 2.5 MiB over 1.3x the budgets (6.4 MiB): here 3.8-3.9 MiB grew in four quiet runs and in three
            # with both cores loaded (issue 60 item 7), and 5.0 MiB once in a fresh-clone CI run, which failed
            # the 4.9 MiB of a 1 MiB margin and came within 8 % of 1.5 MiB's 5.4: 6.4 is 28 % over it, and
            # under the 10 MiB the same turns grew before.
            assert grew <= 1.3 * (budget + journal) + 2.5 * MB, \
                f"RSS grew {grew / MB:.1f} MiB for a {budget // MB} MiB budget and a {journal // MB} MiB journal"
        finally:
            for p in (serve, mock):
                p.terminate()
                p.wait(20)
