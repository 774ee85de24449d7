"""Capture functionCall parts from Gemini answers: whole JSON bodies or SSE bytes as they stream."""

import json
import logging
from typing import Any

from proxy import fast_json, ids
from proxy.from_gemini.partial_args import PartialArgsError, PartialCalls
from proxy.signatures.call_record import CallRecord
from proxy.wire.gemini import first_candidate_parts
from proxy.wire.sse import SSEDecoder

log = logging.getLogger(__name__)


def unwrap(chunk: Any) -> dict[str, Any]:
    """Cloud Code wraps every answer as `{"response": {...}, "traceId": ...}`."""
    if isinstance(chunk, dict) and isinstance(chunk.get("response"), dict) and "candidates" not in chunk:
        return chunk["response"]
    return chunk if isinstance(chunk, dict) else {}


class CallCapture:
    """Feed Gemini response chunks; `calls` holds every functionCall seen, with ids and signatures."""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []
        self.chunks: int = 0
        self.error: dict[str, Any] | None = None
        self._partial = PartialCalls()  # calls streamed in fragments (partialArgs), joined

    def feed(self, chunk: Any) -> dict[str, Any]:
        chunk = unwrap(chunk)
        self.chunks += 1
        if isinstance(chunk.get("error"), dict):
            self.error = chunk["error"]
        for raw in first_candidate_parts(chunk):
            if not isinstance(raw, dict):
                continue
            try:
                events, part = self._partial.feed(raw)
            except PartialArgsError as e:
                log.warning("streamed call arguments could not be joined: %s", e)
                continue
            for event in events:
                if event.kind == "end":
                    self._record(event.call.whole_part())
            if part is not None:
                self._record(part)
        cands = chunk.get("candidates") or []
        if cands and isinstance(cands[0], dict) and cands[0].get("finishReason"):
            for event in self._partial.finish():
                self._record(event.call.whole_part())
        return chunk

    def _record(self, part: dict[str, Any]) -> None:
        fc = part.get("functionCall")
        if isinstance(fc, dict) and isinstance(fc.get("name"), str):
            gid = fc.get("id") if isinstance(fc.get("id"), str) else None
            args = fc.get("args") if isinstance(fc.get("args"), dict) else {}
            self.calls.append(CallRecord(gid or ids.call_id(), fc["name"], fc["name"], gid,
                                         part.get("thoughtSignature"), args))

    def feed_body(self, body: bytes) -> None:
        """A whole (non-SSE) answer: one object, or the JSON array `streamGenerateContent` sends without alt=sse."""
        data = fast_json.loads(body)
        for chunk in data if isinstance(data, list) else [data]:
            self.feed(chunk)


class SSETap:
    """A mitmproxy stream callable: returns every byte unchanged, parses events on the side.

    It must never raise (an exception kills the client's connection) and never block.
    """

    def __init__(self, capture: CallCapture) -> None:
        self.capture = capture
        self._decoder = SSEDecoder()
        self._broken = False

    def __call__(self, data: bytes) -> bytes:
        if self._broken:
            return data
        try:
            payloads = self._decoder.feed(data) if data else self._decoder.close()
            for payload in payloads:
                try:
                    self.capture.feed(fast_json.loads(payload))
                except json.JSONDecodeError:
                    log.warning("unreadable SSE event from Gemini skipped")
        except Exception:
            self._broken = True
            log.exception("SSE tap stopped; the stream still passes through")
        return data
