"""Gemini's side of the stream pipeline. SSE (`alt=sse`, `/v1/gemini`): Gemini's chunks as they
came; failure is a Gemini error object as the last event (google-genai raises on it). JSON array
(streamGenerateContent without alt=sse): the same inside `[...]`."""

from typing import Any

from proxy import fast_json
from proxy.errors import ProxyError
from proxy.from_gemini.answer_check import AnswerCheck
from proxy.from_gemini.model_turn import ModelTurn
from proxy.gemini.errors import gemini_error_body
from proxy.server.translator_writer import SSE
from proxy.wire.gemini import first_candidate_parts
from proxy.wire.sse import sse_event


class GeminiWriter:
    """Gemini's own chunks, passed on as they came, checked for a truthful end."""

    def __init__(self, sse: bool = True) -> None:
        self.sse = sse
        self.content_type = SSE if sse else "application/json; charset=utf-8"
        self.check = AnswerCheck()
        self.turn = ModelTurn()  # the model turn, for /v1/gemini's conversation
        self.done = self.failed = self._ended = False
        self._first = True

    def _out(self, obj: dict[str, Any]) -> bytes:
        if self.sse:
            return sse_event(obj, crlf=True)
        sep, self._first = (b"[" if self._first else b",\r\n"), False
        return sep + fast_json.dumps(obj).lstrip()

    def start(self) -> bytes:
        return b""

    def feed(self, chunk: dict[str, Any]) -> bytes:
        self.check.feed(chunk)
        for part in first_candidate_parts(chunk):
            self.turn.add(part)
        if chunk.get("candidates") == []:
            # An empty list carries nothing, and google-genai's stream reader indexes candidates[0]
            # (IndexError) before it could see the error event that follows.
            chunk = {k: v for k, v in chunk.items() if k != "candidates"}
        return self._out(chunk)

    def finish(self) -> bytes:
        problem = self.check.problem()
        if problem:
            return self.fail(ProxyError(problem, status=502, type="server_error"))
        self.done = True
        return b""

    def end(self) -> bytes:
        if self.failed or self._ended:
            return b""
        self._ended = True
        return b"" if self.sse else (b"[]" if self._first else b"]")

    def fail(self, error: ProxyError) -> bytes:
        if self.failed or self._ended:
            return b""
        self.done = self.failed = True
        return self._out(gemini_error_body(error)) + (b"" if self.sse else b"]")
