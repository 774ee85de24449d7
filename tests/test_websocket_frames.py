"""Issue 57 item 10 (part): an unmasked client frame on the Responses WebSocket is a protocol error
(RFC 6455 5.1: the server closes with 1002); aiohttp's parser served it. A raw socket sends what no
client library would; the frame scan is checked on its own over every split of the bytes."""

import json
import socket
import struct

import pytest

from proxy.server.ws_masking import MaskScan
from tests.harness import Stack
from tests.test_websocket_deadline import frame, handshake


@pytest.fixture(scope="module")
def stack():
    s = Stack(journal=False)
    yield s
    s.close()


def _unmasked(text: str) -> bytes:
    data = text.encode()
    if len(data) < 126:
        return bytes([0x81, len(data)]) + data
    return bytes([0x81, 126]) + struct.pack("!H", len(data)) + data


def _read_all(s: socket.socket) -> bytes:
    s.settimeout(5)
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return out


def test_an_unmasked_frame_closes_the_socket_with_1002(stack: Stack) -> None:
    s = handshake(stack.url, rcvbuf=None)
    try:
        s.sendall(_unmasked(json.dumps({"type": "response.create", "model": "gemini-2.5-flash", "input": "hi"})))
        got = _read_all(s)
    finally:
        s.close()
    assert b"response.created" not in got  # not served
    assert got[:1] == b"\x88" and struct.unpack("!H", got[2:4])[0] == 1002, got[:40]


def test_a_masked_frame_is_served(stack: Stack) -> None:
    s = handshake(stack.url, rcvbuf=None)
    try:
        s.sendall(frame(json.dumps({"type": "response.create", "model": "gemini-2.5-flash", "input": "hi"})))
        s.settimeout(10)
        got = b""
        while b"response.completed" not in got:
            got += s.recv(65536)
    finally:
        s.close()


def test_the_scan_finds_frame_boundaries_in_any_split() -> None:
    stream = frame("a" * 5) + frame("b" * 300) + frame("") + frame("c" * 70_000, 0x2) + _unmasked("late")
    second = len(stream) - len(_unmasked("late")) + 1  # the unmasked frame's mask bit is in this byte
    for cut in (1, 2, 3, 7, 13, 100, 4096):
        scan = MaskScan()
        verdicts = [scan.feed(stream[i:i + cut]) for i in range(0, len(stream), cut)]
        k = second // cut
        assert all(verdicts[:k]) and verdicts[k] is False, cut
    assert MaskScan().feed(stream[:-len(_unmasked("late"))]) is True
