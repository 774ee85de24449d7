"""Instructions per request (valgrind's callgrind), `serve` against the null aiohttp hop
(scripts/null_hop.py), both in front of `python -m proxy mock`: issue 62's "beyond the hop" as a count
that other processes loading the machine do not change, where CPU-time ratios do. Each server runs
under callgrind; after a warm-up its counters are zeroed (callgrind_control -z), N requests are sent
one at a time, and the counters dumped (-d): instructions of those N requests only, start-up
excluded. Bodies: bench_tails.py's agent-shaped small and large Responses, Chat and Anthropic
Messages requests; the hop is sent the very Gemini body the proxy sent the mock for the same request.
Each request carries its own number in place of TURN (bench.py's numbered), as an agent's turns differ.

    python scripts/callgrind_serve.py [N] [--only small|large] [--kinds responses,chat,anthropic]
                                      [--versus DIR]

N: requests per row (20). CALLGRIND_SERVE_ROOT=DIR (or --root DIR) runs the serve of another
checkout (an earlier commit's `git archive HEAD proxy | tar -x -C DIR`); --versus DIR runs a second
serve from DIR beside this one in the same run, for a before/after. The mock and the hop are this
checkout's. The dumps stay in the printed directory (`callgrind_annotate FILE`; it names the
interpreter's C functions, not Python's: for those, scripts/profile_serve.py).
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

from scripts.bench import KEY, TURN, last_sent, numbered  # noqa: E402
from scripts.bench_tails import LARGE, PATHS, SMALL, body  # noqa: E402
from tests.servers import Process, free_port  # noqa: E402

WARM = 10  # requests before the counters are zeroed: connections, caches, first-call imports


class Callgrinded:
    """A server (`python ARGS...`) under callgrind, started; `ready` waits until it prints ready."""

    def __init__(self, tmp: Path, name: str, args: list[str], cwd: Path) -> None:
        self.name, self.port = name, free_port()
        self.out = tmp / f"{name}.callgrind"
        self.log_path = tmp / f"{name}.log"
        self.log = open(self.log_path, "w+")  # noqa: SIM115 - the process's; closed with it
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out}", f"--log-file={tmp / name}.vg",
               sys.executable, *[a.replace("{port}", str(self.port)) for a in args]]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, cwd=cwd,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.url = f"http://127.0.0.1:{self.port}"

    def ready(self) -> None:
        deadline = time.monotonic() + 1800  # start-up under callgrind: minutes on a loaded machine
        while not re.search(r"(?<![A-Za-z])ready", self.log_path.read_text()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start:\n{self.log_path.read_text()}")
            time.sleep(0.5)

    def zero(self) -> None:
        subprocess.run(["callgrind_control", "-z", str(self.proc.pid)], check=True, capture_output=True)

    def dump(self, label: str) -> tuple[int, Path]:
        """The instructions since the last zero, and the dump that holds them."""
        before = set(self.out.parent.glob(self.out.name + ".*"))
        subprocess.run(["callgrind_control", "-d", label, str(self.proc.pid)], check=True, capture_output=True)
        for _ in range(600):
            new = sorted(set(self.out.parent.glob(self.out.name + ".*")) - before, key=lambda p: p.stat().st_mtime)
            if new:
                text = new[-1].read_text(errors="replace")
                found = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
                if found:
                    return int(found.group(1)), new[-1]
            time.sleep(0.1)
        raise RuntimeError(f"{self.name}: no dump for {label}")

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


def measure(server: Callgrinded, path: str, b: dict, n: int, label: str) -> tuple[float, Path]:
    content = numbered(b)
    asyncio.run(send(server.url + path, content, WARM, 10_000))
    server.zero()
    asyncio.run(send(server.url + path, content, n, 20_000))
    total, dump = server.dump(label)
    return total / n, dump


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("n", nargs="?", type=int, default=20)
    p.add_argument("--only", choices=("small", "large"))
    p.add_argument("--kinds", default="responses,chat,anthropic")
    p.add_argument("--root", type=Path, default=Path(os.environ.get("CALLGRIND_SERVE_ROOT") or ROOT),
                   help="the checkout whose serve runs")
    p.add_argument("--versus", type=Path, help="a second checkout whose serve runs beside it (before/after)")
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
        proxy = Callgrinded(tmp, "proxy", serve, args.root.resolve())
        servers.append(proxy)
        versus = None
        if args.versus:
            versus = Callgrinded(tmp, "versus", serve, args.versus.resolve())
            servers.append(versus)
        hop = Callgrinded(tmp, "hop", [str(ROOT / "scripts" / "null_hop.py"), "{port}", mock_url], ROOT)
        servers.append(hop)
        for s in servers:
            s.ready()
        head = "| request | hop instructions/request | proxy instructions/request | proxy − hop | proxy / hop |"
        if versus:
            head += f" {args.versus.name} instructions/request | {args.versus.name} − hop | {args.versus.name} / hop |"
        lines = [head, "|" + "---|" * (head.count("|") - 1)]
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
                h, _ = measure(hop, PATHS["native"], sent, args.n, f"hop-{workload}-{kind}")
                got, _ = measure(proxy, PATHS[kind], b, args.n, f"proxy-{workload}-{kind}")
                row = f"| {label} | {h / 1e6:.2f} M | {got / 1e6:.2f} M | {(got - h) / 1e6:+.2f} M | {got / h:.2f}× |"
                if versus:
                    old, _ = measure(versus, PATHS[kind], b, args.n, f"versus-{workload}-{kind}")
                    row += f" {old / 1e6:.2f} M | {(old - h) / 1e6:+.2f} M | {old / h:.2f}× |"
                lines.append(row)
                print(row, flush=True)
        load = os.getloadavg()
        print(f"\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, N={args.n} requests per row (after {WARM} warm-up), "
              f"one at a time; load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}; "
              f"serve of {args.root.resolve()}" + (f", versus {args.versus.resolve()}" if versus else ""))
        print("\n".join(lines))
    finally:
        for s in servers:
            s.stop()
        mock.stop()


if __name__ == "__main__":
    main()
