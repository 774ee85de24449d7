"""RFC 6455 5.1: a server MUST close the connection (1002, protocol error) when a client's frame is
not masked. aiohttp's frame parser reads unmasked frames as well; here its parser is wrapped, and a
scan of the frame headers alone (no payload is copied) stops an unmasked frame before it is parsed,
as aiohttp stops its own protocol errors: the socket's next receive is the error, and aiohttp
closes with 1002."""

from typing import Any

from aiohttp import WSCloseCode, web
from aiohttp.http_websocket import WebSocketError

REFUSED = (True, b"")  # aiohttp's parser's answer to a protocol error: stop reading


class MaskScan:
    """Frame boundaries from the headers only (pure logic): False at the first unmasked frame."""

    def __init__(self) -> None:
        self.head = b""  # a header split across reads
        self.skip = 0  # payload bytes of the current frame still to come

    def feed(self, data: bytes) -> bool:
        pos, n = 0, len(data)
        while pos < n:
            if self.skip:
                take = min(self.skip, n - pos)
                self.skip -= take
                pos += take
                continue
            before = len(self.head)
            self.head += data[pos:pos + 14 - before]  # a header is at most 14 bytes
            head = self.head
            if len(head) < 2:
                return True
            if not head[1] & 0x80:
                return False
            size7 = head[1] & 0x7F
            ext = 2 if size7 == 126 else 8 if size7 == 127 else 0
            header = 2 + ext + 4
            if len(head) < header:
                return True  # (all of `data` went into the header)
            self.skip = int.from_bytes(head[2:2 + ext], "big") if ext else size7
            pos += header - before
            self.head = b""
        return True


class MaskedOnly:
    """aiohttp's frame parser, fed only while every frame is masked."""

    def __init__(self, parser: Any, queue: Any) -> None:
        self.parser, self.queue, self.scan, self.refused = parser, queue, MaskScan(), False

    def feed_data(self, data: Any) -> tuple[bool, bytes]:
        if self.refused:
            return REFUSED
        if not self.scan.feed(bytes(data)):
            self.refused = True
            self.queue.set_exception(WebSocketError(WSCloseCode.PROTOCOL_ERROR, "Received an unmasked frame"))
            return REFUSED
        return self.parser.feed_data(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.parser, name)


def masked_only(request: web.Request, ws: web.WebSocketResponse) -> None:
    """After ws.prepare(): refuse unmasked frames from now on (aiohttp's request handler and the
    socket's queue are private attributes; without them, nothing is wrapped)."""
    protocol, queue = request.protocol, getattr(ws, "_reader", None)
    parser = getattr(protocol, "_payload_parser", None)
    if parser is not None and queue is not None:
        protocol._payload_parser = MaskedOnly(parser, queue)  # type: ignore[attr-defined]
