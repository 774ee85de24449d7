"""Instructions per request (valgrind's callgrind), `serve` against the null aiohttp hop
(scripts/null_hop.py) and the translating hop (scripts/translating_hop.py: the floor of any translator
in Python), all in front of `python -m proxy mock`: issue 62's "beyond the hop" as a count
that other processes loading the machine do not change, where CPU-time ratios do. Each server runs
under callgrind, instrumented from when it is ready (start-up runs several times faster); after a
warm-up its counters are zeroed (callgrind_control -z), N requests are sent one at a time, and the
counters dumped (-d): instructions of those N requests only, start-up excluded. Bodies:
bench_tails.py's agent-shaped small and large Responses, Chat and Anthropic Messages requests; the
hop is sent the very Gemini body the proxy sent the mock for the same request. Each request carries
its own number in place of TURN (bench.py's numbered), as an agent's turns differ.

    python scripts/callgrind_serve.py [N] [--only small|large] [--kinds responses,chat,anthropic]
                                      [--versus DIR] [--functions K] [--cache]

N: requests per row (20). CALLGRIND_SERVE_ROOT=DIR (or --root DIR) runs the serve of another
checkout (an earlier commit's `git archive REV proxy | tar -x -C DIR`); --versus DIR (repeatable) runs
another serve from DIR beside this one in the same run, for a before/after. The mock and the hop are
this checkout's. The dumps stay in the printed directory (`callgrind_annotate FILE`).

--cache: the caches and the branch predictor simulated too (scripts/callgrind_dump.py): a second
table gives first-level data cache misses per request, the proxy against both hops, and each row's
instruction-cache misses and mispredicted branches. At concurrency 1 a request finds its caches
holding other processes' work, so what it pays beyond its instructions follows the data it touches.

--functions K: where the proxy's instructions go, by Python function: its serve runs with `-X perf`
(a trampoline per Python function, named in /tmp/perf-PID.map, through which every call and every
resumption of a coroutine passes), and each row prints the K functions with the most instructions
per request, inclusive of what they call (a coroutine's: over all its resumptions). The trampolines
cost instructions of their own: the table's figures are not comparable with a run without it.
"""

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts import callgrind_dump  # noqa: E402
from scripts.bench import KEY, TURN, last_sent, numbered  # noqa: E402
from scripts.bench_tails import LARGE, PATHS, SMALL, body  # noqa: E402
from scripts.callgrind_dump import CACHE  # noqa: E402
from tests.servers import Process, free_port  # noqa: E402

WARM = 10  # requests before the counters are zeroed: connections, caches, first-call imports


class Callgrinded:
    """A server (`python ARGS...`) under callgrind, started; `ready` waits until it prints ready."""

    def __init__(self, tmp: Path, name: str, args: list[str], cwd: Path, python: tuple[str, ...] = (),
                 cache: bool = False) -> None:
        self.name, self.port = name, free_port()
        self.out = tmp / f"{name}.callgrind"
        self.log_path = tmp / f"{name}.log"
        self.log = open(self.log_path, "w+")  # noqa: SIM115 - the process's; closed with it
        # Not instrumented until ready (`-i on`): start-up, imports and all, runs several times faster.
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", *(CACHE if cache else ()),
               f"--callgrind-out-file={self.out}",
               f"--log-file={tmp / name}.vg",
               sys.executable, *python, *[a.replace("{port}", str(self.port)) for a in args]]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, cwd=cwd,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.url = f"http://127.0.0.1:{self.port}"

    def ready(self) -> None:
        deadline = time.monotonic() + 1800  # start-up under callgrind: minutes on a loaded machine
        while not re.search(r"(?<![A-Za-z])ready", self.log_path.read_text()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start:\n{self.log_path.read_text()}")
            time.sleep(0.5)
        subprocess.run(["callgrind_control", "-i", "on", str(self.proc.pid)], check=True, capture_output=True)

    def zero(self) -> None:
        subprocess.run(["callgrind_control", "-z", str(self.proc.pid)], check=True, capture_output=True)

    def dump(self, label: str) -> tuple[dict[str, int], Path]:
        """The counts since the last zero (callgrind_dump.SHOWN's names), and the dump that holds them."""
        return callgrind_dump.dump(self.proc.pid, self.out, label)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


async def send(url: str, content: object, n: int, first: int) -> None:
    """n requests one at a time, numbered first, first+1, ..."""
    headers = {**KEY, "content-type": "application/json"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as s:
        for i in range(first, first + n):
            async with s.post(url, data=content(i), headers=headers) as r:
                data = await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{url}: {r.status} {data[:400]!r}")


def functions(pid: int, dump: Path, n: int, k: int) -> list[str]:
    """The k Python functions with the most instructions per request, inclusive (-X perf's
    trampolines, named by the perf map; a recursive function's outermost calls)."""
    names = {}
    for line in Path(f"/tmp/perf-{pid}.map").read_text(errors="replace").splitlines():
        start, _, name = line.split(" ", 2)
        names[int(start, 16)] = name.removeprefix("py::")
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--show=Ir", str(dump)],
                         capture_output=True, text=True, check=True).stdout
    cost: dict[str, int] = {}
    for m in re.finditer(r"^\s*([\d,]+) \([^)]*\)\s+\?\?\?:0x([0-9a-f]+)(?:'\d+)? \[\?\?\?\]", out, re.M):
        name = names.get(int(m.group(2), 16))
        if name is not None:
            cost[name] = max(cost.get(name, 0), int(m.group(1).replace(",", "")))
    top = sorted(cost.items(), key=lambda kv: -kv[1])[:k]
    return [f"{c / n / 1e3:9.1f} k  {name}" for name, c in top]


def measure(server: Callgrinded, path: str, b: dict, n: int, label: str) -> tuple[dict[str, float], Path]:
    """Counts per request over `n` requests, after WARM unmeasured."""
    content = numbered(b)
    asyncio.run(send(server.url + path, content, WARM, 10_000))
    server.zero()
    asyncio.run(send(server.url + path, content, n, 20_000))
    total, dump = server.dump(label)
    return {k: v / n for k, v in total.items()}, dump


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("n", nargs="?", type=int, default=20)
    p.add_argument("--only", choices=("small", "large"))
    p.add_argument("--kinds", default="responses,chat,anthropic")
    p.add_argument("--root", type=Path, default=Path(os.environ.get("CALLGRIND_SERVE_ROOT") or ROOT),
                   help="the checkout whose serve runs")
    p.add_argument("--versus", type=Path, action="append", default=[],
                   help="another checkout whose serve runs beside it (before/after); repeatable")
    p.add_argument("--functions", type=int, default=0, metavar="K",
                   help="the proxy's K costliest Python functions per row (-X perf: figures not comparable)")
    p.add_argument("--cache", action="store_true", help="simulate the caches and the branch predictor too")
    args = p.parse_args()
    kinds = args.kinds.split(",")
    workloads = [args.only] if args.only else ["small", "large"]
    tmp = Path(tempfile.mkdtemp(prefix="gtp-callgrind-serve-"))
    print(f"dumps in {tmp}", flush=True)
    mport = free_port()
    mock = Process(tmp, "mock", [sys.executable, "-m", "proxy", "mock", "--port", str(mport)], "ready")
    mock_url = f"http://127.0.0.1:{mport}"
    serve = ["-m", "proxy", "--log-level", "WARNING", "serve", "--port", "{port}", "--upstream", mock_url]
    servers: list[Callgrinded] = []
    try:
        cache = args.cache
        proxy = Callgrinded(tmp, "proxy", serve, args.root.resolve(), ("-X", "perf") if args.functions else (),
                            cache=cache)
        servers.append(proxy)
        versus = [Callgrinded(tmp, f"versus{i}", serve, d.resolve(), cache=cache) for i, d in enumerate(args.versus)]
        servers += versus
        hop = Callgrinded(tmp, "hop", [str(ROOT / "scripts" / "null_hop.py"), "{port}", mock_url], ROOT, cache=cache)
        servers.append(hop)
        # The floor of any translator in Python: parse, one pass to Gemini's shape, write (translating_hop.py).
        floor = Callgrinded(tmp, "floor", [str(ROOT / "scripts" / "translating_hop.py"), "{port}", mock_url], ROOT,
                            cache=cache)
        servers.append(floor)
        for s in servers:
            s.ready()
        head = ("| request | hop instructions/request | translating hop (the floor) | floor − hop | proxy "
                "instructions/request | proxy − hop | proxy − floor | proxy / hop |")
        for d in args.versus:
            head += f" {d.name} instructions/request | {d.name} − hop | {d.name} / hop |"
        lines = [head, "|" + "---|" * (head.count("|") - 1)]
        cache_head = ("| request | D1 misses/request: hop | floor | proxy | proxy − hop | proxy / hop | "
                      "proxy / floor | I1 misses: proxy / hop | mispredicts: proxy / hop |")
        cache_lines = [cache_head, "|" + "---|" * (cache_head.count("|") - 1)]
        profiles: list[str] = []
        for workload in workloads:
            for kind in kinds:
                b = body(kind, SMALL if workload == "small" else LARGE)

                async def sent_by_proxy(b: dict = b, kind: str = kind) -> dict:
                    await send(proxy.url + PATHS[kind], lambda _: json.dumps(b).encode(), 1, 0)
                    return (await last_sent(mock_url))["body"]
                sent = asyncio.run(sent_by_proxy())
                if TURN not in json.dumps(sent):
                    raise RuntimeError(f"{kind}: the turn marker did not reach the mock")
                label = f"{workload} {kind}"
                hc, _ = measure(hop, PATHS["native"], sent, args.n, f"hop-{workload}-{kind}")
                fc, _ = measure(floor, PATHS[kind], b, args.n, f"floor-{workload}-{kind}")
                pc, dump = measure(proxy, PATHS[kind], b, args.n, f"proxy-{workload}-{kind}")
                h, f, got = hc["Ir"], fc["Ir"], pc["Ir"]
                if cache:
                    d1 = "D1 misses"
                    cache_lines.append(
                        f"| {label} | {hc[d1] / 1e3:.1f} k | {fc[d1] / 1e3:.1f} k | {pc[d1] / 1e3:.1f} k | "
                        f"{(pc[d1] - hc[d1]) / 1e3:+.1f} k | {pc[d1] / hc[d1]:.2f}× | {pc[d1] / fc[d1]:.2f}× | "
                        f"{pc['I1 misses'] / hc['I1 misses']:.2f}× | {pc['mispredicts'] / hc['mispredicts']:.2f}× |")
                    print(cache_lines[-1], flush=True)
                if args.functions:
                    profiles.append(f"\n{label}: the proxy's instructions per request, inclusive, by function "
                                    f"(-X perf)\n" + "\n".join(functions(proxy.proc.pid, dump, args.n,
                                                                            args.functions)))
                row = (f"| {label} | {h / 1e6:.2f} M | {f / 1e6:.2f} M | {(f - h) / 1e6:+.2f} M | {got / 1e6:.2f} M | "
                       f"{(got - h) / 1e6:+.2f} M | {(got - f) / 1e6:+.2f} M | {got / h:.2f}× |")
                for i, other in enumerate(versus):
                    old = measure(other, PATHS[kind], b, args.n, f"versus{i}-{workload}-{kind}")[0]["Ir"]
                    row += f" {old / 1e6:.2f} M | {(old - h) / 1e6:+.2f} M | {old / h:.2f}× |"
                lines.append(row)
                print(row, flush=True)
        load = os.getloadavg()
        print(f"\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, N={args.n} requests per row (after {WARM} warm-up), "
              f"one at a time; load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}; "
              f"serve of {args.root.resolve()}" + "".join(f", versus {d.resolve()}" for d in args.versus))
        print("\n".join(lines))
        if cache:
            print("\n" + "\n".join(cache_lines))
        print("\n".join(profiles))
    finally:
        for s in servers:
            s.stop()
        mock.stop()


if __name__ == "__main__":
    main()
