"""Instructions per flow (valgrind's callgrind), plain mitmdump against the addon, on the small
flow of bench_mitm.py's rows, plaintext and TLS: repeatable while other processes load the machine,
where CPU-time ratios are not. Each mitmdump runs under callgrind; after a warm-up its counters are
zeroed (callgrind_control -z), N flows are sent one at a time, and the counters dumped (-d):
instructions of those N flows only, start-up excluded. The canned upstream (bench_mitm.py) answers.

`python scripts/callgrind_mitm.py [--large] [--cache] [N]` prints the table (ratios against plain
mitmdump, same run). `--cache` simulates the caches and the branch predictor too (valgrind's
--cache-sim, --branch-sim: about 2x slower) and adds what instructions do not show: first-level data
and instruction cache misses and mispredicted branches per flow. Those are what a flow pays on this
machine, where at 50 flows/s each flow finds its caches holding the other processes' work
(docs/benchmarks.md, the MITM findings): a miss there costs main memory's or the shared cache's
latency, so the data misses are the count that follows the addon's extra CPU time.
`--large` measures bench_tails.py's large native body instead (`body("native", LARGE)`:
a ~50-turn agent history of calls and results, 20 tools, a system prompt; ~68 KB), without a
session (the app's own tools, repaired where they need it): issue 62's costly flow, "large" rows.
CALLGRIND_ADDON_ROOT=DIR runs the addon of another checkout (an earlier commit's `git archive`),
for a before/after; CALLGRIND_SCHEMES=http (or tls) measures one scheme only. The dumps stay in
the printed directory (`callgrind_annotate FILE` shows where the instructions went).
"""

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from proxy.ca import generate_ca  # noqa: E402
from scripts.bench import tools  # noqa: E402
from scripts.bench_mitm import GL, SESSION, small_body  # noqa: E402
from scripts.callgrind_dump import CACHE, SHOWN, dump  # noqa: E402
from tests.mitm_harness import MITMDUMP  # noqa: E402
from tests.servers import Process, free_port  # noqa: E402

ADDON_ROOT = Path(os.environ.get("CALLGRIND_ADDON_ROOT") or ROOT)
PATH = "/v1beta/models/gemini-2.5-flash:generateContent"
URLS = {"http": GL.replace("https://", "http://") + PATH, "tls": GL + PATH}


def start(tmp: Path, name: str, *args: str, cache: bool = False) -> tuple[subprocess.Popen, str, Path]:
    """A mitmdump under callgrind, started (`ready` waits until it listens)."""
    port = free_port()
    out = tmp / f"{name}.callgrind"
    log = open(tmp / f"{name}.log", "w+")  # noqa: SIM115 - the process's; closed with it
    trusted = tmp / "upstream-ca" / "mitmproxy-ca-cert.pem"  # the canned upstream's CA
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", *(CACHE if cache else ()), f"--callgrind-out-file={out}",
                             str(MITMDUMP),
                             "--listen-host", "127.0.0.1", "--listen-port", str(port), "--set", "flow_detail=0",
                             "--set", f"confdir={tmp / 'mitm-ca'}", "--set", "connection_strategy=eager",
                             "--set", f"ssl_verify_upstream_trusted_ca={trusted}", *args],
                            stdout=log, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}", out


def ready(tmp: Path, started: tuple[subprocess.Popen, str, Path]) -> None:
    proc, _, out = started
    log = out.with_suffix(".log")
    deadline = time.monotonic() + 1800  # start-up under callgrind: minutes on a loaded machine
    while "proxy listening" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(log.read_text())
        time.sleep(0.5)


async def flows(via: str, url: str, ssl_ctx: object, body: dict, session: bool, n: int) -> None:
    headers = {"x-goog-api-key": "bench-key", "content-type": "application/json",
               **({"x-gtp-session": SESSION} if session else {})}
    import json
    data = json.dumps(body).encode()
    async with aiohttp.ClientSession() as s:
        for _ in range(n):
            async with s.post(url, data=data, headers=headers, proxy=via, ssl=ssl_ctx) as r:
                await r.read()
                assert r.status == 200, await r.text()


def measure(proc: subprocess.Popen, via: str, out: Path, scheme: str, ssl_ctx: object, body: dict, session: bool,
            n: int, label: str) -> dict[str, float]:
    """Counts per flow over `n` flows, after 20 unmeasured (connections, caches)."""
    asyncio.run(flows(via, URLS[scheme], ssl_ctx, body, session, 20))
    subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True)
    asyncio.run(flows(via, URLS[scheme], ssl_ctx, body, session, n))
    return {k: v / n for k, v in dump(proc.pid, out, label)[0].items()}


def large_body() -> dict:
    """bench_tails.py's large native body (imported only when asked for)."""
    from scripts.bench_tails import LARGE, body
    return body("native", LARGE)


def main() -> None:
    import ssl
    args = sys.argv[1:]
    large, cache = "--large" in args, "--cache" in args
    args = [a for a in args if a not in ("--large", "--cache")]
    n = int(args[0]) if args else 100
    schemes = (os.environ.get("CALLGRIND_SCHEMES") or "http,tls").split(",")
    tmp = Path(tempfile.mkdtemp(prefix="gtp-callgrind-"))
    print(f"dumps in {tmp}", flush=True)
    http_port, tls_port = free_port(), free_port()
    canned = Process(tmp, "canned", [sys.executable, str(ROOT / "scripts" / "bench_mitm.py"), "canned",
                                     str(http_port), str(tls_port), str(tmp)], "ready")
    generate_ca(tmp / "mitm-ca")  # before the mitmdumps, which share it
    client_ssl = ssl.create_default_context(cafile=str(tmp / "mitm-ca" / "mitmproxy-ca-cert.pem"))
    procs, plain, addon, fronts = [], {}, {}, {}
    try:
        for scheme in schemes:
            route = f"127.0.0.1:{http_port if scheme == 'http' else tls_port}"
            plain[scheme] = start(tmp, f"plain-{scheme}", "-s", str(ROOT / "scripts" / "bench_route.py"),
                                  "--set", f"bench_route={route}", cache=cache)
            procs.append(plain[scheme][0])
            fronts[scheme] = free_port()
            addon[scheme] = start(tmp, f"addon-{scheme}", "-s", str(ADDON_ROOT / "addons" / "gemini_tools.py"),
                                  "--set", f"gtp_route={route}", "--set", f"gtp_frontend_port={fronts[scheme]}",
                                  cache=cache)
            procs.append(addon[scheme][0])
        for started in (*plain.values(), *addon.values()):
            ready(tmp, started)

        async def set_tools(front: int) -> None:
            for _ in range(600):
                try:
                    async with aiohttp.ClientSession() as s, s.put(
                            f"http://127.0.0.1:{front}/v1/sessions/{SESSION}/tools", json={"tools": tools(20)}) as r:
                        assert r.status == 200, await r.text()
                        return
                except aiohttp.ClientConnectorError:
                    await asyncio.sleep(0.5)
        if not large:  # (the large rows have no session)
            for front in fronts.values():
                asyncio.run(set_tools(front))
        extra = [k for k in SHOWN if k != "Ir"] if cache else []
        lines = ["| flow (canned upstream) | app's own tools | tools injected | plain mitmdump "
                 "instructions/flow | addon instructions/flow | addon vs plain |" +
                 "".join(f" {k}/flow: plain, addon (vs plain) |" for k in extra), "|---|---|---|---|---|---|" +
                 "---|" * len(extra)]
        # (label, body, app's tools, injected counts): the small body with and without the app's tool, or the large
        cases = [("large", large_body(), "present", (0,))] if large else [
            ("", small_body(app_tools), "present" if app_tools else "absent", (0, 20)) for app_tools in (True, False)]
        for scheme in schemes:
            ssl_ctx = client_ssl if scheme == "tls" else False
            for label, body, app_tools, injections in cases:
                base = measure(*plain[scheme], scheme, ssl_ctx, body, False, n, f"plain-{scheme}-{label}{app_tools}")
                for injected in injections:
                    got = measure(*addon[scheme], scheme, ssl_ctx, body, injected > 0, n,
                                  f"addon-{scheme}-{label}{app_tools}-{injected}")
                    lines.append(f"| {'plaintext' if scheme == 'http' else 'TLS'}{' ' + label if label else ''} | "
                                 f"{app_tools} | {injected} | {base['Ir'] / 1e6:.2f} M | {got['Ir'] / 1e6:.2f} M | "
                                 f"{got['Ir'] / base['Ir']:.3f}× |" + "".join(
                                     f" {base[k] / 1e3:.1f} k, {got[k] / 1e3:.1f} k ({got[k] / base[k]:.3f}×) |"
                                     for k in extra))
                    print(lines[-1], flush=True)
        print("\n".join(lines))
    finally:
        for p in procs:
            p.terminate()
            p.wait(30)
        canned.stop()


if __name__ == "__main__":
    main()
