"""Gemini generateContent chunks -> an Interaction and its SSE events.

A sans-I/O state machine like to_responses.py: `start()`, `feed(chunk)` per Gemini chunk, then
`finish()` (or `fail()`); each returns the events to send. A whole answer is the same machine fed
one chunk, read from `.interaction`.

Steps: thought text -> a `thought` step (summary deltas); a thoughtSignature -> the signature of a
`thought` step just before the part it was on; text -> `model_output`; functionCall ->
`function_call` (id, the client's name, normalized arguments: from_gemini/client_call.py).

Event ids are positions, so a stream can be resumed from any of them by replaying the stored
interaction (`replay`): `"{index}"` starts step index, `"{index}.{n}"` is a delta after which n
characters of that step's payload were sent, `"{index}.stop"` ends it, `"done"` ends the stream.
"""

import json
from typing import Any

from proxy.errors import ProxyError, gemini_status
from proxy.from_gemini.answer_check import AnswerCheck, refuse_unrepresented
from proxy.from_gemini.client_call import client_call
from proxy.from_gemini.finish_reason import map_finish_reason
from proxy.from_gemini.model_turn import ModelTurn
from proxy.from_gemini.partial_args import PartialCalls
from proxy.from_gemini.server_tools import SERVER_PARTS
from proxy.interactions.events import (
    ErrorEvent,
    InteractionCompletedEvent,
    InteractionCreatedEvent,
    InteractionsEvent,
    StepDelta,
    StepStart,
    StepStop,
)
from proxy.signatures.call_record import CallRecord
from proxy.tools.prepare_tools import PreparedTools
from proxy.wire.gemini import first_candidate_parts

Event = InteractionsEvent


def interaction_usage(meta: dict[str, Any] | None) -> dict[str, Any]:
    meta = meta or {}
    prompt = int(meta.get("promptTokenCount") or 0)
    output = int(meta.get("candidatesTokenCount") or 0)
    thoughts = int(meta.get("thoughtsTokenCount") or 0)
    return {"total_input_tokens": prompt, "total_output_tokens": output, "total_thought_tokens": thoughts,
            "total_cached_tokens": int(meta.get("cachedContentTokenCount") or 0),
            "total_tokens": int(meta.get("totalTokenCount") or prompt + output + thoughts)}


def _payload(step: dict[str, Any]) -> str:
    """The streamed text of a step: what `"{index}.{n}"` event ids count characters of."""
    kind = step["type"]
    if kind == "model_output":
        return "".join(c.get("text", "") for c in step.get("content") or [])
    if kind == "thought":
        return "".join(c.get("text", "") for c in step.get("summary") or [])
    if kind == "function_call":
        return json.dumps(step["arguments"], ensure_ascii=False)
    return ""


def _start_shape(step: dict[str, Any]) -> dict[str, Any]:
    """A step as step.start announces it: its identity, not yet its payload."""
    if step["type"] == "function_call":
        return {"type": "function_call", "id": step["id"], "name": step["name"], "arguments": {}}
    return {"type": step["type"]}


def _delta(step: dict[str, Any], text: str) -> dict[str, Any]:
    kind = step["type"]
    if kind == "model_output":
        return {"type": "text", "text": text}
    if kind == "thought":
        return {"type": "thought_summary", "content": {"type": "text", "text": text}}
    return {"type": "arguments_delta", "arguments": text}


def step_events(index: int, step: dict[str, Any], after: int | None = None) -> list[Event]:
    """A whole step's events (`after`: characters of its payload the client already has)."""
    events: list[Event] = []
    if after is None:
        events.append(StepStart(event_type="step.start", index=index, step=_start_shape(step), event_id=str(index)))
        after = 0
    payload = _payload(step)
    if payload[after:]:
        events.append(StepDelta(event_type="step.delta", index=index, delta=_delta(step, payload[after:]),
                                event_id=f"{index}.{len(payload)}"))
    if step["type"] == "thought" and step.get("signature"):
        events.append(StepDelta(event_type="step.delta", index=index,
                                delta={"type": "thought_signature", "signature": step["signature"]},
                                event_id=f"{index}.{len(payload)}s"))
    events.append(StepStop(event_type="step.stop", index=index, event_id=f"{index}.stop"))
    return events


def summary(interaction: dict[str, Any]) -> dict[str, Any]:
    """An interaction as the created/completed events carry it: identity, status and usage, no steps."""
    return {k: interaction[k] for k in ("id", "status", "model", "object", "created", "updated", "usage")
            if interaction.get(k) is not None}


def replay(interaction: dict[str, Any], output_steps: list[dict[str, Any]], last_event_id: str | None
           ) -> list[Event]:
    """The events of a stored interaction, after `last_event_id` (all of them when None)."""
    whole = summary(interaction)
    started = {k: v for k, v in whole.items() if k != "usage"}
    events: list[Event] = [InteractionCreatedEvent(event_type="interaction.created",
                                                   interaction={**started, "status": "in_progress"},
                                                   event_id="created")]
    for i, step in enumerate(output_steps):
        events += step_events(i, step)
    events.append(InteractionCompletedEvent(event_type="interaction.completed", interaction=whole, event_id="done"))
    if last_event_id is None:
        return events
    head, _, tail = last_event_id.partition(".")
    if last_event_id in ("created", "done") or (head.isdigit() and tail in ("", "stop")):
        at = next((n for n, e in enumerate(events) if e["event_id"] == last_event_id), None)
        if at is not None:
            return events[at + 1:]
    elif head.isdigit() and int(head) < len(output_steps) and tail.rstrip("s").isdigit():
        index = int(head)
        after = int(tail.rstrip("s"))
        rest = step_events(index, output_steps[index], after)
        if tail.endswith("s"):
            rest = rest[-1:]
        later = next(n for n, e in enumerate(events) if e["event_id"] == f"{index}.stop")
        return rest + events[later + 1:]
    raise ProxyError(f"Invalid value for 'last_event_id': {last_event_id!r} is not an event of this interaction.",
                     param="last_event_id", code="invalid_value")


class InteractionsTranslator:
    def __init__(self, interaction: dict[str, Any], tools: PreparedTools | None = None) -> None:
        self.interaction = interaction  # steps/status/usage are filled in here
        self.interaction.update(status="in_progress", steps=[])
        self._tools = tools or PreparedTools()
        self._open: dict[str, Any] | None = None  # the step streaming now (thought or model_output)
        self._sent = 0  # characters of the open step's payload sent
        self.calls: list[CallRecord] = []
        self.model_turn = ModelTurn()
        self.check = AnswerCheck()
        self._partial = PartialCalls()  # streamed arguments (partialArgs), joined into whole calls
        self.done = False

    @property
    def steps(self) -> list[dict[str, Any]]:
        return self.interaction["steps"]

    # -- public API ---------------------------------------------------------------------------

    def start(self) -> list[Event]:
        return [InteractionCreatedEvent(event_type="interaction.created", interaction=summary(self.interaction),
                                        event_id="created")]

    def feed(self, chunk: dict[str, Any]) -> list[Event]:
        if self.done:
            return []
        self.check.feed(chunk)
        events: list[Event] = []
        for raw in first_candidate_parts(chunk):
            refuse_unrepresented(raw, "Interactions")
            if any(k in raw for k in SERVER_PARTS):
                raise ProxyError("Gemini answered with a server-side tool step (Google Search next to functions), "
                                 "which this proxy cannot represent on the Interactions API yet; the answer is "
                                 "refused rather than passed on without it.", status=502, type="server_error",
                                 code="unsupported_answer_part")
            call_events, whole = self._partial.feed(raw)  # streamed arguments are shown joined
            for event in call_events:
                if event.kind == "end":
                    events += self._part(event.call.whole_part())
            if whole is not None:
                events += self._part(whole)
        return events

    def finish(self) -> list[Event]:
        if self.done:
            return []
        events: list[Event] = []
        for event in self._partial.finish():
            events += self._part(event.call.whole_part())
        events += self._close()
        self.interaction["usage"] = interaction_usage(self.check.usage)
        problem = self.check.problem()
        if problem:
            return events + self.fail(ProxyError(problem, status=502, type="server_error"))
        status, detail = map_finish_reason(self.check.finish, self.check.block)
        if status == "failed":
            msg = detail or "Gemini failed"
            if self.check.finish_message:
                msg = f"{msg}: {self.check.finish_message}"
            return events + self.fail(ProxyError(msg, status=502, type="server_error"))
        self.interaction["status"] = "requires_action" if status == "completed" and self.calls else status
        self.done = True
        return events + [InteractionCompletedEvent(event_type="interaction.completed",
                                                   interaction=summary(self.interaction), event_id="done")]

    def fail(self, error: ProxyError) -> list[Event]:
        """End the interaction as failed: Interactions' `error` event (status code name and message)."""
        if self.done:
            return []
        events = self._close()
        self.interaction["status"] = "failed"
        self.done = True
        return events + [ErrorEvent(event_type="error", error={"code": gemini_status(error.status),
                                                            "message": error.message}, event_id="error")]

    def revoke(self, error: ProxyError) -> list[Event]:
        """A whole answer that could not be kept (the store failed): ended as failed after all."""
        self.interaction["status"] = "failed"
        self.done = True
        return [ErrorEvent(event_type="error", error={"code": gemini_status(error.status), "message": error.message},
                           event_id="error")]

    def model_content(self) -> dict[str, Any] | None:
        """The model turn for history: Gemini's parts exactly as received."""
        return {"role": "model", "parts": [dict(p) for p in self.model_turn.parts]} if self.model_turn else None

    # -- parts --------------------------------------------------------------------------------

    def _part(self, part: dict[str, Any]) -> list[Event]:
        self.model_turn.add(part)
        events: list[Event] = []
        text = part.get("text")
        if part.get("thought") and isinstance(text, str):
            events += self._stream_text("thought", text)
            if part.get("thoughtSignature"):
                events += self._sign(part["thoughtSignature"])
            return events
        if part.get("thoughtSignature"):
            if self._open is None or self._open["type"] != "thought" or self._open.get("signature"):
                events += self._close() + self._open_step({"type": "thought"})
            events += self._sign(part["thoughtSignature"]) + self._close()
        if "functionCall" in part:
            return events + self._function_call(part)
        if isinstance(text, str) and text:
            events += self._stream_text("model_output", text)
        return events

    def _open_step(self, step: dict[str, Any]) -> list[Event]:
        self.steps.append(step)
        self._open, self._sent = step, 0
        return [StepStart(event_type="step.start", index=len(self.steps) - 1, step=_start_shape(step),
                          event_id=str(len(self.steps) - 1))]

    def _close(self) -> list[Event]:
        if self._open is None:
            return []
        self._open = None
        return [StepStop(event_type="step.stop", index=len(self.steps) - 1, event_id=f"{len(self.steps) - 1}.stop")]

    def _stream_text(self, kind: str, text: str) -> list[Event]:
        events: list[Event] = []
        if self._open is None or self._open["type"] != kind or self._open.get("signature"):
            events += self._close()
            events += self._open_step({"type": kind, "content" if kind == "model_output" else "summary": []})
        step = self._open
        assert step is not None
        pieces = step["content" if kind == "model_output" else "summary"]
        if pieces:
            pieces[0]["text"] += text
        else:
            pieces.append({"type": "text", "text": text})
        self._sent += len(text)
        index = len(self.steps) - 1
        events.append(StepDelta(event_type="step.delta", index=index, delta=_delta(step, text),
                                event_id=f"{index}.{self._sent}"))
        return events

    def _sign(self, signature: str) -> list[Event]:
        step = self._open
        assert step is not None and step["type"] == "thought"
        step["signature"] = signature
        index = len(self.steps) - 1
        return [StepDelta(event_type="step.delta", index=index,
                          delta={"type": "thought_signature", "signature": signature},
                          event_id=f"{index}.{self._sent}s")]

    def _function_call(self, part: dict[str, Any]) -> list[Event]:
        events = self._close()
        call = client_call(self._tools, part)
        self.calls.append(call.record)
        step = {"type": "function_call", "id": call.call_id, "name": call.ref.name, "arguments": call.args}
        self.steps.append(step)
        return events + step_events(len(self.steps) - 1, step)
