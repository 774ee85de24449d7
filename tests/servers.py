"""Real servers for the multi-instance tests: redis-server, haproxy, `gemini-tool-proxy serve`
processes and the mock Gemini, each a process of its own on a free loopback port."""

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from aiohttp import web

from tests.mitm_harness import ROOT, free_port, stop

__all__ = ["HAProxy", "Process", "RedisServer", "free_port", "mock_gemini", "proxy_instance", "stop"]


def _which(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    if not found:
        raise RuntimeError(f"{name} is not installed: the README's test command (scripts/test.sh) installs it")
    return found


def _wait_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


def monitored(seen: bytearray, about: bytes) -> bytes:
    """The lines of what RedisServer.monitor() saw whose command names a key or channel beginning
    with `about` (MONITOR quotes each argument)."""
    return b"\n".join(line for line in bytes(seen).split(b"\r\n") if b'"' + about in line)


class RedisServer:
    """redis-server with append-only persistence, so a restart keeps what was stored."""

    def __init__(self, tmp: Path, fsync: str = "always") -> None:
        self.dir, self.port, self.fsync = tmp / "redis", free_port(), fsync
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen([_which("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1",
                                      "--dir", str(self.dir), "--appendonly", "yes", "--appendfsync", self.fsync,
                                      "--save", "", "--protected-mode", "yes"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_port(self.port, self.proc, "redis-server")

    def commands(self) -> int:
        """Commands clients have sent this server (scripts, pings), not those a script runs: one a
        round trip, for counting a proxy's round trips per request."""
        with socket.create_connection(("127.0.0.1", self.port)) as s:
            s.sendall(b"INFO commandstats\r\n")
            header = b""
            while b"\r\n" not in header:
                header += s.recv(65536)
            size = int(header[1:header.index(b"\r\n")])
            text = header[header.index(b"\r\n") + 2:]
            while len(text) < size:
                text += s.recv(65536)
        calls = {line.split(":")[0]: int(line.split("calls=")[1].split(",")[0])
                 for line in text.decode().splitlines() if line.startswith("cmdstat_")}
        return sum(calls.get(f"cmdstat_{c}", 0) for c in ("evalsha", "eval", "ping", "exists", "script"))

    @contextlib.contextmanager
    def monitor(self) -> Iterator[bytearray]:
        """Every command clients send this server while the block runs, with its arguments, as MONITOR
        prints them (printable bytes as they are)."""
        seen = bytearray()
        conn = socket.create_connection(("127.0.0.1", self.port))
        conn.settimeout(0.2)
        conn.sendall(b"MONITOR\r\n")
        done = threading.Event()

        def read() -> None:
            while not done.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                seen.extend(data)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            yield seen
        finally:
            time.sleep(0.5)  # what was sent last reaches the monitor
            done.set()
            reader.join(5)
            conn.close()

    def stop(self) -> None:
        if self.proc:
            stop(self.proc, 10)


class Process:
    """A command that prints a ready line; its output goes to a log file."""

    def __init__(self, tmp: Path, name: str, args: list[str], ready: str, env: dict[str, str] | None = None,
                 timeout: float = 30, cwd: Path = ROOT, base_env: dict[str, str] | None = None) -> None:
        self.log_path = tmp / f"{name}.log"
        self.log = open(self.log_path, "w+")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, cwd=cwd,
                                     env={**(os.environ if base_env is None else base_env), "PYTHONUNBUFFERED": "1",
                                          **(env or {})})
        deadline = time.monotonic() + timeout
        # The marker as a word: "address already in use" is no "ready" (a port taken meanwhile then
        # failed later as a refused connection, far from its cause).
        marker = re.compile(rf"(?<![A-Za-z]){re.escape(ready)}")
        while not marker.search(self.log_path.read_text()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start:\n{self.log_path.read_text()}")
            time.sleep(0.05)

    def logs(self) -> str:
        return self.log_path.read_text()

    def url(self) -> str:
        """The address its ready line announces: a server started on port 0 says which port it got,
        so no other process can take the port between a free_port() check and the bind."""
        found = re.search(r"ready on (http://\S+)", self.logs())
        if found is None:
            raise RuntimeError(f"no address in the ready line:\n{self.logs()}")
        return found.group(1)

    def stop(self) -> None:
        stop(self.proc)
        self.log.close()


def mock_gemini(tmp: Path) -> tuple[Process, str]:
    port = free_port()
    return Process(tmp, "mock", [sys.executable, "-m", "proxy", "mock", "--port", str(port)], "ready"), \
        f"http://127.0.0.1:{port}"


def proxy_instance(tmp: Path, name: str, upstream: str, *extra: str) -> tuple[Process, str]:
    port = free_port()
    return Process(tmp, name, [sys.executable, "-m", "proxy", "serve", "--port", str(port), "--upstream", upstream,
                               "--carrier-keys-file", str(tmp / "carrier-keys"), *extra], "ready",
                   env={"GEMINI_API_KEY": "test-key"}), f"http://127.0.0.1:{port}"


class HAProxy:
    """haproxy in front of `backends`, round robin, as a user would run it (see README). `check`: each
    server's health-check options; `defaults`: lines of the defaults section; `health`: the path
    checked. Its stats socket says what it makes of each server (`status`)."""

    def __init__(self, tmp: Path, backends: list[str], check: str = "check inter 1s",
                 defaults: str = "option http-server-close", health: str = "/healthz") -> None:
        self.port = free_port()
        self.socket = tmp / "haproxy.sock"
        servers = "\n".join(f"    server p{i} {b.removeprefix('http://')} {check}"
                            for i, b in enumerate(backends))
        cfg = self.config_path = tmp / "haproxy.cfg"
        cfg.write_text(f"""global
    maxconn 4096
    stats socket {self.socket} level admin
defaults
    mode http
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    {defaults}
frontend gtp
    bind 127.0.0.1:{self.port}
    default_backend proxies
backend proxies
    balance roundrobin
    option httpchk GET {health}
{servers}
""")
        self.proc = subprocess.Popen([_which("haproxy"), "-f", str(cfg), "-db"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        _wait_port(self.port, self.proc, "haproxy")
        self.url = f"http://127.0.0.1:{self.port}"

    def status(self, server: str) -> str:
        """What haproxy makes of `server` (p0, p1...) now: UP, DOWN, "DOWN 1/2"..., from `show stat`."""
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(self.socket))
            s.sendall(b"show stat\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        lines = data.decode().splitlines()
        head = lines[0].lstrip("# ").split(",")
        for line in lines[1:]:
            row = dict(zip(head, line.split(","), strict=False))
            if row.get("pxname") == "proxies" and row.get("svname") == server:
                return row["status"]
        raise KeyError(server)

    def stop(self) -> None:
        stop(self.proc, 10)


async def loopback_site(app: web.Application) -> tuple[web.AppRunner, str]:
    """An aiohttp app of a test's own (a collector, a forwarder) served on a free loopback port."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"


class ResponsesLoad:
    """Clients sending Responses requests nonstop while something restarts behind them (a rolling
    restart's load): `make_client()` gives each its openai client; every other request is streamed
    slowly (~0.3 s), so some are mid-stream when their instance is told to stop. Use as a context:
    the clients run inside it; `results` counts (kind, ok), `failures` says why each failed."""

    def __init__(self, make_client, model: str, clients: int = 4) -> None:
        from collections import Counter

        self.make_client, self.model = make_client, model
        self.done, self.lock = threading.Event(), threading.Lock()
        self.results: Counter = Counter()
        self.failures: list[str] = []
        self.threads = [threading.Thread(target=self._load, args=(n,)) for n in range(clients)]

    def _load(self, n: int) -> None:
        client = self.make_client()
        i = 0
        while not self.done.is_set():
            i += 1
            streamed = i % 2 == 0
            try:
                if streamed:
                    with client.responses.create(model=self.model, stream=True,
                                                 input=f"[[mock:slow 0.1]] client {n} turn {i} say hi") as ev:
                        last = [e.type for e in ev][-1]
                    ok = last == "response.completed"
                else:
                    ok = client.responses.create(model=self.model, input=f"client {n} turn {i}").status == "completed"
                why = "" if ok else "not completed"
            except Exception as e:  # noqa: BLE001 - every failure is counted and shown
                # Whose refusal it was: a balancer's own 503 is an HTML page, the proxy's is its JSON error.
                try:
                    body = getattr(getattr(e, "response", None), "text", "")
                except Exception:  # noqa: BLE001 - a streamed body that was never read
                    body = ""
                ok, why = False, f"{type(e).__name__}: {e}" + (f" [{' '.join(body.split())[:160]}]" if body else "")
            with self.lock:
                self.results["streamed" if streamed else "whole", ok] += 1
                if not ok:
                    self.failures.append(why)

    def __enter__(self) -> "ResponsesLoad":
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        for t in self.threads:
            t.join(30)
