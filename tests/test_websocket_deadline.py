"""Issue 57 item 3: a Responses WebSocket client that stops reading is dropped after --client-timeout,
as an HTTP stream's is, and its Gemini stream is closed with it. The socket's send had no deadline:
5 of 10 such sockets (and their upstream streams) were still held at 180 s.

Raw sockets complete the handshake and send one masked `response.create` for a long answer, then
never read (a 4 KB receive buffer); they do send an unsolicited pong now and then (RFC 6455 5.5.3
allows it as a heartbeat), which keeps aiohttp's own heartbeat from pinging them -- and a peer that
sends but never reads is what no ping would catch either way: aiohttp then closes the transport, which
never flushes to a peer that reads nothing. The openai SDK's WebSocket client is answered beside them. The
count of open Gemini streams is a stand-in between the front-end and the mock (the only place the
proxy's upstream streams can be seen)."""

import base64
import contextlib
import json
import os
import socket
import struct
import threading
import time
from typing import Any

import openai
import pytest

from proxy.server.site import ServerLimits
from tests.harness import Stack

pytestmark = pytest.mark.serial  # timing-bound: run alone (scripts/test.sh)

BETA = {"OpenAI-Beta": "responses_websockets=2026-02-06"}
STUCK = 5
LONG = "tell me everything [[mock:bulk 12000000]]"  # 12 MB: more than both sockets' buffers hold


class Counting:
    """The upstream, counting the streams it has open (opened and not yet closed)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.open, self.opened = inner, 0, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None):
        chunks = await self.inner.stream(model, body, api_key)
        self.open += 1
        self.opened += 1

        async def counted():
            try:
                async for chunk in chunks:
                    yield chunk
            finally:
                self.open -= 1
                await chunks.aclose()
        return counted()


def frame(text: str, opcode: int = 0x1) -> bytes:
    """One masked frame (a text frame by default), as every client must send (RFC 6455 5.3)."""
    data, mask = text.encode(), os.urandom(4)
    size = len(data)
    head = bytes([0x80 | opcode]) + (bytes([0x80 | size]) if size < 126 else
                                     bytes([0x80 | 126]) + struct.pack("!H", size) if size < 65536 else
                                     bytes([0x80 | 127]) + struct.pack("!Q", size))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


PONG = 0xA


def handshake(url: str, rcvbuf: int | None = 4096) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect((host, int(port)))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(f"GET /v1/responses HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer k\r\n"
              f"OpenAI-Beta: responses_websockets=2026-02-06\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)  # byte by byte: nothing of the first frame is read
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


@pytest.fixture
def stack():
    counting: list[Counting] = []
    s = Stack(limits=ServerLimits(client_timeout=2.0), wrap=lambda up: counting.append(Counting(up)) or counting[0],
              journal=False)
    s.counting = counting[0]
    yield s
    s.close()


def test_a_socket_that_stops_reading_is_dropped_and_its_upstream_closed(stack: Stack) -> None:
    stuck = [handshake(stack.url) for _ in range(STUCK)]
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(0.4):
            for s in stuck:
                with contextlib.suppress(OSError):
                    s.sendall(frame("", PONG))

    beats = threading.Thread(target=heartbeat, daemon=True)
    try:
        for s in stuck:
            s.sendall(frame(json.dumps({"type": "response.create", "model": "gemini-2.5-flash", "input": LONG})))
        beats.start()
        deadline = time.monotonic() + 30
        while stack.counting.opened < STUCK and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stack.counting.opened == STUCK  # every stuck socket's answer started
        # A reading client is served meanwhile, by the SDK.
        client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0)
        with client.responses.connect(extra_headers=BETA) as conn:
            conn.send({"type": "response.create", "model": "gemini-2.5-flash", "input": "hello there"})
            events = []
            for event in conn:
                events.append(event.type)
                if event.type in ("response.completed", "response.failed", "error"):
                    break
        assert events[-1] == "response.completed", events
        # --client-timeout (2 s), its check every half of it, and the time the buffers take to fill:
        # well within 15 s (the answers, never read, would hold their streams for ever). Measured on two loaded
        # cores (issue 60 item 7): 2.3 s.
        deadline = time.monotonic() + 15
        while stack.counting.open and time.monotonic() < deadline:
            time.sleep(0.1)
        assert stack.counting.open == 0, f"{stack.counting.open} upstream streams still open"
        for s in stuck:  # and the socket itself was dropped (reset or closed), not left open
            s.settimeout(5)
            with contextlib.suppress(ConnectionResetError):
                while s.recv(1 << 20):
                    pass
    finally:
        done.set()
        if beats.is_alive():
            beats.join()
        for s in stuck:
            s.close()
