"""The MITM rows of scripts/bench.sh: plain mitmdump (a routing script only) against mitmdump with
the addon, without a session, with a session's tools injected, and with a session that has
captured 4,096 calls. Everything is a process of its own: the mock Gemini over TLS under Google's
host names, each mitmdump, and the load generator (bench.py).

`python scripts/bench_mitm.py mock PORT DIR` is the TLS mock's process.
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

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.procs = tmp, []
        port = free_port()
        self.mock = self._start("mitm-mock", [sys.executable, __file__, "mock", str(port), str(tmp)], "ready")
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


def _serve_mock(port: int, tmp: Path) -> None:
    from proxy.mock.server import start_mock
    server_ctx, _ = upstream_tls(tmp)

    async def main() -> None:
        await start_mock(port=port, ssl_context=server_ctx)
        print("ready", flush=True)
        await asyncio.Event().wait()
    asyncio.run(main())


if __name__ == "__main__" and sys.argv[1:2] == ["mock"]:
    _serve_mock(int(sys.argv[2]), Path(sys.argv[3]))
