"""Where a request's CPU goes in `serve` (issue 27's flame summary): py-spy samples the server while
a load generator sends one kind of request, the server alone on CPU 0, the mock and the load on CPU 1.

Why pinned: py-spy samples wall-clock stacks. Unpinned on two cores, a write that wakes the client
or the mock often lets the scheduler run that process on the proxy's core; the proxy's thread waits,
runnable, and every sample of the wait lands on the write (StreamWriter._writelines showed 18 % of
the samples while its CPU, measured with thread_time, was a quarter of its wall time). Pinned, the
woken process runs on the other core.

    python scripts/profile_serve.py [small|large] [responses|chat|native|anthropic] [--agent] [--stream]
                                    [--seconds N] [--raw FILE] [-- serve options...]

--agent: bench_tails.py's agent-shaped bodies (a tool-call history, real tool schemas, a system prompt)
instead of bench.py's (anthropic needs it); --image adds a ~300 KB screenshot to the last user turn.

Prints the functions by microseconds per request, inclusive and self. Time the event loop spends
waiting (uvloop's epoll wait, which py-spy cannot always tell from work) is the self time of
Runner.run: subtract it from the total for the CPU per request.
"""

import argparse
import asyncio
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.bench import KEY, Process, bodies, free_port  # noqa: E402

RATE = 500  # samples per second
CLIENTS = 2  # concurrent requests: enough to keep the server busy, few enough for one core


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workload", nargs="?", default="large", choices=("small", "large"))
    p.add_argument("kind", nargs="?", default="responses", choices=("responses", "chat", "native", "anthropic"))
    p.add_argument("--agent", action="store_true", help="bench_tails.py's agent-shaped bodies")
    p.add_argument("--image", action="store_true", help="with --agent: a screenshot in the last user turn")
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--stream", action="store_true", help="ask for a streamed answer (SSE)")
    p.add_argument("--raw", type=Path, help="keep py-spy's raw samples here")
    p.add_argument("--top", type=int, default=40)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, extra = p.parse_args(argv[:cut]), argv[cut + 1:]  # after --: options for serve
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        sys.exit("error: py-spy is not installed (pip install py-spy)")
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("error: two CPUs are needed (the server gets one of its own)")
    tmp = Path(tempfile.mkdtemp(prefix="gtp-profile-"))
    raw = args.raw or tmp / "samples.txt"
    mport, port = free_port(), free_port()
    if args.agent or args.kind == "anthropic":
        from dataclasses import replace

        from scripts.bench_tails import LARGE, PATHS, SMALL
        from scripts.bench_tails import body as agent_body
        shape = replace(LARGE if args.workload == "large" else SMALL, image=args.image)
        path, body = PATHS[args.kind], agent_body(args.kind, shape)
    else:
        path, body = bodies(args.kind, args.workload)
    if args.stream and args.kind == "native":
        path = path.replace(":generateContent", ":streamGenerateContent?alt=sse")
    elif args.stream:
        body = {**body, "stream": True}
    url, data = f"http://127.0.0.1:{port}{path}", json.dumps(body).encode()
    procs = [Process(tmp, "mock", ["taskset", "-c", "1", sys.executable, "-m", "proxy", "mock", "--port", str(mport)],
                     "ready")]
    try:
        procs.append(Process(tmp, "serve", ["taskset", "-c", "0", sys.executable, "-m", "proxy", "--log-level",
                                            "WARNING", "serve", "--port", str(port), "--upstream",
                                            f"http://127.0.0.1:{mport}", *extra], "ready"))
        os.sched_setaffinity(0, {1})
        asyncio.run(_load(url, data, 2))  # warm-up
        sampler = subprocess.Popen([spy, "record", "-p", str(procs[1].proc.pid), "-r", str(RATE), "-f", "raw", "-o",
                                    str(raw), "-d", str(int(args.seconds)), "--nonblocking"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # py-spy attaches
        requests = asyncio.run(_load(url, data, args.seconds))
        sampler.wait()
    finally:
        for proc in reversed(procs):  # a serve that failed to start leaves no mock behind
            proc.stop()
    report(raw, requests, args.top, f"{args.workload} {args.kind}{' stream' if args.stream else ''}")


async def _load(url: str, data: bytes, seconds: float) -> int:
    done, stop = 0, time.perf_counter() + seconds
    async with aiohttp.ClientSession() as s:
        async def client() -> None:
            nonlocal done
            while time.perf_counter() < stop:
                async with s.post(url, data=data, headers={**KEY, "content-type": "application/json"}) as r:
                    await r.read()
                    if r.status != 200:
                        raise RuntimeError(f"{url}: {r.status} {(await r.text())[:300]}")
                done += 1
        await asyncio.gather(*(client() for _ in range(CLIENTS)))
    return done


def report(raw: Path, requests: int, top: int, title: str) -> None:
    """py-spy's raw lines ("frame;frame;... count") as microseconds per request per function."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [_name(f) for f in stack.split(";")]
        for name in set(frames):
            inclusive[name] += n
        own[frames[-1]] += n
    # Samples are taken for the length of py-spy's run; requests were counted over about as long.
    per = 1e6 / RATE / max(1, requests)
    print(f"{title}: {requests} requests, {total} samples, {total * per:.0f} us sampled per request")
    for label, counter in (("inclusive", inclusive), ("self", own)):
        print(f"\n{label}, us per request:")
        for name, n in counter.most_common(top):
            print(f"{n * per:9.1f}  {name}")


def _name(frame: str) -> str:
    """'func (path/to/file.py:12)' -> 'func file.py'."""
    func, _, where = frame.partition(" (")
    return f"{func} {where.split(':')[0].rsplit('/', 1)[-1]}" if where else func


if __name__ == "__main__":
    main()
