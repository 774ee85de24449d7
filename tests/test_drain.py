"""Issue 61 item 4: the graceful drain. On SIGTERM /readyz answers 503 at once (/healthz stays 200)
while the front-end keeps accepting and serving for --drain-seconds; then it refuses connections, a
stream in flight still completes, and a WebSocket closes with 1001 after its response. Proven under
load by a rolling restart of two real instances on one real Redis behind a real HAProxy: zero failed
requests, and each restarted instance serves again."""

import json
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import openai
import pytest
import websockets.sync.client as ws_client
from websockets.exceptions import ConnectionClosed

from tests.servers import HAProxy, Process, RedisServer, ResponsesLoad, free_port

pytestmark = pytest.mark.serial  # timing-bound: run alone (scripts/test.sh)

MODEL = "gemini-2.5-flash"


def serve(tmp: Path, name: str, *extra: str, port: int = 0) -> Process:
    return Process(tmp, name, [sys.executable, "-m", "proxy", "serve", "--port", str(port), "--upstream", "mock",
                               "--carrier-keys-file", str(tmp / "carrier-keys"), *extra], "ready",
                   env={"GEMINI_API_KEY": "test-key"})


def get(url: str) -> tuple[int, dict, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)


def refused(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((parts.hostname, parts.port)) != 0


def test_sigterm_drains_then_refuses_while_streams_finish(tmp_path: Path) -> None:
    drain = 2.0
    proc = serve(tmp_path, "drain", "--drain-seconds", str(drain), "--shutdown-timeout", "10")
    url = proc.url()
    try:
        assert get(url + "/readyz")[0] == 200
        client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=30)
        first, stream_end = threading.Event(), {}

        def stream() -> None:  # ~4.5 s: outlasts the drain, ends after the listener closed
            with client.responses.create(model=MODEL, stream=True,
                                         input="[[mock:slow 1.5]] count to ten slowly please one two three") as ev:
                for e in ev:
                    first.set()
                    stream_end["type"], stream_end["at"] = e.type, time.monotonic()

        streamer = threading.Thread(target=stream)
        streamer.start()
        assert first.wait(10)
        ws = ws_client.connect(url.replace("http", "ws") + "/v1/responses",
                               additional_headers={"authorization": "Bearer k"})

        sent = time.monotonic()
        proc.proc.send_signal(signal.SIGTERM)
        # The signal reaches the process asynchronously: a readyz sent with it may still be answered 200.
        while (ready := get(url + "/readyz"))[0] == 200:
            assert time.monotonic() - sent < 0.5, "readyz turns 503 at once"
            time.sleep(0.01)
        assert ready[0] == 503 and ready[1]["status"] == "draining", ready
        assert get(url + "/healthz")[:2] == (200, {"status": "ok"}), "alive while draining"

        # Still served while draining, on new connections; each answer closes its connection.
        answer = client.responses.with_raw_response.create(model=MODEL, input="hello during the drain")
        assert answer.http_response.status_code == 200 and answer.parse().status == "completed"
        assert answer.headers.get("connection") == "close"
        ws.send(json.dumps({"type": "response.create", "model": MODEL, "store": False, "input": "and on a socket"}))
        events = []
        while not events or events[-1]["type"] not in ("response.completed", "response.failed", "error"):
            events.append(json.loads(ws.recv(timeout=10)))
        assert events[-1]["type"] == "response.completed"
        assert not refused(url) and time.monotonic() - sent < drain

        while not refused(url):
            assert time.monotonic() - sent < drain + 2, "the listener closes when the drain ends"
            time.sleep(0.05)
        closed_at = time.monotonic()
        assert closed_at - sent >= drain - 0.2, f"refused after {closed_at - sent:.2f} s, before the drain ended"

        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        streamer.join(20)
        assert stream_end["type"] == "response.completed", stream_end
        assert stream_end["at"] > closed_at, "the stream was still in flight when the listener closed"
        assert proc.proc.wait(15) == 0
        assert "SIGTERM: draining for 2 s" in proc.logs()
    finally:
        proc.stop()


def test_sigint_skips_the_drain(tmp_path: Path) -> None:
    """Ctrl-C at a terminal: nobody balances there, so no wait for the drain."""
    proc = serve(tmp_path, "ctrl-c", "--drain-seconds", "30")
    try:
        sent = time.monotonic()
        proc.proc.send_signal(signal.SIGINT)
        assert proc.proc.wait(10) == 0
        assert time.monotonic() - sent < 5
    finally:
        proc.stop()


# The health check the docs show (docs/deployment.md, deploy/haproxy.cfg): /readyz every 200 ms, two
# failures take a server out, one success puts it back, a check may take 2 s. No retries: a request that
# reached a stopping instance and failed would be a failure the client sees, so zero failures come from
# the drain alone. (With `fall 1` and the default check timeout, 200 ms, one CI run's serial pass, with
# another session loading the machine, saw both servers' checks time out at once: 36 of HAProxy's own
# 503s, no server being up.)
CHECK = "check inter 200ms fall 2 rise 1"
DEFAULTS = "retries 0\n    timeout check 2s"  # HAProxy's own keep-alive to the servers; no redispatch
DRAIN = 3.0  # > inter x fall + a check's longest time (2.4 s), with margin


def until(what: str, ok: object, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not ok():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_rolling_restart_behind_haproxy_fails_no_request(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path)
    ports = [free_port(), free_port()]
    store = ("--store", redis.url, "--drain-seconds", str(DRAIN), "--shutdown-timeout", "10")
    procs = [serve(tmp_path, f"p{i}-first", *store, port=p) for i, p in enumerate(ports)]
    lb = HAProxy(tmp_path, [f"http://127.0.0.1:{p}" for p in ports], check=CHECK, defaults=DEFAULTS,
                 health="/readyz")
    load = ResponsesLoad(lambda: openai.OpenAI(base_url=lb.url + "/v1", api_key="k", max_retries=0, timeout=30),
                         MODEL)

    def served(proc: Process) -> int:
        return proc.logs().count("gtp.access: POST /v1/responses 200")

    timeline: list[str] = []
    started = time.monotonic()
    try:
        load.__enter__()
        time.sleep(1.0)
        for i, p in enumerate(ports):
            before = served(procs[i])
            procs[i].proc.send_signal(signal.SIGTERM)
            until(f"haproxy takes p{i} out", lambda i=i: lb.status(f"p{i}").startswith("DOWN"))
            timeline.append(f"p{i} DOWN after {time.monotonic() - started:.1f} s")
            assert procs[i].proc.wait(20) == 0
            timeline.append(f"p{i} exited at {time.monotonic() - started:.1f} s; served {served(procs[i])} "
                            f"({served(procs[i]) - before} after SIGTERM)")
            procs[i].stop()
            procs[i] = serve(tmp_path, f"p{i}-again", *store, port=p)
            until(f"p{i} ready again", lambda p=p: get(f"http://127.0.0.1:{p}/readyz")[0] == 200)
            until(f"haproxy puts p{i} back", lambda i=i: lb.status(f"p{i}") == "UP")
            timeline.append(f"p{i} UP again at {time.monotonic() - started:.1f} s")
        time.sleep(1.5)
    finally:
        load.__exit__()
        lb.stop()
        after = [served(p) for p in procs]
        for p in procs:
            p.stop()
        redis.stop()
    results, failures = load.results, load.failures
    total = sum(results.values())
    print("rolling restart:", dict(results), "served after restart:", after, *timeline, sep="\n  ")
    assert not failures, f"{len(failures)} of {total} failed: {failures[:5]}"
    assert results["streamed", True] > 20 and results["whole", True] > 20
    assert all(n > 0 for n in after), f"each restarted instance serves: {after}"
