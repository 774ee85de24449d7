"""Chat Completions' side of the stream pipeline: `data:` chunks ending in `[DONE]`; failure is a
bare `{"error": ...}` chunk."""

from typing import Any

from proxy.chat.translator import ChatTranslator, error_chunk
from proxy.errors import ProxyError
from proxy.server.translator_writer import DONE, SSE
from proxy.wire.sse import sse_event


class ChatWriter:
    content_type = SSE

    def __init__(self, translator: ChatTranslator, include_usage: bool) -> None:
        self.t, self.include_usage = translator, include_usage
        self.done = self.failed = False

    def start(self) -> bytes:
        return b""

    def feed(self, chunk: dict[str, Any]) -> bytes:
        return b"".join(sse_event(c) for c in self.t.feed(chunk))

    def finish(self) -> bytes:
        self.done = True
        chunks = self.t.finish(self.include_usage)
        self.failed = any("error" in c for c in chunks)
        return b"".join(sse_event(c) for c in chunks)

    def end(self) -> bytes:
        return b"" if self.failed else DONE

    def fail(self, error: ProxyError) -> bytes:
        if self.done and self.failed:
            return b""
        self.done = self.failed = True
        return sse_event(error_chunk(error.message, error.type, error.code))
