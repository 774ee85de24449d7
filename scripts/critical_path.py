"""Where one request's time goes on the path its client waits for, at concurrency 1 (issue 62 item 3:
"where a goal is missed, the profile that shows why"). py-spy (profile_serve.py) samples a server kept
busy, with warm caches; at c=1 the core idles between requests and the same code runs slower, so
this measures the idle case itself, with timestamps instead of samples.

The proxy and the null hop (scripts/null_hop.py, sent the body the proxy sent the mock) each run
under a shim of this script that notes, for every request, when its first bytes arrived (aiohttp's
data_received), when the application got it (Application._handle), when the proxy's route began
and ended reading the body (read_json), when the upstream request left (ClientSession._request),
when its answer's headers came back, and when the first byte of the answer to the client was
written. Requests alternate between the two, each 3 ms after the one before, in an order reversed
every round (bench_tails.py's rotation at c=1). Each segment is the median over the rounds, in us.

    python scripts/critical_path.py [--rounds N] [--runs N] [--write] [--only small|large] [--kinds ...]

--write replaces (or appends) its section of docs/benchmarks.md: each cell the median of the runs.

Segments: 'parse' (bytes in -> the application: aiohttp's own), 'admit' (the proxy's middleware:
request id, guard, client key, in-flight and fair-share bookkeeping, up to the route reading the
body), 'read' (the body read, parsed and its tools checked), 'to Gemini' (validation, the history's
conversion, the Gemini body built and sent; the hop: its whole handler up to its upstream call),
'upstream' (the mock), 'answer' (the answer read, translated and written).
"""

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.bench import KEY, last_sent  # noqa: E402
from scripts.bench_tails import LARGE, PATHS, SMALL, body, load, numbered  # noqa: E402
from scripts.doc_section import machine, put_section  # noqa: E402
from tests.servers import Process, free_port  # noqa: E402

SETTLE = 0.003
WARM = 60
SEGMENTS = (("parse", "in", "app"), ("admit", "app", "read"), ("read", "read", "read_end"),
            ("to Gemini", "read_end", "up"), ("upstream", "up", "up_back"), ("answer", "up_back", "out"))
ROUTES = ("proxy.responses.routes", "proxy.chat.routes", "proxy.anthropic.routes")
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- critical_path: start -->", "<!-- critical_path: end -->"
NAMES = {"responses": "Responses", "chat": "Chat", "anthropic": "Anthropic"}


def shim(out: str, argv: list[str]) -> None:
    """Run `argv` (the proxy's arguments, or a script and its) with the edges noted; SIGUSR1 starts
    the notes, SIGUSR2 writes them to `out` as JSON (a list of dicts, one per request)."""
    import importlib
    import runpy

    from aiohttp import client, http_writer, web_app, web_protocol

    now = time.perf_counter_ns
    notes: list[dict[str, int]] = []
    state = {"on": False, "cur": None}

    def edge(name: str) -> None:
        cur = state["cur"]
        if state["on"] and cur is not None and name not in cur:
            cur[name] = now()

    received = web_protocol.RequestHandler.data_received

    def data_received(self, data):  # noqa: ANN001, ANN202
        if state["on"] and state["cur"] is None:  # a request's first bytes (c=1: one request at a time)
            state["cur"] = {"in": now()}
        return received(self, data)

    handle = web_app.Application._handle

    async def app_handle(self, request):  # noqa: ANN001, ANN202
        edge("app")
        return await handle(self, request)

    request = client.ClientSession._request

    async def client_request(self, *a, **k):  # noqa: ANN002, ANN003, ANN202
        edge("up")
        resp = await request(self, *a, **k)
        edge("up_back")
        return resp

    def written(orig):  # noqa: ANN001, ANN202
        def write(self, data):  # noqa: ANN001, ANN202
            if isinstance(self._protocol, web_protocol.RequestHandler) and state["cur"] is not None:
                if state["on"] and "out" not in state["cur"]:
                    state["cur"]["out"] = now()
                    notes.append(state["cur"])
                state["cur"] = None
            return orig(self, data)
        return write

    web_protocol.RequestHandler.data_received = data_received
    web_app.Application._handle = app_handle
    client.ClientSession._request = client_request
    http_writer.StreamWriter._write = written(http_writer.StreamWriter._write)
    http_writer.StreamWriter._writelines = written(http_writer.StreamWriter._writelines)
    if not argv[0].endswith(".py"):  # the proxy: its routes' body reading too
        for name in ROUTES:
            module = importlib.import_module(name)

            def timed(orig):  # noqa: ANN001, ANN202
                async def read_json(*a, **k):  # noqa: ANN002, ANN003, ANN202
                    edge("read")
                    try:
                        return await orig(*a, **k)
                    finally:
                        edge("read_end")
                return read_json
            module.read_json = timed(module.read_json)

    def start(*_: object) -> None:
        state["on"], state["cur"] = True, None

    def dump(*_: object) -> None:
        state["on"] = False
        Path(out).write_text(json.dumps(notes))

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, dump)
    if argv[0].endswith(".py"):
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    else:
        sys.argv = ["proxy", *argv]
        runpy.run_module("proxy", run_name="__main__", alter_sys=True)


def segments(notes: list[dict[str, int]]) -> dict[str, float]:
    """Each segment's median in us over the requests that have both its edges (the hop has no
    'admit' and 'read': its 'to Gemini' runs from the application to its upstream call)."""
    out = {}
    for name, a, b in SEGMENTS:
        if name == "to Gemini":
            spans = [(n[b] - n.get(a, n["app"])) / 1e3 for n in notes if b in n and "app" in n]
        else:
            spans = [(n[b] - n[a]) / 1e3 for n in notes if a in n and b in n]
        out[name] = statistics.median(spans) if spans else 0.0
    out["total"] = statistics.median([(n["out"] - n["in"]) / 1e3 for n in notes])
    return out


async def rotation(targets: dict[str, tuple[str, object]], pids: dict[str, int], rounds: int) -> dict[str, list]:
    lat: dict[str, list[float]] = {name: [] for name in targets}
    headers = {**KEY, "content-type": "application/json"}
    async with aiohttp.ClientSession() as s:
        async def one(name: str, n: int) -> float:
            url, content = targets[name]
            start = time.perf_counter()
            async with s.post(url, data=content(n), headers=headers) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{name}: {r.status}")
            return time.perf_counter() - start

        for timed in (False, True):
            if timed:
                for pid in pids.values():
                    os.kill(pid, signal.SIGUSR1)
                await asyncio.sleep(0.1)
            for n in range(rounds if timed else WARM):
                order = list(targets) if n % 2 else list(targets)[::-1]
                for name in order:
                    took = await one(name, n)
                    if timed:
                        lat[name].append(took)
                    await asyncio.sleep(SETTLE)
        for pid in pids.values():
            os.kill(pid, signal.SIGUSR2)
        await asyncio.sleep(0.3)
    return lat


def measure(kind: str, workload: str, rounds: int, tmp: Path) -> dict:
    mport = free_port()
    mock_url = f"http://127.0.0.1:{mport}"
    procs = [Process(tmp, f"cp-mock-{kind}-{workload}", [sys.executable, "-m", "proxy", "mock", "--port", str(mport)],
                     "ready")]
    try:
        ports, notes = {name: free_port() for name in ("proxy", "hop")}, {}
        cmd = {"proxy": ["--log-level", "WARNING", "serve", "--port", str(ports["proxy"]), "--upstream", mock_url],
               "hop": [str(ROOT / "scripts" / "null_hop.py"), str(ports["hop"]), mock_url]}
        for name in ports:
            notes[name] = tmp / f"cp-{name}-{kind}-{workload}.json"
            procs.append(Process(tmp, f"cp-{name}-{kind}-{workload}",
                                 [sys.executable, __file__, "--shim", str(notes[name]), "--", *cmd[name]], "ready"))
        client_body = body(kind, SMALL if workload == "small" else LARGE)
        proxy_url = f"http://127.0.0.1:{ports['proxy']}" + PATHS[kind]

        async def sent() -> dict:
            async with aiohttp.ClientSession() as s, s.post(proxy_url, json=client_body, headers=KEY) as r:
                await r.read()
            return (await last_sent(mock_url))["body"]
        targets = {"proxy": (proxy_url, numbered(client_body)),
                   "hop": (f"http://127.0.0.1:{ports['hop']}" + PATHS["native"], numbered(asyncio.run(sent())))}
        pids = {"proxy": procs[1].proc.pid, "hop": procs[2].proc.pid}
        lat = asyncio.run(rotation(targets, pids, rounds))
        for _ in range(50):
            if all(p.exists() for p in notes.values()):
                break
            time.sleep(0.1)
        out = {name: segments(json.loads(notes[name].read_text())) for name in notes}
        out["paired"] = statistics.median(a - b for a, b in zip(lat["proxy"], lat["hop"], strict=True)) * 1e6
        return out
    finally:
        for p in reversed(procs):
            p.stop()


def table(runs: list[dict[tuple[str, str], dict]]) -> list[str]:
    """Rows of (body, API): each segment's 'proxy / hop' and the difference, medians of the runs."""
    names = [n for n, _, _ in SEGMENTS] + ["total"]
    lines = ["| body | API | " + " | ".join(f"{n}: proxy / hop (+)" for n in names) + " | paired proxy − hop |",
             "|---|---|" + "---|" * (len(names) + 1)]
    for key in runs[0]:
        def med(who: str, n: str, key: tuple[str, str] = key) -> float:
            return statistics.median(r[key][who][n] for r in runs)
        cells = [f"{med('proxy', n):.0f} / {med('hop', n):.0f} ({med('proxy', n) - med('hop', n):+.0f})"
                 for n in names]
        paired = statistics.median(r[key]["paired"] for r in runs)
        lines.append(f"| {key[0]} | {NAMES[key[1]]} | " + " | ".join(cells) + f" | {paired:+.0f} |")
    return lines


def write(runs: list[dict], loads: list[str], rounds: int) -> None:
    lines = [START, "## Where a request's time goes at c=1 (issue 62 item 3)", "",
             f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/critical_path.py` on {machine()}; "
             f"{len(runs)} run(s) of {rounds} rounds, the load before each: " + "; ".join(f"`{x}`" for x in loads)
             + ".", "",
             "The proxy and the null hop, in one rotation at concurrency 1 (each request 3 ms after the one before, "
             "the order reversed every round; the hop sent the body the proxy sent the mock), each with timestamps "
             "at the edges of every request: its first bytes in, the application's handler, the route's body read "
             "(the proxy), the upstream request out, its answer's headers back, the first byte of the answer out. "
             "Microseconds, the median over the rounds (each cell the median of the runs). 'parse': aiohttp's "
             "own, bytes in to the handler; 'admit': the proxy's middleware (request id, guard, client key, fair "
             "share) up to the route's read; 'read': the body read, parsed and its tools checked; 'to Gemini': "
             "validation, the history's conversion, the Gemini body built and sent (the hop: its whole handler up to "
             "its upstream call); 'upstream': the mock; 'answer': the answer read, translated and written. The "
             "bodies are bench_tails.py's (small: one message and the client's shell tool; large: the agent's "
             "50-message history, system prompt and 20 real tools).", "", *table(runs), "", END]
    put_section(DOC, START, END, "\n".join(lines))


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--shim":
        shim(sys.argv[2], sys.argv[4:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=400)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--write", action="store_true", help="write docs/benchmarks.md's section")
    p.add_argument("--only", choices=("small", "large"))
    p.add_argument("--kinds", default="responses,chat,anthropic")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gtp-critical-"))
    runs, loads = [], []
    for i in range(args.runs):
        loads.append(load())
        print(f"run {i + 1}/{args.runs}: {loads[-1]}", flush=True)
        runs.append({(w, k): measure(k, w, args.rounds, tmp) for w in ([args.only] if args.only else
                                                                        ["small", "large"])
                     for k in args.kinds.split(",")})
        print("\n".join(table(runs[-1:])), flush=True)
    if args.runs > 1:
        print("\n".join(table(runs)))
    if args.write:
        write(runs, loads, args.rounds)


if __name__ == "__main__":
    main()
