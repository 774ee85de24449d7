"""The benchmark (`scripts/bench.sh`): one run, one process per server, everything against the same
mock Gemini on loopback. Prints a table of ratios and writes docs/benchmarks.md.

Rows: the mock called directly (the baseline), a null aiohttp hop (the floor of any proxy), the
front-end on Responses, Chat and native generateContent with a small and a large workload (20 tools,
50 messages), the translation core on histories of 10/100/1000 turns, and 1/2/4 instances sharing
Redis behind HAProxy. Figures: added p50 at concurrency 1 (ms over the direct call), throughput at
concurrency 32 (requests/s), and the CPU the server process used per request (ms), with ratios
against the baseline measured in the same run.
"""

import asyncio
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers import HAProxy, Process, RedisServer, free_port  # noqa: E402

LATENCY_N = int(os.environ.get("BENCH_N", "200"))
LOAD_SECONDS = float(os.environ.get("BENCH_SECONDS", "3"))
CONCURRENCY = 32
TICK = os.sysconf("SC_CLK_TCK")
KEY = {"x-goog-api-key": "bench-key", "authorization": "Bearer bench-key"}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def tools(n: int) -> list[dict]:
    return [{"type": "function", "name": f"tool_{i}", "description": f"Tool number {i} " * 4, "parameters": {
        "type": "object", "properties": {"path": {"type": "string", "description": "a path " * 8},
                                         "mode": {"type": "string", "enum": ["r", "w", "a"]},
                                         "lines": {"type": "array", "items": {"type": "integer"}},
                                         "options": {"type": "object", "properties": {"deep": {"type": "boolean"}}}},
        "required": ["path"], "additionalProperties": False}} for i in range(n)]


def history(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}: " + "lorem ipsum " * 70}
            for i in range(n)]


WORKLOADS = {"small": (tools(1), history(1)), "large": (tools(20), history(50))}


def bodies(kind: str, workload: str) -> tuple[str, dict]:
    fns, msgs = WORKLOADS[workload]
    if kind == "responses":
        return "/v1/responses", {"model": "gemini-2.5-flash", "input": msgs, "tools": fns}
    if kind == "chat":
        return "/v1/chat/completions", {"model": "gemini-2.5-flash", "messages": msgs, "tools": [
            {"type": "function", "function": {k: v for k, v in f.items() if k != "type"}} for f in fns]}
    contents = [{"role": "user" if m["role"] == "user" else "model", "parts": [{"text": m["content"]}]} for m in msgs]
    decls = [{"name": f["name"], "description": f["description"], "parametersJsonSchema": f["parameters"]}
             for f in fns]
    return "/v1beta/models/gemini-2.5-flash:generateContent", {"contents": contents,
                                                               "tools": [{"functionDeclarations": decls}]}


async def measure(url: str, body: dict, pids: list[int], via: str | None = None, ssl: object = None,
                  headers: dict[str, str] | None = None) -> dict:
    """p50 of LATENCY_N sequential requests, then requests/s and server CPU per request at CONCURRENCY
    (`via`: an HTTP proxy such as mitmdump, `ssl`: the context that trusts it)."""
    data = json.dumps(body).encode()
    headers = {**KEY, "content-type": "application/json", **(headers or {})}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONCURRENCY)) as s:
        async def one() -> None:
            async with s.post(url, data=data, headers=headers, proxy=via, ssl=ssl if ssl is not None else True) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{url}: {r.status} {(await r.text())[:300]}")
        for _ in range(20):
            await one()  # warm-up: connections, caches
        lat = []
        for _ in range(LATENCY_N):
            t = time.perf_counter()
            await one()
            lat.append(time.perf_counter() - t)
        cpu0, done, stop = sum(cpu_seconds(p) for p in pids), [0], time.perf_counter() + LOAD_SECONDS

        async def worker() -> None:
            while time.perf_counter() < stop:
                await one()
                done[0] += 1
        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        took = time.perf_counter() - t0
        cpu = sum(cpu_seconds(p) for p in pids) - cpu0
    return {"p50": statistics.median(lat) * 1000, "rps": done[0] / took, "cpu_ms": cpu * 1000 / max(1, done[0])}


async def first_event(url: str, body: dict, marker: re.Pattern[bytes]) -> float:
    """Median time (ms) until the first streamed text arrives (what `marker` finds): time to first event."""
    data = json.dumps(body).encode()
    headers = {**KEY, "content-type": "application/json"}
    times = []
    async with aiohttp.ClientSession() as s:
        for i in range(20 + LATENCY_N // 2):
            t = time.perf_counter()
            async with s.post(url, data=data, headers=headers) as r:
                seen = b""
                async for chunk in r.content.iter_any():
                    seen += chunk
                    if marker.search(seen):
                        break
                if not marker.search(seen) or r.status != 200:
                    raise RuntimeError(f"{url}: {r.status} without {marker!r}: {seen[:300]!r}")
                if i >= 20:
                    times.append(time.perf_counter() - t)
                await r.read()
    return statistics.median(times) * 1000


async def last_sent(mock_url: str) -> dict:
    async with aiohttp.ClientSession() as s, s.get(mock_url + "/mock/last") as r:
        return await r.json()


def translation_per_turn() -> dict[int, float]:
    """µs per turn of the Responses translation core (input items -> Gemini contents), 10/100/1000 turns."""
    from proxy.to_gemini.input_to_contents import input_to_contents, parse_input
    out = {}
    for n in (10, 100, 1000):
        items = history(n)
        start, reps = time.perf_counter(), max(3, 3000 // n)
        for _ in range(reps):
            input_to_contents(parse_input(items), model="gemini-2.5-flash")
        out[n] = (time.perf_counter() - start) / reps / n * 1e6
    return out


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="gtp-bench-"))
    procs: list = []
    rows: list[tuple[str, str, str, dict]] = []
    try:
        mport = free_port()
        mock = Process(tmp, "mock", [sys.executable, "-m", "proxy", "mock", "--port", str(mport)], "ready")
        procs.append(mock)
        mock_url = f"http://127.0.0.1:{mport}"
        hport = free_port()
        hop = Process(tmp, "hop", [sys.executable, str(ROOT / "scripts" / "null_hop.py"), str(hport), mock_url],
                      "ready")
        procs.append(hop)
        pport = free_port()
        proxy = Process(tmp, "proxy", [sys.executable, "-m", "proxy", "--log-level", "WARNING", "serve", "--port",
                                       str(pport), "--upstream", mock_url], "ready")
        procs.append(proxy)
        for workload in ("small", "large"):
            for kind in ("responses", "chat", "native"):
                p, body = bodies(kind, workload)
                proxied = asyncio.run(measure(f"http://127.0.0.1:{pport}" + p, body, [proxy.proc.pid]))
                # The baseline: the mock called directly with exactly what the proxy sent it.
                sent = asyncio.run(last_sent(mock_url))
                direct_path = f"/v1beta/models/{sent['model']}:generateContent"
                base = asyncio.run(measure(mock_url + direct_path, sent["body"], [mock.proc.pid]))
                rows.append((workload, kind, "direct (baseline)", base))
                if kind == "native":
                    rows.append((workload, kind, "null aiohttp hop", asyncio.run(
                        measure(f"http://127.0.0.1:{hport}" + direct_path, sent["body"], [hop.proc.pid]))))
                rows.append((workload, kind, "gemini-tool-proxy", proxied))
        ttfe = first_events(f"http://127.0.0.1:{pport}", mock_url)
        per_turn = translation_per_turn()
        redis_cost = store_cost(tmp, mock_url)
        scale = instances(tmp, mock_url)
    finally:
        for p in reversed(procs):
            p.stop()
    mitm = mitm_rows(tmp)
    report(rows, per_turn, scale, ttfe, mitm, redis_cost)


# The first text of a stream: Gemini's first SSE event, Responses' first text delta, Chat's first content delta.
FIRST_TEXT = {"direct": re.compile(rb"^data: ", re.M), "responses": re.compile(rb"response\.output_text\.delta"),
              "chat": re.compile(rb'"delta": ?\{"content"')}


def first_events(proxy_url: str, mock_url: str) -> list[tuple[str, str, float, float]]:
    """Stream time to first event through the proxy and directly (same body as the proxy sent)."""
    out = []
    for workload in ("small", "large"):
        for kind in ("responses", "chat"):
            path, body = bodies(kind, workload)
            proxied = asyncio.run(first_event(proxy_url + path, {**body, "stream": True}, FIRST_TEXT[kind]))
            sent = asyncio.run(last_sent(mock_url))
            direct = asyncio.run(first_event(f"{mock_url}/v1beta/models/{sent['model']}:streamGenerateContent?alt=sse",
                                             sent["body"], FIRST_TEXT["direct"]))
            out.append((workload, kind, direct, proxied))
    return out


def store_cost(tmp: Path, mock_url: str) -> list[tuple[str, dict]]:
    """One instance, no load balancer: the memory store against Redis (Responses, small, stored)."""
    redis = RedisServer(tmp)
    out = []
    try:
        for name, store in (("memory", "memory"), ("redis", redis.url)):
            port = free_port()
            proc = Process(tmp, f"store-{name}", [sys.executable, "-m", "proxy", "--log-level", "WARNING", "serve",
                                                  "--port", str(port), "--upstream", mock_url, "--store", store],
                           "ready")
            try:
                path, body = bodies("responses", "small")
                out.append((name, asyncio.run(measure(f"http://127.0.0.1:{port}" + path, body, [proc.proc.pid]))))
            finally:
                proc.stop()
    finally:
        redis.stop()
    return out


def mitm_rows(tmp: Path) -> list[tuple[str, str, dict]]:
    """Plain mitmdump against the addon, native generateContent over TLS (see bench_mitm.py)."""
    from scripts.bench_mitm import CAPTURED, GL, MitmBench
    bench = MitmBench(tmp)
    out = []
    try:
        plain, plain_url = bench.plain()
        addon, addon_url, frontend = bench.addon()
        url = GL + "/v1beta/models/gemini-2.5-flash:generateContent"

        def run(workload: str, name: str, proc: Process, via: str, session: bool) -> None:
            _, body = bodies("native", workload)
            out.append((workload, name, asyncio.run(measure(url, body, [proc.proc.pid], via=via, ssl=bench.client_ssl,
                                                            headers=bench.headers(session)))))
        for workload in ("small", "large"):
            run(workload, "mitmdump, routing only (baseline)", plain, plain_url, False)
            run(workload, "mitmdump + addon, no session", addon, addon_url, False)
        asyncio.run(bench.session_with_calls(addon_url, frontend, 0))
        for workload in ("small", "large"):
            run(workload, "mitmdump + addon, session tools, 0 captured calls", addon, addon_url, True)
        asyncio.run(bench.session_with_calls(addon_url, frontend, CAPTURED))
        for workload in ("small", "large"):
            run(workload, f"mitmdump + addon, session tools, {CAPTURED} captured calls", addon, addon_url, True)
    finally:
        bench.stop()
    return out


def instances(tmp: Path, mock_url: str) -> list[tuple[int, dict]]:
    """1, 2, 4 proxy instances sharing one Redis behind HAProxy, Responses chains (store on)."""
    redis = RedisServer(tmp)
    out = []
    try:
        for n in (1, 2, 4):
            fleet = []
            for i in range(n):
                port = free_port()
                fleet.append((Process(tmp, f"fleet{n}-{i}", [sys.executable, "-m", "proxy", "--log-level", "WARNING",
                                                             "serve", "--port", str(port), "--upstream", mock_url,
                                                             "--store", redis.url], "ready"),
                              f"http://127.0.0.1:{port}"))
            lb = HAProxy(tmp, [u for _, u in fleet])
            try:
                path, body = bodies("responses", "small")
                out.append((n, asyncio.run(measure(lb.url + path, body, [p.proc.pid for p, _ in fleet]))))
            finally:
                lb.stop()
                for p, _ in fleet:
                    p.stop()
    finally:
        redis.stop()
    return out


def report(rows: list, per_turn: dict[int, float], scale: list, ttfe: list, mitm: list, redis_cost: list) -> None:
    base = {(w, k): r for w, k, name, r in rows if name.startswith("direct")}
    lines = ["| workload | API | target | p50 ms | added p50 ms | req/s at 32 | throughput vs direct | "
             "CPU ms/req |", "|---|---|---|---|---|---|---|---|"]
    for workload, kind, name, r in rows:
        b = base[(workload, kind)]
        lines.append(f"| {workload} | {kind} | {name} | {r['p50']:.2f} | {r['p50'] - b['p50']:+.2f} | "
                     f"{r['rps']:.0f} | {r['rps'] / b['rps']:.2f} | {r['cpu_ms']:.2f} |")
    lines += ["", "| stream | API | direct first event ms | through the proxy ms | added ms |", "|---|---|---|---|---|"]
    lines += [f"| {w} | {k} | {d:.2f} | {p:.2f} | {p - d:+.2f} |" for w, k, d, p in ttfe]
    if mitm:
        plain = {w: r for w, name, r in mitm if "baseline" in name}
        lines += ["", "| MITM (native, TLS) | target | p50 ms | added p50 ms | req/s at 32 | throughput vs plain | "
                  "cost vs plain | CPU ms/req |", "|---|---|---|---|---|---|---|---|"]
        for w, name, r in mitm:
            b = plain[w]
            lines.append(f"| {w} | {name} | {r['p50']:.2f} | {r['p50'] - b['p50']:+.2f} | {r['rps']:.0f} | "
                         f"{r['rps'] / b['rps']:.2f} | {1 - r['rps'] / b['rps']:+.0%} | {r['cpu_ms']:.2f} |")
    if redis_cost:
        mem = redis_cost[0][1]
        lines += ["", "| one instance, Responses small | p50 ms | added p50 vs memory ms | req/s at 32 |",
                  "|---|---|---|---|"]
        lines += [f"| store {n} | {r['p50']:.2f} | {r['p50'] - mem['p50']:+.2f} | {r['rps']:.0f} |"
                  for n, r in redis_cost]
    lines += ["", "| history turns | translation µs per turn |", "|---|---|"]
    lines += [f"| {n} | {us:.1f} |" for n, us in per_turn.items()]
    if scale:
        one = scale[0][1]["rps"]
        lines += ["", "| instances (Redis + HAProxy) | req/s at 32 | vs 1 instance | p50 ms |", "|---|---|---|---|"]
        lines += [f"| {n} | {r['rps']:.0f} | {r['rps'] / one:.2f} | {r['p50']:.2f} |" for n, r in scale]
    table = "\n".join(lines)
    print(table)
    machine = (f"{platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}, "
               f"Python {platform.python_version()}")
    (ROOT / "docs").mkdir(exist_ok=True)
    (ROOT / "docs" / "benchmarks.md").write_text(
        f"# Benchmarks\n\nMeasured by `scripts/bench.sh` ({LATENCY_N} sequential requests for p50, "
        f"{LOAD_SECONDS:g} s at concurrency {CONCURRENCY} for throughput and CPU) on {machine}. Every server is one "
        f"process; the mock Gemini answers all of them. Judge ratios, not absolute numbers.\n\n{table}\n")


if __name__ == "__main__":
    main()
