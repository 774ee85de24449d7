"""Issue 8 items 5 and 9 (client side): slow clients are timed out, connections are capped with a
clean refusal, the log cannot flood, and aiohttp's own limit errors answer in JSON."""

import contextlib
import json
import logging
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from proxy.log_limits import RepeatFilter
from proxy.server.site import ServerLimits
from tests.harness import Stack
from tests.mitm_harness import ROOT, free_port


@pytest.fixture(scope="module")
def strict() -> Stack:
    s = Stack(limits=ServerLimits(client_timeout=1.0, max_connections=40))
    yield s
    s.close()


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    return s


def _closed(s: socket.socket, within: float) -> bool:
    """True when the server closes the connection (EOF or reset) within `within` seconds."""
    s.settimeout(within)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _healthy(url: str) -> bool:
    with urllib.request.urlopen(url + "/healthz", timeout=5) as r:
        return r.status == 200


@pytest.mark.serial  # timing-bound: run alone (scripts/test.sh)
def test_slowloris_headers_are_closed_within_the_timeout(strict: Stack) -> None:
    socks = [_connect(strict.url) for _ in range(30)]
    start = time.monotonic()
    for s in socks:
        s.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    stop = threading.Event()

    def trickle() -> None:  # one more header byte every 0.2 s: never a whole request
        while not stop.is_set():
            for s in socks:
                with contextlib.suppress(OSError):
                    s.sendall(b"X")
            time.sleep(0.2)

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    try:
        assert _healthy(strict.url)  # others are served meanwhile
        assert all(_closed(s, 5) for s in socks)
        # the 1 s client timeout (and aiohttp's timer granularity); measured 1.01 s on two loaded cores
        assert time.monotonic() - start < 5
    finally:
        stop.set()
        for s in socks:
            s.close()


@pytest.mark.serial  # timing-bound: run alone (scripts/test.sh)
def test_a_trickled_body_gets_408_in_the_callers_protocol(strict: Stack) -> None:
    for path, check in (("/v1/responses", lambda e: e["code"] == "request_timeout"),
                        ("/v1beta/models/gemini-2.5-flash:generateContent",
                         lambda e: e["status"] == "DEADLINE_EXCEEDED")):
        s = _connect(strict.url)
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  f"Content-Length: 1000\r\n\r\n{{".encode())
        start, data = time.monotonic(), b""
        s.settimeout(0.3)
        while time.monotonic() - start < 5 and b"\r\n\r\n" not in data:
            try:
                s.sendall(b" ")
                data += s.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
        s.settimeout(5)
        try:
            while chunk := s.recv(65536):
                data += chunk
        except OSError:
            pass
        s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408"), data[:300]
        assert check(json.loads(body)["error"])


def test_connection_cap_refuses_cleanly_and_recovers() -> None:
    stack = Stack(limits=ServerLimits(client_timeout=30.0, max_connections=5))
    try:
        idle = [_connect(stack.url) for _ in range(5)]
        time.sleep(0.2)
        extra = _connect(stack.url)
        data = b""
        extra.settimeout(5)
        while chunk := extra.recv(65536):
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in head.lower()
        err = json.loads(body)["error"]
        assert "limit of 5 connections" in err["message"] and err["status"] == "UNAVAILABLE"
        c = openai.OpenAI(base_url=stack.url + "/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError):  # the SDK reads the refusal as its own error
            c.models.list()
        for s in idle:
            s.close()
        time.sleep(0.3)
        assert _healthy(stack.url)
    finally:
        stack.close()


def test_oversized_header_answers_in_json(strict: Stack) -> None:
    c = openai.OpenAI(base_url=strict.url + "/v1", api_key="k", max_retries=0,
                      default_headers={"x-big": "a" * 9000})
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model="gemini-2.5-flash", input="hi")
    assert "8190" in e.value.message
    g = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=strict.url, headers={"x-big": "a" * 9000}))
    with pytest.raises(genai_errors.ClientError) as ge:
        g.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert ge.value.code == 400 and "8190" in ge.value.message
    assert _healthy(strict.url)


def test_repeated_records_are_limited_and_counted() -> None:
    now = [0.0]
    f = RepeatFilter(burst=3, window=10, clock=lambda: now[0])

    def rec(msg: str, arg: object) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, msg, (arg,), None)

    passed = [f.filter(rec("accept failed: %s", i)) for i in range(1000)]
    assert sum(passed) == 3
    assert f.filter(rec("another message %s", 1))
    now[0] = 11
    r = rec("accept failed: %s", "x")
    assert f.filter(r) and "997 more like it" in r.getMessage()


def test_the_access_log_is_never_limited() -> None:
    """One line per request, all with one template: none is held back (it held all but 5 per 10 s)."""
    f = RepeatFilter(burst=3, window=10, clock=lambda: 0.0)
    lines = [logging.LogRecord("gtp.access", logging.INFO, __file__, 1, "%s %s %s", ("POST", "/v1/responses", i),
                               None) for i in range(100)]
    assert all(f.filter(line) for line in lines)


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_at_the_fd_limit_clients_get_503_and_the_log_stays_small(tmp_path, loop: str) -> None:
    """A real `serve` with 256 fds: 400 connections. The cap refuses the excess with a 503 instead of
    running out of fds, /healthz answers once they go, and the log does not flood."""
    port = free_port()

    def low_fds() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    log = open(tmp_path / "serve.log", "w+")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "proxy", "--event-loop", loop, "serve", "--port", str(port),
                             "--upstream", "mock", "--client-timeout", "20"], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT, preexec_fn=low_fds, env={**os.environ, "GTP_API_KEYS": ""})
    socks: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                _healthy(f"http://127.0.0.1:{port}")
                break
            except OSError:
                time.sleep(0.1)
        refused = 0
        for _ in range(400):
            s = _connect(f"http://127.0.0.1:{port}")
            socks.append(s)
        cap = (256 - 128) // 2
        pending = list(socks)
        for s in socks:
            s.setblocking(False)
        until = time.monotonic() + 10
        while pending and refused < 400 - cap and time.monotonic() < until:
            time.sleep(0.1)
            for s in list(pending):
                try:
                    if s.recv(4096).startswith(b"HTTP/1.1 503"):
                        refused += 1
                    pending.remove(s)
                except BlockingIOError:
                    pass  # still open: one of the connections being served
        assert refused >= 400 - cap, refused
        for s in socks:
            s.close()
        socks.clear()
        time.sleep(0.5)
        assert _healthy(f"http://127.0.0.1:{port}")
        assert proc.poll() is None
        log.flush()
        assert os.path.getsize(tmp_path / "serve.log") < 20_000
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        proc.wait(20)
        log.close()
