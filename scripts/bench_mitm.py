"""The MITM rows of scripts/bench.sh: plain mitmdump (a routing script only) against mitmdump with
the addon, without a session, with a session's tools injected, and with a session that has
captured 4,096 calls. Everything is a process of its own: the mock Gemini over TLS under Google's
host names, each mitmdump, and the load generator (bench.py).

`python scripts/bench_mitm.py mock PORT DIR` is the TLS mock's process.

`python scripts/bench_mitm.py rows` (issue 62) measures the addon's CPU per flow against plain
mitmdump's on a small flow (one user turn), for plaintext HTTP and TLS x the app's own tools present
or absent x 0 or 20 tools injected from a session, against two upstreams (canned, mock): 16 rows, each
the median ratio of BENCH_MITM_ROUNDS rounds in which plain mitmdump and the addon are measured one
after the other, in alternating order (A/B, B/A...), so a drift of the shared machine falls on both
sides. It prints the table and writes it into its own section of docs/benchmarks.md.

Each measurement sends at a fixed rate (`--rate R`, default RATE = 50 requests/s, the same for both
processes): an open-loop schedule, request i leaving at t0 + i/R whatever the answers before it,
for `--seconds S` after a warm-up, and the CPU is the time the process's threads ran over those S
seconds as the scheduler counts it (/proc/PID/task/*/schedstat, in ns; utime+stime from /proc/PID/stat,
in 10 ms ticks, where the kernel keeps no such count), divided by the flows. On a shared machine CPU per flow follows
throughput (event-loop wake-ups shared by more or fewer flows), so sending as fast as each process
can (`--rate 0`: the former closed loop, concurrency 32 for BENCH_SECONDS) charges the slower
process for its own lower throughput; at a fixed rate below both processes' capacity, both serve the
same flows per second. Each measurement checks that the schedule was kept (the flows' rate within 3%
of R and the client's sends at most 50 ms late, p99); a round that did not (the machine stalled) is
measured again, at most RETRIES times, and a row says how many of its rounds kept it.

Options: `--rate R`, `--seconds S`, `--rounds N` (or BENCH_MITM_ROUNDS), `--upstream canned|mock`
(both by default), `--pin` (the mitmdumps on CPU 0, the upstream and the client on CPU 1: see pin()),
`--addon-set NAME=VALUE` (an option of the addon's, e.g. gtp_journal=off; repeatable),
`--json PATH` (the run's rows and load, for `write`), `--no-write`.
`python scripts/bench_mitm.py write RUN.json...` writes the section from one or more saved runs.
"""

import asyncio
import json
import os
import ssl
import statistics
import sys
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from proxy.ca import generate_ca  # noqa: E402
from scripts.doc_section import put_section  # noqa: E402
from tests.mitm_harness import MITMDUMP, upstream_tls  # noqa: E402
from tests.servers import Process, free_port  # noqa: E402

GL = "https://generativelanguage.googleapis.com"
SESSION = "bench"
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
CAPTURED = 4096  # the store keeps this many rounds per session (entry_store.DEFAULT_MAX_ROUNDS)


class MitmBench:
    """The mock and the mitmdumps; `rows()` measures each through the same client code as bench.py."""

    def __init__(self, tmp: Path, canned_http_port: int | None = None) -> None:
        """`canned_http_port`: the canned upstream (flow_rows) instead of the mock, plaintext on that port."""
        self.tmp, self.procs = tmp, []
        port = free_port()
        if canned_http_port is None:
            self.mock = self._start("mitm-mock", [sys.executable, __file__, "mock", str(port), str(tmp)], "ready")
        else:
            self.mock = self._start("mitm-canned", [sys.executable, __file__, "canned", str(canned_http_port),
                                                    str(port), str(tmp)], "ready")
        self.mock_route = f"127.0.0.1:{port}"
        self.confdir = tmp / "mitm-ca"
        generate_ca(self.confdir)
        self.client_ssl = ssl.create_default_context(cafile=str(self.confdir / "mitmproxy-ca-cert.pem"))

    def _start(self, name: str, cmd: list[str], ready: str) -> Process:
        proc = Process(self.tmp, name, cmd, ready)
        self.procs.append(proc)
        return proc

    def mitmdump(self, name: str, *args: str) -> tuple[Process, str]:
        port = free_port()
        trusted = self.tmp / "upstream-ca" / "mitmproxy-ca-cert.pem"  # the TLS mock's CA
        proc = self._start(name, [str(MITMDUMP), "--listen-host", "127.0.0.1", "--listen-port", str(port),
                                  "--set", f"confdir={self.confdir}", "--set", "connection_strategy=eager",
                                  "--set", f"ssl_verify_upstream_trusted_ca={trusted}",
                                  "--set", "flow_detail=0", *args], "proxy listening")
        return proc, f"http://127.0.0.1:{port}"

    def plain(self) -> tuple[Process, str]:
        return self.mitmdump("mitm-plain", "-s", str(ROOT / "scripts" / "bench_route.py"),
                             "--set", f"bench_route={self.mock_route}")

    def addon(self) -> tuple[Process, str, str]:
        frontend = free_port()
        proc, url = self.mitmdump("mitm-addon", "-s", str(ROOT / "addons" / "gemini_tools.py"),
                                  "--set", f"gtp_route={self.mock_route}", "--set", f"gtp_frontend_port={frontend}",
                                  "--set", "gtp_upstream=mock")
        return proc, url, f"http://127.0.0.1:{frontend}"

    async def session_with_calls(self, proxy_url: str, frontend: str, calls: int) -> None:
        """The session's tools set through the front-end, then `calls` rounds captured for real:
        each request asks the mock for a call, which the addon captures from the answer."""
        async with aiohttp.ClientSession() as s:
            async with s.put(f"{frontend}/v1/sessions/{SESSION}/tools", json={"tools": [WEATHER]}) as r:
                assert r.status == 200, await r.text()
            body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "call get_weather city=Paris"}]}]})
            left = [calls]

            async def worker() -> None:
                while left[0] > 0:
                    left[0] -= 1
                    async with s.post(f"{GL}/v1beta/models/gemini-2.5-flash:generateContent", data=body,
                                      headers={**self.headers(), "x-gtp-session": SESSION},
                                      proxy=proxy_url, ssl=self.client_ssl) as r:
                        await r.read()
                        assert r.status == 200
            await asyncio.gather(*(worker() for _ in range(16)))
            async with s.get(f"{frontend}/v1/sessions/{SESSION}") as r:
                state = await r.json()
        assert len(state["rounds"]) >= min(calls, CAPTURED), len(state["rounds"])

    @staticmethod
    def headers(session: bool = False) -> dict[str, str]:
        return {"x-goog-api-key": "bench-key", "content-type": "application/json",
                **({"x-gtp-session": SESSION} if session else {})}

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()


CANNED = json.dumps({"candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [
    {"text": "Canned answer. " * 14}]}}], "usageMetadata": {"promptTokenCount": 223, "candidatesTokenCount": 222,
                                                           "totalTokenCount": 445}, "modelVersion": "gemini-2.5-flash",
    "responseId": "canned"}).encode()


def _serve_canned(http_port: int, tls_port: int, tmp: Path) -> None:
    """The canned upstream, plaintext and TLS (under Google's names, trusted by the mitmdumps):
    every request's body read, one fixed generateContent answer (as long as the mock's)."""
    from aiohttp import web
    server_ctx, _ = upstream_tls(tmp)

    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=CANNED, content_type="application/json")

    async def main() -> None:
        app = web.Application(client_max_size=64 << 20)
        app.router.add_post("/{tail:.*}", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", http_port).start()
        await web.TCPSite(runner, "127.0.0.1", tls_port, ssl_context=server_ctx).start()
        print("ready", flush=True)
        await asyncio.Event().wait()
    asyncio.run(main())


def _serve_mock(port: int, tmp: Path) -> None:
    from proxy.mock.server import start_mock
    server_ctx, _ = upstream_tls(tmp)

    async def main() -> None:
        from proxy import gc_tuning

        await start_mock(port=port, ssl_context=server_ctx)
        gc_tuning.tune()  # as `proxy mock` does (cli._mock): no collector pauses in the upstream every bench shares
        gc_tuning.freeze_startup()
        print("ready", flush=True)
        await asyncio.Event().wait()
    asyncio.run(main())


ROWS_START = "<!-- bench_mitm rows: start -->"
ROWS_END = "<!-- bench_mitm rows: end -->"
RATE = 50.0  # requests/s of `rows`: below both processes' capacity on a loaded 2-core machine
SECONDS = 4.0  # the measured window at RATE (after WARM_SECONDS unmeasured)
WARM_SECONDS = 1.0
RETRIES = 2  # a round whose measurements missed the schedule (the machine stalled) is measured again, at most so often
TICK = os.sysconf("SC_CLK_TCK")


def cpu_split(pid: int) -> tuple[int, int]:
    """(utime + cutime, stime + cstime) of `pid` (all its threads, and its waited-for children), in ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[13]), int(fields[12]) + int(fields[14])


def cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of `pid`, in ticks."""
    return sum(cpu_split(pid))


def cpu_ns(pid: int) -> int | None:
    """The time `pid`'s threads ran on a CPU, in ns, as the scheduler counts it (/proc/PID/task/TID/
    schedstat, its first field), or None where the kernel keeps no such count. A measured window of
    4 s at 50 flows/s is some 40 ticks of utime+stime (10 ms each, and sampled at the tick): one tick
    either way moved a row's ratio by 2-3 %."""
    try:
        return sum(int((task / "schedstat").read_text().split()[0]) for task in Path(f"/proc/{pid}/task").iterdir())
    except (OSError, ValueError, IndexError):
        return None


async def paced(url: str, body: dict, pid: int, via: str, ssl_ctx: object, headers: dict[str, str],
                rate: float, seconds: float, warm: float = WARM_SECONDS) -> dict:
    """CPU per flow of `pid` (the proxy at `via`) at a fixed `rate`: an open-loop schedule, request i
    sent at t0 + i/rate whether or not the ones before it were answered, `seconds` long after `warm`
    seconds of the same schedule unmeasured (connections, caches). The CPU is read just before the
    first measured request leaves and once the last is answered. `kept`: the flows' rate (count over
    the time from the first send to the last answer) within 3% of `rate`, and the client's sends at
    most 50 ms late (p99), that is neither the proxy nor this client fell behind."""
    from scripts.bench import numbered
    content_of = numbered(body)
    loop = asyncio.get_running_loop()
    sent = [0]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        async def one(at: float) -> tuple[float, float]:
            sent[0] += 1
            t = loop.time()
            async with s.post(url, data=content_of(sent[0]), headers=headers, proxy=via, ssl=ssl_ctx) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{url}: {r.status} {(await r.text())[:300]}")
            return t - at, loop.time() - t

        async def schedule(count: int) -> tuple[float, list[tuple[float, float]]]:
            start, tasks = loop.time(), []
            for i in range(count):
                at = start + i / rate
                if (delay := at - loop.time()) > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.create_task(one(at)))
            return start, await asyncio.gather(*tasks)
        await schedule(max(1, round(rate * warm)))
        count = max(1, round(rate * seconds))
        cpu0, ns0 = cpu_split(pid), cpu_ns(pid)
        t0, got = await schedule(count)
        took = loop.time() - t0
        ns1 = cpu_ns(pid)
        user, system = (b - a for a, b in zip(cpu0, cpu_split(pid), strict=True))
        # The scheduler's count where there is one (utime and stime, in ticks, split it only)
        cpu_ms = (ns1 - ns0) / 1e6 if ns0 is not None and ns1 is not None else (user + system) * 1000 / TICK
    lags = sorted(lag for lag, _ in got)
    lat = sorted(latency for _, latency in got)
    achieved = count / max(took, (count - 1) / rate)
    p99 = lags[min(len(lags) - 1, int(0.99 * len(lags)))]
    return {"cpu_ms": cpu_ms / count, "user_ms": user * 1000 / TICK / count,
            "sys_ms": system * 1000 / TICK / count, "count": count, "rate": achieved,
            "lat_p50": lat[len(lat) // 2] * 1000, "lat_max": lat[-1] * 1000, "lag_p99": p99 * 1000,
            "kept": achieved >= 0.97 * rate and p99 <= 0.050}


def small_body(app_tools: bool) -> dict:
    """bench.py's small native body (one user turn of ~850 bytes), with or without the app's one tool."""
    from scripts.bench import bodies
    body = dict(bodies("native", "small")[1])
    if not app_tools:
        body.pop("tools")
    return body


def pin(bench: "MitmBench") -> None:
    """Every mitmdump (each of its threads) on CPU 0, the upstream and this client on CPU 1 (as
    profile_serve.py pins serve): each mitmdump's CPU is then its own work on caches only the other
    mitmdumps share, not a share of what the upstream and the client left on its core. Unpinned, a
    flow's answer found its core's caches holding what the upstream ran meanwhile, and the more the
    upstream did (the strict mock checks each of 20 injected declarations) the more a flow cost."""
    os.sched_setaffinity(0, {1})
    for proc in bench.procs:
        cpu = 0 if proc.log_path.name.startswith(("mitm-plain", "mitm-addon")) else 1
        for task in Path(f"/proc/{proc.proc.pid}/task").iterdir():
            os.sched_setaffinity(int(task.name), {cpu})


def flow_rows(tmp: Path, upstream: str, rate: float = RATE, seconds: float = SECONDS,
              rounds: int | None = None, pinned: bool = False, addon_sets: tuple[str, ...] = ()) -> list[dict]:
    """The 8 rows: (plaintext, TLS) x app tools (present, absent) x injected (0, 20). `upstream`: "mock"
    (the strict mock, which checks every declaration: 20 tools cost it about 0.87 ms of CPU a request
    against 0.27, so the addon's flows wait longer upstream than plain mitmdump's; 1.7 ms before the
    mock remembered its field names) or "canned" (one fixed answer
    after reading the body: the upstream costs the same for both, only mitmdump's own work differs).
    `rate`: requests/s of each measurement (paced), 0: the closed loop of bench.py's measure()
    (concurrency 32 for BENCH_SECONDS)."""
    from scripts.bench import measure, tools
    rounds = rounds or int(os.environ.get("BENCH_MITM_ROUNDS", "6"))
    http_port = free_port()  # the plaintext upstream: Google's host names over plain HTTP
    bench = MitmBench(tmp, http_port if upstream == "canned" else None)
    try:
        if upstream == "mock":
            bench._start("mitm-mock-http", [sys.executable, "-m", "proxy", "mock", "--port", str(http_port)], "ready")
        http_route = f"127.0.0.1:{http_port}"
        plain = {"tls": bench.plain(), "http": bench.mitmdump(
            "mitm-plain-http", "-s", str(ROOT / "scripts" / "bench_route.py"), "--set", f"bench_route={http_route}")}
        # The addon as plain mitmdump runs (connection_strategy=eager: gtp_upstream=mock would make it
        # lazy), gtp_route sending everything to the mock.
        fronts, addons = [], {}
        for scheme, route in (("tls", bench.mock_route), ("http", http_route)):
            fronts.append(free_port())
            addons[scheme] = bench.mitmdump(f"mitm-addon-{scheme}", "-s", str(ROOT / "addons" / "gemini_tools.py"),
                                            "--set", f"gtp_route={route}", "--set", f"gtp_frontend_port={fronts[-1]}",
                                            *(a for opt in addon_sets for a in ("--set", opt)))

        async def set_tools(front: str) -> None:
            for _ in range(100):  # the front-end listens once mitmdump runs, just after "proxy listening"
                try:
                    async with aiohttp.ClientSession() as s, s.put(f"{front}/v1/sessions/{SESSION}/tools",
                                                                   json={"tools": tools(20)}) as r:
                        assert r.status == 200, await r.text()
                        return
                except aiohttp.ClientConnectorError:
                    await asyncio.sleep(0.1)
            raise RuntimeError(f"{front}: the front-end never listened")
        for port in fronts:
            asyncio.run(set_tools(f"http://127.0.0.1:{port}"))
        if pinned:
            pin(bench)
        out = []
        for scheme in ("http", "tls"):
            url = (GL if scheme == "tls" else GL.replace("https://", "http://")) + \
                "/v1beta/models/gemini-2.5-flash:generateContent"
            ssl_ctx = bench.client_ssl if scheme == "tls" else False
            for app_tools in (True, False):
                body = small_body(app_tools)
                for injected in (0, 20):
                    pairs, retried = [], 0
                    for i in range(rounds):
                        for attempt in range(RETRIES + 1):  # a round that missed the schedule is measured again
                            got = {}
                            for which in ("plain", "addon") if i % 2 == 0 else ("addon", "plain"):
                                proc, via = (plain if which == "plain" else addons)[scheme]
                                headers = bench.headers(session=injected > 0 and which == "addon")
                                if rate > 0:
                                    got[which] = asyncio.run(paced(url, body, proc.proc.pid, via, ssl_ctx, headers,
                                                                   rate, seconds))
                                else:
                                    got[which] = asyncio.run(measure(url, body, [proc.proc.pid], via=via,
                                                                     ssl=ssl_ctx, sequential=0, headers=headers))
                            if rate <= 0 or all(m["kept"] for m in got.values()) or attempt == RETRIES:
                                break
                            retried += 1
                        pairs.append((got["addon"], got["plain"]))
                    ratios = sorted(a["cpu_ms"] / b["cpu_ms"] for a, b in pairs)
                    row = {"upstream": upstream, "scheme": "plaintext" if scheme == "http" else "TLS",
                           "app_tools": app_tools, "injected": injected, "ratio": statistics.median(ratios),
                           "low": ratios[0], "high": ratios[-1],
                           "addon_ms": statistics.median(a["cpu_ms"] for a, _ in pairs),
                           "plain_ms": statistics.median(b["cpu_ms"] for _, b in pairs)}
                    if rate > 0:
                        ms = [m for pair in pairs for m in pair]
                        row.update(kept=all(m["kept"] for m in ms), min_rate=min(m["rate"] for m in ms),
                                   retried=retried,
                                   kept_rounds=sum(a["kept"] and b["kept"] for a, b in pairs),
                                   max_lag=max(m["lag_p99"] for m in ms),
                                   plain_lat=statistics.median(b["lat_p50"] for _, b in pairs),
                                   addon_lat=statistics.median(a["lat_p50"] for a, _ in pairs),
                                   max_lat=max(m["lat_max"] for m in ms),
                                   **{f"{who}_{part}": statistics.median(pair[k][f"{part}_ms"] for pair in pairs)
                                      for k, who in ((0, "addon"), (1, "plain")) for part in ("user", "sys")})
                    out.append(row)
                    print(out[-1], flush=True)
    finally:
        bench.stop()
    return out


def rows_table(rows: list[dict]) -> list[str]:
    lines = ["| upstream | flow | app's own tools | tools injected | plain mitmdump CPU ms/flow | addon CPU ms/flow | "
             "CPU vs plain (goal ≤ 1.15) | rounds' range |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['upstream']} | {r['scheme']} | {'present' if r['app_tools'] else 'absent'} | "
                     f"{r['injected']} | "
                     f"{r['plain_ms']:.2f} | {r['addon_ms']:.2f} | {r['ratio']:.2f}×"
                     f"{'' if r.get('kept', True) else ' (rate not kept)'} | "
                     f"{r['low']:.2f}–{r['high']:.2f} |")
    return lines


def runs_table(runs: list[dict]) -> list[str]:
    """Rows of several runs side by side: each run's median ratio and its rounds' range, and the CPU per
    flow (the median of the runs' medians)."""
    head = "| upstream | flow | app's own tools | tools injected | plain mitmdump CPU ms/flow | " + \
        "addon CPU ms/flow | " + " | ".join(f"run {i + 1}: CPU vs plain (rounds' range)" for i in range(len(runs))) + \
        " | schedule kept |"
    lines = [head, "|---|---|---|---|---|---|" + "---|" * len(runs) + "---|"]
    for k, first in enumerate(runs[0]["rows"]):
        same = [run["rows"][k] for run in runs]
        kept = "; ".join(f"{r['kept_rounds']}/{runs[j]['rounds']}"
                         + (f" ({r['retried']} retried)" if r["retried"] else "")
                         for j, r in enumerate(same)) if "kept_rounds" in first else \
            ("yes" if all(r.get("kept", True) for r in same) else "NO")
        lines.append(f"| {first['upstream']} | {first['scheme']} | {'present' if first['app_tools'] else 'absent'} | "
                     f"{first['injected']} | {statistics.median(r['plain_ms'] for r in same):.2f} | "
                     f"{statistics.median(r['addon_ms'] for r in same):.2f} | " +
                     " | ".join(f"{r['ratio']:.2f}× ({r['low']:.2f}–{r['high']:.2f})" for r in same) +
                     f" | {kept} |")
    return lines


def uptime() -> str:
    import subprocess
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def write_rows(rows: list[dict] | None = None, load: str | None = None, when: str | None = None,
               extra: list[str] = (), runs: list[dict] | None = None) -> None:
    """docs/benchmarks.md's section of these rows (replaced in place): one run's `rows` (`load`: `uptime`
    at its end) or several saved `runs` (dicts of `rows`, `rate`, `seconds`, `rounds`, `when`, `load_before`,
    `load_after`)."""
    import datetime
    if runs is None:
        runs = [{"rows": rows, "when": when or f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}",
                 "load_before": None, "load_after": load or uptime(), "rate": RATE, "seconds": SECONDS,
                 "rounds": int(os.environ.get("BENCH_MITM_ROUNDS", "6"))}]
    doc = ROOT / "docs" / "benchmarks.md"
    first = runs[0]
    rate = first["rate"]
    if rate > 0:
        how = (f"at a fixed rate of {rate:g} requests/s for both processes (an open-loop schedule: request i leaves "
               f"at t0 + i/{rate:g} s whatever the answers before it), {first['seconds']:g} s measured after "
               f"{WARM_SECONDS:g} s of warm-up, the CPU "
               + ("(the time the process's threads ran, as the scheduler counts it: `/proc/PID/task/*/schedstat`, ns)"
                  if first.get("cpu") == "schedstat" else "from `/proc/PID/stat` (utime+stime, and children's, in "
                  "10 ms ticks)")
               + " over the measured window divided by its flows. `schedule kept`, per run: the rounds in which both "
               "measurements kept the schedule (the flows' rate, count over the time from the first send to the "
               "last answer, within 3% of the schedule, and the client's sends at most 50 ms late, p99); a round "
               f"that did not is measured again, at most {RETRIES} times (`retried`), and the last attempt counts")
    else:
        how = f"{os.environ.get('BENCH_SECONDS', '3')} s at concurrency 32 each, as fast as each process answers"
    if first.get("pinned"):
        how += (" — pinned (`--pin`): every mitmdump on CPU 0, the upstream and the client on CPU 1, so each "
                "mitmdump's CPU is its own work, not a share of what the upstream left in its core's caches")
    loads = [f"run {i + 1}: {run['when']} UTC, load before `{run['load_before']}`, after `{run['load_after']}`"
             if run.get("load_before") else f"run {i + 1}: {run['when']} UTC, load at the end `{run['load_after']}`"
             for i, run in enumerate(runs)]
    section = "\n".join([
        ROWS_START, "", "## MITM CPU per flow: plaintext and TLS, app tools, injected tools (issue 62)", "",
        f"`python scripts/bench_mitm.py rows{f' --rate {rate:g}' if rate != RATE else ''}`, "
        f"{len(runs)} run{'s' if len(runs) > 1 else ''} on {os.cpu_count()} cores (`uptime`):", "",
        *(f"- {line}" for line in loads), "",
        "A small flow (bench.py's small native body: one user turn, ~0.9 KB; the app's one tool present or "
        "not), `generateContent` against two upstreams: `canned` (one fixed answer after reading the body: "
        "the same cost whatever the body) and `mock` (the strict mock, which checks each declaration: 20 "
        "tools cost it about 0.87 ms of CPU a request against 0.27, on the same two cores). Each row: the median, over "
        f"{first['rounds']} rounds, of the addon's CPU per flow over plain "
        "mitmdump's (a routing script only) measured in the same round, one after the other in alternating "
        f"order, {how}. 20 injected tools: the flow names a session whose 20 tools (bench.py's `tools(20)`) "
        "replace the app's.", "",
        *(rows_table(first["rows"]) if len(runs) == 1 else runs_table(runs)), *extra, "", ROWS_END])
    put_section(doc, ROWS_START, ROWS_END, section)


def _option(name: str, default: str | None) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


if __name__ == "__main__" and sys.argv[1:2] == ["mock"]:
    _serve_mock(int(sys.argv[2]), Path(sys.argv[3]))
elif __name__ == "__main__" and sys.argv[1:2] == ["canned"]:
    _serve_canned(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
elif __name__ == "__main__" and sys.argv[1:2] == ["rows"]:
    import datetime
    import tempfile
    rate, seconds = float(_option("--rate", str(RATE))), float(_option("--seconds", str(SECONDS)))
    rounds = int(_option("--rounds", os.environ.get("BENCH_MITM_ROUNDS", "6")))
    upstreams = [_option("--upstream", None)] if "--upstream" in sys.argv else ["canned", "mock"]
    pinned = "--pin" in sys.argv
    addon_sets = tuple(sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--addon-set")
    run = {"when": f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}", "load_before": uptime(),
           "rate": rate, "seconds": seconds, "rounds": rounds, "pinned": pinned, "addon_sets": list(addon_sets),
           "cpu": "schedstat" if cpu_ns(os.getpid()) is not None else "stat"}
    print(f"load before: {run['load_before']}", flush=True)
    run["rows"] = [r for upstream in upstreams
                   for r in flow_rows(Path(tempfile.mkdtemp(prefix=f"gtp-bench-mitm-{upstream}-")), upstream,
                                      rate, seconds, rounds, pinned, addon_sets)]
    run["when"] += f"–{datetime.datetime.now(datetime.UTC):%H:%M}"
    run["load_after"] = uptime()
    print(f"load after: {run['load_after']}")
    print("\n".join(rows_table(run["rows"])))
    if (path := _option("--json", None)) is not None:
        Path(path).write_text(json.dumps(run, indent=1))
    if "--no-write" not in sys.argv:
        write_rows(runs=[run])
elif __name__ == "__main__" and sys.argv[1:2] == ["write"]:
    write_rows(runs=[json.loads(Path(p).read_text()) for p in sys.argv[2:]])
