"""The MITM rows of scripts/bench.sh: plain mitmdump (a routing script only) against mitmdump with
the addon, without a session, with a session's tools injected, and with a session that has
captured 4,096 calls. Everything is a process of its own: the mock Gemini over TLS under Google's
host names, each mitmdump, and the load generator (bench.py).

`python scripts/bench_mitm.py mock PORT DIR` is the TLS mock's process.

`python scripts/bench_mitm.py rows` (issue 62) measures the addon's CPU per flow against plain
mitmdump's on a small flow (one user turn), for plaintext HTTP and TLS x the app's own tools present
or absent x 0 or 20 tools injected from a session: 8 rows, each the median ratio of BENCH_MITM_ROUNDS
rounds in which plain mitmdump and the addon are measured one after the other, in alternating order
(A/B/B/A...), so a drift of the shared machine falls on both sides. It prints the table and writes it
into its own section of docs/benchmarks.md.
"""

import asyncio
import json
import ssl
import sys
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from proxy.ca import generate_ca  # noqa: E402
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
        await start_mock(port=port, ssl_context=server_ctx)
        print("ready", flush=True)
        await asyncio.Event().wait()
    asyncio.run(main())


ROWS_START = "<!-- bench_mitm rows: start -->"
ROWS_END = "<!-- bench_mitm rows: end -->"


def small_body(app_tools: bool) -> dict:
    """bench.py's small native body (one user turn of ~850 bytes), with or without the app's one tool."""
    from scripts.bench import bodies
    body = dict(bodies("native", "small")[1])
    if not app_tools:
        body.pop("tools")
    return body


def flow_rows(tmp: Path, upstream: str) -> list[dict]:
    """The 8 rows: (plaintext, TLS) x app tools (present, absent) x injected (0, 20). `upstream`: "mock"
    (the strict mock, which checks every declaration: 20 tools cost it about 1.9 ms a request against
    0.35, so the addon's flows wait longer upstream than plain mitmdump's) or "canned" (one fixed answer
    after reading the body: the upstream costs the same for both, only mitmdump's own work differs)."""
    import os
    import statistics

    from scripts.bench import measure, tools
    rounds = int(os.environ.get("BENCH_MITM_ROUNDS", "5"))
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
                                            "--set", f"gtp_route={route}", "--set", f"gtp_frontend_port={fronts[-1]}")

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
        out = []
        for scheme in ("http", "tls"):
            url = (GL if scheme == "tls" else GL.replace("https://", "http://")) + \
                "/v1beta/models/gemini-2.5-flash:generateContent"
            ssl_ctx = bench.client_ssl if scheme == "tls" else False
            for app_tools in (True, False):
                body = small_body(app_tools)
                for injected in (0, 20):
                    pairs = []
                    for i in range(rounds):
                        got = {}
                        for which in ("plain", "addon") if i % 2 == 0 else ("addon", "plain"):
                            proc, via = (plain if which == "plain" else addons)[scheme]
                            got[which] = asyncio.run(measure(
                                url, body, [proc.proc.pid], via=via, ssl=ssl_ctx, sequential=0,
                                headers=bench.headers(session=injected > 0 and which == "addon")))
                        pairs.append((got["addon"]["cpu_ms"], got["plain"]["cpu_ms"]))
                    ratios = sorted(a / b for a, b in pairs)
                    out.append({"upstream": upstream, "scheme": "plaintext" if scheme == "http" else "TLS",
                                "app_tools": app_tools,
                                "injected": injected, "ratio": statistics.median(ratios), "low": ratios[0],
                                "high": ratios[-1], "addon_ms": statistics.median(a for a, _ in pairs),
                                "plain_ms": statistics.median(b for _, b in pairs)})
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
                     f"{r['plain_ms']:.2f} | {r['addon_ms']:.2f} | {r['ratio']:.2f}× | "
                     f"{r['low']:.2f}–{r['high']:.2f} |")
    return lines


def write_rows(rows: list[dict], load: str | None = None, when: str | None = None, extra: list[str] = ()) -> None:
    """docs/benchmarks.md's section of these rows (replaced in place); `load`: `uptime` at the run's end."""
    import datetime
    import os
    import subprocess
    doc = ROOT / "docs" / "benchmarks.md"
    load = load or subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    when = when or f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}"
    section = "\n".join([
        ROWS_START, "", "## MITM CPU per flow: plaintext and TLS, app tools, injected tools (issue 62)", "",
        f"`python scripts/bench_mitm.py rows`, run {when} UTC on "
        f"{os.cpu_count()} cores; load at the end (`uptime`): `{load}`.", "",
        "A small flow (bench.py's small native body: one user turn, ~0.9 KB; the app's one tool present or "
        "not), `generateContent` against two upstreams: `canned` (one fixed answer after reading the body: "
        "the same cost whatever the body) and `mock` (the strict mock, which checks each declaration: 20 "
        "tools cost it about 1.9 ms of CPU a request against 0.35, on the same two cores). Each row: the median, over "
        f"{os.environ.get('BENCH_MITM_ROUNDS', '5')} rounds, of the addon's CPU per flow over plain "
        "mitmdump's (a routing script only) measured in the same round, one after the other in alternating "
        f"order, {os.environ.get('BENCH_SECONDS', '3')} s at concurrency 32 each. 20 injected tools: the "
        "flow names a session whose 20 tools (bench.py's `tools(20)`) replace the app's.", "",
        *rows_table(rows), *extra, "", ROWS_END])
    text = doc.read_text() if doc.exists() else ""
    if ROWS_START in text and ROWS_END in text:
        head, rest = text.split(ROWS_START, 1)
        text = head + section + rest.split(ROWS_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(text)


if __name__ == "__main__" and sys.argv[1:2] == ["mock"]:
    _serve_mock(int(sys.argv[2]), Path(sys.argv[3]))
elif __name__ == "__main__" and sys.argv[1:2] == ["canned"]:
    _serve_canned(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
elif __name__ == "__main__" and sys.argv[1:2] == ["rows"]:
    import tempfile
    found = [r for upstream in ("canned", "mock")
             for r in flow_rows(Path(tempfile.mkdtemp(prefix=f"gtp-bench-mitm-{upstream}-")), upstream)]
    print("\n".join(rows_table(found)))
    if "--no-write" not in sys.argv:
        write_rows(found)
