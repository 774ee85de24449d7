"""How much Python one request runs, the proxy against the null aiohttp hop (issue 62 item 3): the
function calls per request and the distinct functions every request runs, by package.

Why count this: at concurrency 1 this machine's cores go cold between requests (other processes,
an idle vCPU), and a request pays for the code it touches more than for the instructions it runs
(docs/benchmarks.md, the tails' findings). The count does not move with the machine's state, where
the latencies of bench_tails.py do by half between runs, so it is the profile a change to the
request path can be judged by between two commits.

How: each server runs under this script (`run`), which counts sys.monitoring's PY_START events per
code object between SIGUSR1 and SIGUSR2. The proxy is sent bench_tails.py's bodies; the hop the body
the proxy sent the mock. A function "on every request" ran at least once per request on average
over the measured requests (what runs once per request, and what runs once on most of them).

    python scripts/footprint.py [--requests N] [--only small|large] [--kinds responses,chat,anthropic]
                                [--list KIND/WORKLOAD] [--write]

--list prints, for one row (e.g. chat/small), the proxy's functions with their calls per request.
--write replaces (or appends) its section of docs/benchmarks.md.
"""

import argparse
import asyncio
import collections
import json
import os
import runpy
import signal
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- footprint: start -->", "<!-- footprint: end -->"
WARM = 40  # requests before counting: first-request imports and caches are not the request path
PACKAGES = ("proxy", "aiohttp", "stdlib", "other")
STDLIB = sysconfig.get_paths()["stdlib"] + "/"


# -- the counting wrapper (`run`) ------------------------------------------------------------------

def run(out: str, target: list[str]) -> None:
    """Run `target` (`-m module args...` or `script args...`) in this process, counting function
    starts per code object while SIGUSR1 has turned it on; SIGUSR2 turns it off and writes `out`."""
    mon = sys.monitoring
    tool = mon.PROFILER_ID
    mon.use_tool_id(tool, "footprint")
    counts: collections.Counter = collections.Counter()
    mon.register_callback(tool, mon.events.PY_START, lambda code, _offset: counts.update((code,)))

    def on(*_: object) -> None:
        counts.clear()
        mon.set_events(tool, mon.events.PY_START)

    def off(*_: object) -> None:
        mon.set_events(tool, 0)
        rows = [[c.co_filename, c.co_qualname, c.co_firstlineno, n] for c, n in counts.items()]
        Path(out).write_text(json.dumps(rows))

    signal.signal(signal.SIGUSR1, on)
    signal.signal(signal.SIGUSR2, off)
    if target[0] == "-m":
        sys.argv = target[1:]
        runpy.run_module(target[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = target
        runpy.run_path(target[0], run_name="__main__")


# -- the measurement ---------------------------------------------------------------------------------

def package(filename: str) -> str:
    """Which of PACKAGES a code object's file belongs to."""
    if "site-packages/" in filename:  # (the proxy too, where the wheel is installed: the image)
        top = filename.split("site-packages/", 1)[1].split("/", 1)[0]
        return top if top in ("proxy", "aiohttp") else "other"
    if filename.startswith(str(ROOT / "proxy") + "/"):
        return "proxy"
    if filename.startswith((STDLIB, "<frozen ")):  # the standard library's files and frozen modules (<frozen abc>)
        return "stdlib"
    return "other"  # code made at run time (<string>: dataclasses' __init__), the hops' own scripts


def summary(rows: list[list], requests: int) -> dict:
    """Calls per request, and the functions on every request by package."""
    every = [r for r in rows if r[3] >= requests]
    by = collections.Counter(package(r[0]) for r in every)
    return {"calls": sum(r[3] for r in rows) / requests, "every": len(every),
            **{p: by.get(p, 0) for p in PACKAGES}}


async def _drive(url: str, bodies: list[bytes], pid: int, headers: dict[str, str]) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as s:
        async def one(data: bytes) -> None:
            async with s.post(url, data=data, headers=headers) as r:
                if r.status != 200:
                    raise SystemExit(f"error: {url} answered {r.status}: {(await r.text())[:300]}")
                await r.read()
        for data in bodies[:WARM]:
            await one(data)
        os.kill(pid, signal.SIGUSR1)
        await asyncio.sleep(0.2)
        for data in bodies[WARM:]:
            await one(data)
        await asyncio.sleep(0.2)  # the last answer's after-answer work (the journal, the usage row) counted too
        os.kill(pid, signal.SIGUSR2)
        await asyncio.sleep(0.5)


def _counted(tmp: Path, name: str, target: Callable[[int], list[str]], path: str, bodies: list[bytes],
             headers: dict[str, str]) -> list[list]:
    """A server (`target(port)`: its command) run under `run` and sent `bodies` at `path`: its code
    objects' counts over the measured requests."""
    from tests.servers import Process, free_port

    port, out = free_port(), tmp / f"{name}.json"
    server = Process(tmp, name, [sys.executable, str(Path(__file__).resolve()), "run", str(out), *target(port)],
                     "ready")
    try:
        asyncio.run(_drive(f"http://127.0.0.1:{port}{path}", bodies, server.proc.pid, headers))
    finally:
        server.stop()
    return json.loads(out.read_text())


def measure(kinds: list[str], workloads: list[str], requests: int) -> list[dict]:
    sys.path.insert(0, str(ROOT))
    from scripts import bench_tails as bt
    from tests.servers import Process, free_port

    tmp = Path(tempfile.mkdtemp(prefix="gtp-footprint-"))
    mport = free_port()
    mock = Process(tmp, "mock", [sys.executable, "-m", "proxy", "mock", "--port", str(mport)], "ready")
    mock_url = f"http://127.0.0.1:{mport}"
    headers = {**bt.KEY, "x-api-key": bt.KEY["x-goog-api-key"], "content-type": "application/json"}
    rows = []
    try:
        for workload in workloads:
            for kind in kinds:
                numbered = bt.numbered(bt.body(kind, bt.SMALL if workload == "small" else bt.LARGE))
                proxy_rows = _counted(tmp, f"proxy-{kind}-{workload}",
                                      lambda port: ["-m", "proxy", "--log-level", "WARNING", "serve", "--port",
                                                    str(port), "--upstream", mock_url],
                                      bt.PATHS[kind], [numbered(i) for i in range(WARM + requests)], headers)
                sent = json.dumps(asyncio.run(bt.last_sent(mock_url))["body"]).encode()  # what the hop is sent
                hop_rows = _counted(tmp, f"hop-{kind}-{workload}",
                                    lambda port: [str(ROOT / "scripts" / "null_hop.py"), str(port), mock_url],
                                    bt.PATHS["native"], [sent] * (WARM + requests), headers)
                p, h = summary(proxy_rows, requests), summary(hop_rows, requests)
                rows.append({"workload": workload, "kind": kind, "requests": requests, "proxy": p, "hop": h,
                             "functions": proxy_rows})
                print(f"{workload} {kind:9s}: proxy {p['calls']:5.0f} calls/request, {p['every']} functions on every "
                      f"request ({p['proxy']} its own, aiohttp {p['aiohttp']}, stdlib {p['stdlib']}, other "
                      f"{p['other']}); hop {h['calls']:4.0f}, {h['every']} (aiohttp {h['aiohttp']})", flush=True)
    finally:
        mock.stop()
    return rows


def table(rows: list[dict]) -> list[str]:
    names = {"responses": "Responses", "chat": "Chat", "anthropic": "Anthropic"}
    lines = ["| body | API | calls / request: proxy / hop | functions on every request: proxy / hop | the proxy's: "
             "its own / aiohttp / stdlib / the rest | the hop's: aiohttp / stdlib / the rest |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        p, h = r["proxy"], r["hop"]
        lines.append(f"| {r['workload']} | {names[r['kind']]} | {p['calls']:.0f} / {h['calls']:.0f} | {p['every']} / "
                     f"{h['every']} | {p['proxy']} / {p['aiohttp']} / {p['stdlib']} / {p['other']} | "
                     f"{h['aiohttp']} / {h['stdlib']} / {h['other']} |")
    return lines


def write(rows: list[dict]) -> None:
    sys.path.insert(0, str(ROOT))
    from scripts.doc_section import machine, put_section

    lines = [START, "## How much Python a request runs (issue 62 item 3)", "",
             f"Counted {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/footprint.py` on {machine()}, "
             f"{rows[0]['requests']} requests a row after {WARM} unmeasured: each server's Python function starts "
             "(sys.monitoring's PY_START) per request, and how many distinct functions ran on every request, by "
             "package ('the rest': other packages — pydantic, prometheus-client, yarl... —, code made at run "
             "time such as dataclasses' `__init__`, and the hops' own scripts). The proxy is sent bench_tails.py's "
             "bodies, the null hop the body the proxy sent the mock. "
             "Unlike a latency, the count does not move with the machine's state: at concurrency 1 a request pays "
             "for the code it touches, cold, more than for its instructions (see the tails' findings).", "",
             *table(rows), "", END]
    put_section(DOC, START, END, "\n".join(lines))


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=100)
    p.add_argument("--only", choices=("small", "large"))
    p.add_argument("--kinds", default="responses,chat,anthropic")
    p.add_argument("--list", metavar="KIND/WORKLOAD", help="the proxy's functions of one row, by calls per request")
    p.add_argument("--write", action="store_true", help="write docs/benchmarks.md's section")
    args = p.parse_args()
    workloads = [args.only] if args.only else ["small", "large"]
    rows = measure(args.kinds.split(","), workloads, args.requests)
    print("\n".join(table(rows)))
    if args.list:
        kind, _, workload = args.list.partition("/")
        for r in rows:
            if r["kind"] == kind and r["workload"] == workload:
                for f, q, line, n in sorted(r["functions"], key=lambda x: -x[3]):
                    if n >= r["requests"]:
                        print(f"{n / r['requests']:6.1f}  {f.replace(str(ROOT) + '/', '')}:{line} {q}")
    if args.write:
        write(rows)


if __name__ == "__main__":
    main()
