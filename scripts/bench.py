"""The benchmark (`scripts/bench.sh`): one run, one process per server, everything against the same
mock Gemini on loopback. Prints a table of ratios and writes docs/benchmarks.md.

Rows: the mock called directly (the baseline), a null aiohttp hop (the floor of any proxy), the
front-end on Responses, Chat and native generateContent with a small and a large workload (20 tools,
50 messages), LiteLLM's proxy on the same workloads (when bench.sh installed it), stream time to
first event, plain mitmdump against the addon (bench_mitm.py), one instance on memory against Redis,
the translation core on histories of 10/100/1000 turns, and 1/2/4 instances sharing Redis behind
HAProxy. Figures: added p50 at concurrency 1 (the median of paired differences against the
baseline), throughput at concurrency 32 (requests/s), and the CPU the server process used per
request (ms), with ratios against the baseline measured in the same run.
"""

import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.doc_section import machine, put_section  # noqa: E402
from tests.servers import HAProxy, Process, RedisServer, free_port  # noqa: E402

LATENCY_N = int(os.environ.get("BENCH_N", "200"))
# The MITM rows' CPU ratio is the median of this many alternated rounds: one round of each row varied
# by +-0.1 from run to run, as much as the addon's whole cost on a small flow.
MITM_ROUNDS = int(os.environ.get("BENCH_MITM_ROUNDS", "3"))
CPU_ROUNDS = int(os.environ.get("BENCH_CPU_ROUNDS", "3"))  # paired rounds of the CPU ratio against LiteLLM
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


# In a body measure() sends, replaced by the request's own number: each request differs from the one
# before (as an agent's turns do: the same history, and one new message).
TURN = "{turn}"


def numbered(body: dict) -> Callable[[int], bytes]:
    """The body as sent for request number n: its JSON with TURN replaced by n (as it is, without TURN)."""
    parts = json.dumps(body).encode().split(TURN.encode())
    return lambda n: str(n).encode().join(parts)


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
                  headers: dict[str, str] | None = None, sequential: int = LATENCY_N) -> dict:
    """p50 of `sequential` requests one at a time (LATENCY_N; 0: no p50), then requests/s and server
    CPU per request at CONCURRENCY (`via`: an HTTP proxy such as mitmdump, `ssl`: the context that
    trusts it). A body holding TURN is sent with each request's number in its place."""
    content_of = numbered(body)
    sent = [0]
    headers = {**KEY, "content-type": "application/json", **(headers or {})}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONCURRENCY)) as s:
        async def one() -> None:
            sent[0] += 1
            async with s.post(url, data=content_of(sent[0]), headers=headers, proxy=via,
                              ssl=ssl if ssl is not None else True) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{url}: {r.status} {(await r.text())[:300]}")
        for _ in range(20):
            await one()  # warm-up: connections, caches
        lat = []
        for _ in range(sequential):
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
    return {"p50": statistics.median(lat) * 1000 if lat else None, "rps": done[0] / took,
            "cpu_ms": cpu * 1000 / max(1, done[0]), "count": sequential + 20 + done[0]}


@dataclass
class Target:
    """One way to send the same request: a URL, its body, and optionally an HTTP proxy in between."""
    url: str
    body: dict
    headers: dict[str, str] = field(default_factory=dict)
    via: str | None = None
    ssl: object = True
    first: re.Pattern[bytes] | None = None  # time only until the stream shows this (time to first event)


async def paired_added(a: Target, b: Target, n: int = LATENCY_N, warm: int = 10) -> float:
    """Median over LATENCY_N pairs of (time through `a` - time through `b`), requests alternating
    (a, b), (b, a), ...: a drift of the machine during the run falls on both sides and cancels."""
    async with aiohttp.ClientSession() as s:
        async def timed(t: Target) -> float:
            start = time.perf_counter()
            async with s.post(t.url, data=json.dumps(t.body).encode(), proxy=t.via, ssl=t.ssl,
                              headers={**KEY, "content-type": "application/json", **t.headers}) as r:
                if r.status != 200:
                    raise RuntimeError(f"{t.url}: {r.status} {(await r.text())[:300]}")
                if t.first is None:
                    await r.read()
                    return time.perf_counter() - start
                seen = b""
                async for chunk in r.content.iter_any():
                    seen += chunk
                    if t.first.search(seen):
                        took = time.perf_counter() - start
                        await r.read()
                        return took
                raise RuntimeError(f"{t.url}: the stream ended without {t.first.pattern!r}: {seen[:300]!r}")
        for _ in range(warm):
            await timed(a)
            await timed(b)
        diffs = [0.0]
        for i in range(n):
            if i % 2:
                tb, ta = await timed(b), await timed(a)
            else:
                ta, tb = await timed(a), await timed(b)
            diffs.append(ta - tb)
    return statistics.median(diffs[1:] or diffs) * 1000


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
                direct = Target(mock_url + direct_path, sent["body"])
                if kind == "native":
                    hop_row = asyncio.run(measure(f"http://127.0.0.1:{hport}" + direct_path, sent["body"],
                                                  [hop.proc.pid]))
                    hop_row["added"] = asyncio.run(paired_added(
                        Target(f"http://127.0.0.1:{hport}" + direct_path, sent["body"]), direct))
                    rows.append((workload, kind, "null aiohttp hop", hop_row))
                proxied["added"] = asyncio.run(paired_added(Target(f"http://127.0.0.1:{pport}" + p, body), direct))
                # Beyond the floor, paired too: the proxy (the client's body) against the null hop (the
                # body the proxy sent), alternated, rather than two paired series taken minutes apart.
                proxied["beyond"] = asyncio.run(paired_added(Target(f"http://127.0.0.1:{pport}" + p, body), Target(
                    f"http://127.0.0.1:{hport}" + direct_path, sent["body"])))
                rows.append((workload, kind, "gemini-tool-proxy", proxied))
        rows += litellm_rows(tmp, mock_url, (f"http://127.0.0.1:{pport}", proxy.proc.pid))
        ttfe = first_events(f"http://127.0.0.1:{pport}", mock_url, f"http://127.0.0.1:{hport}")
        per_turn = translation_per_turn()
        redis_cost = store_cost(tmp, mock_url)
        scale = instances(tmp, mock_url)
        in_flight = rss_in_flight(tmp, mock_url)
    finally:
        for p in reversed(procs):
            p.stop()
    mitm = mitm_rows(tmp)
    from scripts.bench_chain import main as chain_rows
    chain = chain_rows(tmp)
    report(rows, per_turn, scale, ttfe, mitm, redis_cost, in_flight, chain)


LITELLM_KEY = "sk-bench-master-key-0123456789"


def litellm_rows(tmp: Path, mock_url: str, ours: tuple[str, int]) -> list[tuple[str, str, str, dict]]:
    """LiteLLM's proxy (installed by bench.sh into .bench/litellm) on the same mock, one worker. Its
    baseline is the mock called directly with the body LiteLLM sent, so each proxy is charged only
    for itself. The CPU ratio is paired (cpu_ratio): `ours` is the proxy's URL and pid."""
    binary = os.environ.get("BENCH_LITELLM_BIN")
    if not binary:
        return []
    config = tmp / "litellm.yaml"
    config.write_text(f"""model_list:
  - model_name: gemini-2.5-flash
    litellm_params: {{model: gemini/gemini-2.5-flash, api_base: "{mock_url}/v1beta", api_key: bench-key}}
litellm_settings: {{drop_params: true}}
router_settings: {{disable_cooldowns: true}}
general_settings: {{master_key: {LITELLM_KEY}}}
""")
    port = free_port()
    proc = Process(tmp, "litellm", [binary, "--config", str(config), "--port", str(port), "--host", "127.0.0.1",
                                    "--num_workers", "1"], "Uvicorn running", timeout=180)
    out = []
    try:
        for workload in ("small", "large"):
            for kind in ("responses", "chat"):
                path, body = bodies(kind, workload)
                r = asyncio.run(measure(f"http://127.0.0.1:{port}" + path, body, [proc.proc.pid],
                                        headers={"authorization": f"Bearer {LITELLM_KEY}"}))
                sent = asyncio.run(last_sent(mock_url))
                base = asyncio.run(measure(f"{mock_url}/v1beta/models/{sent['model']}:generateContent", sent["body"],
                                           []))
                r["paired"] = cpu_ratio(f"http://127.0.0.1:{port}" + path, proc.proc.pid, ours[0] + path,
                                        ours[1], body, {"authorization": f"Bearer {LITELLM_KEY}"})
                out.append((workload, kind, "LiteLLM, direct with its body", base))
                out.append((workload, kind, "LiteLLM proxy", r))
    finally:
        proc.stop()
    return out


def cpu_ratio(theirs: str, their_pid: int, ours: str, our_pid: int, body: dict, their_headers: dict[str, str]
              ) -> tuple[float, float, float]:
    """Their CPU per request over ours, measured in CPU_ROUNDS rounds, each loading both one after the
    other (in alternating order): the median of the rounds' ratios and their lowest and highest. The
    two were measured minutes apart before, and the machine drifts by as much as 10 % in that time."""
    ratios = []
    for i in range(CPU_ROUNDS):
        order = [(theirs, their_pid, their_headers), (ours, our_pid, None)]
        got = {}
        for url, pid, headers in order if i % 2 == 0 else order[::-1]:
            got[url] = asyncio.run(measure(url, body, [pid], headers=headers, sequential=0))["cpu_ms"]
        ratios.append(got[theirs] / got[ours])
    ratios.sort()
    return ratios[len(ratios) // 2], ratios[0], ratios[-1]


# The first text of a stream: Gemini's first SSE event, Responses' first text delta, Chat's first content delta.
FIRST_TEXT = {"direct": re.compile(rb"^data: ", re.M), "responses": re.compile(rb"response\.output_text\.delta"),
              "chat": re.compile(rb'"delta": ?\{"content"')}


def first_events(proxy_url: str, mock_url: str, hop_url: str) -> list[tuple[str, str, float, float]]:
    """Stream time to first event through the proxy against the mock's own (same body as the proxy
    sent it), and against the null hop's (which forwards the stream whole), as paired differences."""
    out = []
    for workload in ("small", "large"):
        for kind in ("responses", "chat"):
            path, body = bodies(kind, workload)
            proxied = Target(proxy_url + path, {**body, "stream": True}, first=FIRST_TEXT[kind])
            asyncio.run(paired_added(proxied, proxied, n=0, warm=1))  # so that the mock has seen the body
            sent = asyncio.run(last_sent(mock_url))
            stream = f"/v1beta/models/{sent['model']}:streamGenerateContent?alt=sse"
            direct = Target(mock_url + stream, sent["body"], first=FIRST_TEXT["direct"])
            hop = Target(hop_url + stream, sent["body"], first=FIRST_TEXT["direct"])
            out.append((workload, kind, asyncio.run(paired_added(proxied, direct)),
                        asyncio.run(paired_added(proxied, hop))))
    return out


def store_cost(tmp: Path, mock_url: str) -> list[tuple[str, dict]]:
    """One instance each, no load balancer: the memory store against Redis (Responses, small, stored);
    Redis's added latency as paired differences. Redis as Debian configures it (appendfsync everysec)
    and with a disk flush before every answer (appendfsync always, as the restart tests run it). Each
    row also counts the Redis commands the proxy sent per request (round trips: EVALSHA, one script)."""
    out, procs, urls = [], [], {}
    path, body = bodies("responses", "small")
    servers = {"redis": RedisServer(tmp / "r1", fsync="everysec"), "redis, fsync always": RedisServer(tmp / "r2")}
    try:
        for name, store in (("memory", "memory"), *((n, r.url) for n, r in servers.items())):
            port = free_port()
            procs.append(Process(tmp, f"store-{name.split(',')[0]}-{port}", [
                sys.executable, "-m", "proxy", "--log-level", "WARNING", "serve", "--port", str(port), "--upstream",
                mock_url, "--store", store], "ready"))
            urls[name] = f"http://127.0.0.1:{port}" + path
            before = servers[name].commands() if name in servers else 0
            row = asyncio.run(measure(urls[name], body, [procs[-1].proc.pid]))
            if name in servers:
                row["trips"] = (servers[name].commands() - before) / row["count"]
            out.append((name, row))
        out[0][1]["added"] = 0.0
        for name, row in out[1:]:
            row["added"] = asyncio.run(paired_added(Target(urls[name], body), Target(urls["memory"], body)))
    finally:
        for p in procs:
            p.stop()
        for r in servers.values():
            r.stop()
    return out


def rss_in_flight(tmp: Path, mock_url: str, streams: int = 20, size: int = 5_000_000) -> dict:
    """A fresh instance's resident memory while `streams` Responses answers of `size` bytes each stream
    through it at once (store false: only what is in flight), against the bytes in flight."""
    port = free_port()
    proc = Process(tmp, "rss", [sys.executable, "-m", "proxy", "--log-level", "WARNING", "serve", "--port",
                                str(port), "--upstream", mock_url], "ready")
    url = f"http://127.0.0.1:{port}/v1/responses"
    body = {"model": "gemini-2.5-flash", "input": f"[[mock:bulk {size}]] a long answer", "stream": True,
            "store": False}

    def rss() -> int:
        for line in Path(f"/proc/{proc.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    async def run() -> dict:
        async with aiohttp.ClientSession() as s:
            async def one() -> int:
                got = 0
                async with s.post(url, json=body, headers=KEY) as r:
                    async for chunk in r.content.iter_chunked(1 << 16):
                        got += len(chunk)
                return got

            await one()  # warm-up: the allocator's first growth is not what is in flight
            base, peak, done = rss(), 0, asyncio.Event()

            async def sample() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, rss())
                    await asyncio.sleep(0.005)
            sampler = asyncio.create_task(sample())
            got = await asyncio.gather(*(one() for _ in range(streams)))
            done.set()
            await sampler
            return {"base": base, "peak": peak, "in_flight": streams * size, "received": sum(got)}
    try:
        return asyncio.run(run())
    finally:
        proc.stop()


def mitm_rows(tmp: Path) -> list[tuple[str, str, dict, dict]]:
    """Plain mitmdump against the addon, native generateContent over TLS (see bench_mitm.py). Each
    addon row is measured right after a fresh run of plain mitmdump (its baseline), and its added
    latency by requests alternating between the two."""
    from scripts.bench_mitm import CAPTURED, GL, MitmBench
    bench = MitmBench(tmp)
    out = []
    try:
        plain, plain_url = bench.plain()
        addon, addon_url, frontend = bench.addon()
        url = GL + "/v1beta/models/gemini-2.5-flash:generateContent"

        def target(workload: str, via: str, session: bool) -> Target:
            return Target(url, bodies("native", workload)[1], bench.headers(session), via, bench.client_ssl)

        def run(workload: str, name: str, session: bool) -> None:
            _, body = bodies("native", workload)

            def one(which: str) -> dict:
                if which == "plain":
                    return asyncio.run(measure(url, body, [plain.proc.pid], via=plain_url, ssl=bench.client_ssl))
                return asyncio.run(measure(url, body, [addon.proc.pid], via=addon_url, ssl=bench.client_ssl,
                                           headers=bench.headers(session)))
            rounds = []
            for i in range(MITM_ROUNDS):  # the order alternates: a drift of the machine falls on both sides
                got = {which: one(which) for which in (("plain", "addon") if i % 2 == 0 else ("addon", "plain"))}
                rounds.append((got["addon"], got["plain"]))
            r, base = rounds[0]
            r["ratio"] = statistics.median(a["cpu_ms"] / b["cpu_ms"] for a, b in rounds)
            r["spread"] = sorted(a["cpu_ms"] / b["cpu_ms"] for a, b in rounds)
            r["added"] = asyncio.run(paired_added(target(workload, addon_url, session),
                                                  target(workload, plain_url, False)))
            out.append((workload, name, r, base))
        for workload in ("small", "large"):
            run(workload, "no session (the app's own tools, repaired)", False)
        asyncio.run(bench.session_with_calls(addon_url, frontend, 0))
        for workload in ("small", "large"):
            run(workload, "session tools injected, 0 captured calls", True)
        asyncio.run(bench.session_with_calls(addon_url, frontend, CAPTURED))
        for workload in ("small", "large"):
            run(workload, f"session tools injected, {CAPTURED} captured calls", True)
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


def _versus(theirs: dict) -> str:
    """The paired CPU ratio against LiteLLM (cpu_ratio) as the share of its CPU we use, with the rounds' range."""
    middle, low, high = theirs["paired"]
    return f"1/{middle:.1f} (1/{low:.1f}–1/{high:.1f})"


def report(rows: list, per_turn: dict[int, float], scale: list, ttfe: list, mitm: list, redis_cost: list,
           in_flight: dict, chain: list) -> None:
    base = {(w, k): r for w, k, name, r in rows if name.startswith("direct")}
    theirs = {(w, k): r for w, k, name, r in rows if name.startswith("LiteLLM, direct")}
    lines = ["| workload | API | target | p50 ms | added p50 ms | req/s at 32 | throughput vs direct | "
             "CPU ms/req | CPU vs LiteLLM |", "|---|---|---|---|---|---|---|---|---|"]
    litellm = {(w, k): r for w, k, name, r in rows if name == "LiteLLM proxy"}
    for workload, kind, name, r in rows:
        b = (theirs if name.startswith("LiteLLM") else base)[(workload, kind)]
        vs = ""
        if name == "gemini-tool-proxy" and (workload, kind) in litellm:
            vs = _versus(litellm[(workload, kind)])
        cpu = f"{r['cpu_ms']:.2f}" if r["cpu_ms"] else "—"
        lines.append(f"| {workload} | {kind} | {name} | {r['p50']:.2f} | {r.get('added', r['p50'] - b['p50']):+.2f} | "
                     f"{r['rps']:.0f} | {r['rps'] / b['rps']:.2f} | {cpu} | {vs} |")

    hop = {w: r["added"] for w, k, name, r in rows if name == "null aiohttp hop"}
    lines += ["", "Beyond the hop: the median difference of requests sent alternately through the proxy and "
              "through the null aiohttp hop (the body the proxy sent), so a drift of the machine cancels; "
              "the added p50 minus the hop's (two series taken apart) is shown beside it.", "",
              "| workload | API | added p50 ms | null hop added p50 ms | beyond the hop ms, paired (goal ≤ 0.5 small, "
              "≤ 1.0 large) | added − hop added | CPU vs LiteLLM (goal ≤ 1/15 large) |",
              "|---|---|---|---|---|---|---|"]
    for workload, kind, name, r in rows:
        if name == "gemini-tool-proxy":
            vs = _versus(litellm[(workload, kind)]) if (workload, kind) in litellm else "—"
            lines.append(f"| {workload} | {kind} | {r['added']:+.2f} | {hop[workload]:+.2f} | {r['beyond']:+.2f} | "
                         f"{r['added'] - hop[workload]:+.2f} | {vs} |")

    lines += ["", "The null hop forwards a stream whole: the mock's whole stream arrives within 0.1 ms of its first "
              "event, so that flatters the hop by no more.", "",
              "| stream | API | added time to first text event ms (paired, vs the mock) | beyond the null hop "
              "ms (paired; goal ≤ 1.0) |", "|---|---|---|---|"]
    lines += [f"| {w} | {k} | {added:+.2f} | {beyond:+.2f} |" for w, k, added, beyond in ttfe]
    if mitm:
        lines += ["", f"CPU vs plain: the median of {MITM_ROUNDS} rounds, each measuring plain mitmdump and the "
                  "addon one after the other (in alternating order), with the rounds' lowest and highest ratio; "
                  "the other columns are the first round's.", "",
                  "| MITM (native, TLS) | mitmdump + addon | added p50 vs plain ms | req/s at 32 | plain req/s "
                  "(same round) | addon's cost in throughput | CPU ms/req (plain) | CPU vs plain (goal ≤ 1.15) |",
                  "|---|---|---|---|---|---|---|---|"]
        for w, name, r, b in mitm:
            lines.append(f"| {w} | {name} | {r['added']:+.2f} | {r['rps']:.0f} | {b['rps']:.0f} | "
                         f"{1 - r['rps'] / b['rps']:+.0%} | {r['cpu_ms']:.2f} ({b['cpu_ms']:.2f}) | "
                         f"{r['ratio']:.2f}× ({r['spread'][0]:.2f}–{r['spread'][-1]:.2f}) |")
    if redis_cost:
        mem = redis_cost[0][1]
        lines += ["", "| one instance, Responses small | p50 ms | added p50 vs memory ms (goal ≤ +0.4) | req/s at 32 | "
                  "Redis round trips per request |", "|---|---|---|---|---|"]
        lines += [f"| store {n} | {r['p50']:.2f} | {r.get('added', r['p50'] - mem['p50']):+.2f} | {r['rps']:.0f} | "
                  f"{r['trips']:.2f} |" if "trips" in r else
                  f"| store {n} | {r['p50']:.2f} | {r.get('added', r['p50'] - mem['p50']):+.2f} | {r['rps']:.0f} | — |"
                  for n, r in redis_cost]
    if in_flight:
        mb = 1 << 20
        grown = in_flight["peak"] - in_flight["base"]
        lines += ["", "| 20 Responses streams of 5 MB at once (store false) | MB |", "|---|---|",
                  f"| bytes in flight | {in_flight['in_flight'] / mb:.0f} |",
                  f"| RSS before | {in_flight['base'] / mb:.0f} |",
                  f"| RSS at its peak | {in_flight['peak'] / mb:.0f} |",
                  f"| growth vs bytes in flight (goal ≤ 2×) | {grown / in_flight['in_flight']:.2f}× |"]
    if chain:
        lines += ["", "| previous_response_id chain, 2 KB a turn | p50 ms through the proxy | added vs the mock given "
                  "the same body, ms (goal ≤ 25) |", "|---|---|---|"]
        lines += [f"| turn {t} | {ms:.2f} | {added:+.2f} |" for t, ms, added in chain]
    lines += ["", "| history turns | translation µs per turn |", "|---|---|"]
    lines += [f"| {n} | {us:.1f} |" for n, us in per_turn.items()]
    if scale:
        one = scale[0][1]["rps"]
        lines += ["", "| instances (Redis + HAProxy) | req/s at 32 | vs 1 instance | p50 ms |", "|---|---|---|---|"]
        lines += [f"| {n} | {r['rps']:.0f} | {r['rps'] / one:.2f} | {r['p50']:.2f} |" for n, r in scale]
    table = "\n".join(lines)
    print(table)
    write_doc(f"Measured by `scripts/bench.sh` ({LATENCY_N} sequential requests for p50, "
        f"{LOAD_SECONDS:g} s at concurrency {CONCURRENCY} for throughput and CPU) on {machine()}. Every server is one "
        f"process; the mock Gemini answers all of them. \"Added p50\" is the median difference of requests "
        f"sent alternately through the proxy and to its baseline (the mock with the body the proxy sent it; for "
        f"LiteLLM, the body LiteLLM sent), so a drift of the machine cancels. The direct rows' CPU is the mock's. "
        f"CPU vs LiteLLM is paired the same way: the median of {CPU_ROUNDS} rounds, each loading LiteLLM and the "
        f"proxy one after the other (in alternating order), with the rounds' range; the CPU ms columns are each "
        f"target's own run. "
        f"Command: `bash scripts/bench.sh`. Judge ratios, not absolute numbers.\n\n{table}")


START, END = "<!-- bench: start -->", "<!-- bench: end -->"


def write_doc(body: str, doc: Path = ROOT / "docs" / "benchmarks.md") -> None:
    """This script's section of the document: the other scripts' sections and the findings written by
    hand between them stay as they are."""
    put_section(doc, START, END, f"{START}\n{body}\n{END}")

if __name__ == "__main__":
    main()
