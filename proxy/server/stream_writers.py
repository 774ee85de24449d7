"""Each protocol's side of the stream pipeline (stream.py): how its events are framed, how a clean
end is told from a truncated or empty one, and how a failure is said. `finish` writes all but the
terminal event of a clean end, which `end` writes once the route has stored the turn: a failure to
store it becomes the protocol's failure instead (`fail` after `finish`), never a success.

- Responses: named SSE events; failure is `response.failed` with an error object.
- Chat Completions: `data:` chunks ending in `[DONE]`; failure is a bare `{"error": ...}` chunk.
- Gemini SSE (`alt=sse`, `/v1/gemini`): Gemini's chunks as they came; failure is a Gemini error
  object as the last event (google-genai raises on it).
- Gemini JSON array (streamGenerateContent without alt=sse): the same inside `[...]`.
- Interactions: named SSE events with ids (resumable) ending in `[DONE]`; failure is an `error`
  event with Google's status name and the message.
"""

from typing import Any

from proxy import fast_json
from proxy.errors import ProxyError
from proxy.from_gemini.answer_check import AnswerCheck
from proxy.from_gemini.model_turn import ModelTurn
from proxy.from_gemini.to_chat import ChatTranslator, error_chunk
from proxy.from_gemini.to_interactions import InteractionsTranslator
from proxy.from_gemini.to_responses import ResponsesTranslator
from proxy.server.errors import gemini_error_body
from proxy.wire.gemini import first_candidate_parts
from proxy.wire.sse import sse_event

SSE = "text/event-stream; charset=utf-8"
DONE = b"data: [DONE]\n\n"


def _events(events: list[dict[str, Any]]) -> bytes:
    return b"".join(sse_event(e, e["type"]) for e in events)


class _TranslatorWriter:
    """A sans-I/O translator's events, framed for SSE by `_frame` (each protocol its own framing)."""
    content_type = SSE

    def __init__(self, translator: Any) -> None:
        self.t = translator

    @property
    def done(self) -> bool:
        return self.t.done

    def _frame(self, events: list[dict[str, Any]]) -> bytes:
        raise NotImplementedError

    def start(self) -> bytes:
        return self._frame(self.t.start())

    def feed(self, chunk: dict[str, Any]) -> bytes:
        return self._frame(self.t.feed(chunk))

    # A clean end's terminal event, held from `finish` until the route has stored the turn (`end`).
    SUCCESS: tuple[str, frozenset[str]] = ("type", frozenset())  # the event's kind field, and its kinds
    _end: dict[str, Any] | None = None

    def _hold(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        field, kinds = self.SUCCESS
        if events and events[-1][field] in kinds:
            self._end = events.pop()
        return events

    def _take_end(self) -> dict[str, Any] | None:
        event, self._end = self._end, None
        return event


class ResponsesWriter(_TranslatorWriter):
    t: ResponsesTranslator

    def _frame(self, events: list[dict[str, Any]]) -> bytes:
        return _events(events)

    @property
    def failed(self) -> bool:
        return self.t.response["status"] == "failed"

    SUCCESS = ("type", frozenset({"response.completed", "response.incomplete"}))

    def finish(self) -> bytes:
        return _events(self._hold(self.t.finish()))

    def end(self) -> bytes:
        event = self._take_end()
        return _events([event]) if event else b""

    def fail(self, error: ProxyError) -> bytes:
        # ResponseError.code is an enum in the SDKs: the detail goes in the message.
        code = "rate_limit_exceeded" if error.status == 429 else "server_error"
        if self._take_end() is not None:  # the answer was whole, but storing it failed
            return _events(self.t.revoke(error.message, code))
        return _events(self.t.fail(error.message, code))


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


def interaction_events(events: list[dict[str, Any]]) -> bytes:
    """Interactions' SSE framing: the event type and its resumable id on every event."""
    return b"".join(sse_event(e, e["event_type"], event_id=e["event_id"]) for e in events)


class InteractionsWriter(_TranslatorWriter):
    t: InteractionsTranslator

    def _frame(self, events: list[dict[str, Any]]) -> bytes:
        return interaction_events(events)

    @property
    def failed(self) -> bool:
        return self.t.interaction["status"] == "failed"

    SUCCESS = ("event_type", frozenset({"interaction.completed"}))

    def finish(self) -> bytes:
        events = interaction_events(self._hold(self.t.finish()))
        return events if self._end else events + DONE

    def end(self) -> bytes:
        event = self._take_end()
        return interaction_events([event]) + DONE if event else b""

    def fail(self, error: ProxyError) -> bytes:
        if self._take_end() is not None:  # the answer was whole, but storing it failed
            return interaction_events(self.t.revoke(error)) + DONE
        events = self.t.fail(error)
        return interaction_events(events) + DONE if events else b""
