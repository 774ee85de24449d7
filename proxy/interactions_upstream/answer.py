"""An Interaction (or its SSE events) -> Gemini generateContent answers (or stream chunks).

A `thought` step's signature goes on the Gemini part of the step that follows it (the call or text
it belongs to); a signature with nothing after it travels on an empty text part. Steps Gemini's
answer shape cannot carry are refused with a 502 naming them, never dropped.
"""

from typing import Any

from proxy.errors import ProxyError, UpstreamError
from proxy.wire.interactions import StepAssembler, UnreadableArguments

_FINISH = {"completed": "STOP", "requires_action": "STOP", "incomplete": "MAX_TOKENS"}


def _unrepresented(kind: Any) -> ProxyError:
    return ProxyError(f"The Interactions upstream answered with a {kind!r} step, which this proxy cannot pass on yet; "
                      "the answer is refused rather than passed on without it.", status=502, type="server_error",
                      code="unsupported_answer_part")


def gemini_usage(usage: dict[str, Any] | None) -> dict[str, Any]:
    usage = usage or {}
    meta = {"promptTokenCount": usage.get("total_input_tokens") or 0,
            "candidatesTokenCount": usage.get("total_output_tokens") or 0,
            "totalTokenCount": usage.get("total_tokens") or 0}
    if usage.get("total_thought_tokens"):
        meta["thoughtsTokenCount"] = usage["total_thought_tokens"]
    if usage.get("total_cached_tokens"):
        meta["cachedContentTokenCount"] = usage["total_cached_tokens"]
    return meta


def finish_of(interaction: dict[str, Any]) -> str:
    status = interaction.get("status")
    if status in _FINISH:
        return _FINISH[status]
    errors = interaction.get("errors") or []
    detail = "; ".join(str(e.get("message")) for e in errors if isinstance(e, dict)) or f"status {status}"
    raise UpstreamError(f"The Interactions upstream ended the interaction without an answer ({detail}).",
                        status=502, type="server_error")


class Parts:
    """Steps -> Gemini parts, a signature waiting for the part it belongs to."""

    def __init__(self) -> None:
        self.signature: str | None = None

    def _signed(self, part: dict[str, Any]) -> dict[str, Any]:
        if self.signature:
            part["thoughtSignature"], self.signature = self.signature, None
        return part

    def step(self, step: dict[str, Any]) -> list[dict[str, Any]]:
        kind = step.get("type")
        if kind == "thought":
            parts = [{"text": c.get("text", ""), "thought": True} for c in step.get("summary") or []
                     if c.get("type") == "text" and c.get("text")]
            if step.get("signature"):
                self.signature = step["signature"]
            return parts
        if kind == "function_call":
            return [self._signed({"functionCall": {"id": step.get("id"), "name": step.get("name"),
                                                   "args": step.get("arguments") or {}}})]
        if kind == "model_output":
            out = []
            for c in step.get("content") or []:
                if c.get("type") != "text":
                    raise _unrepresented(f"model_output {c.get('type')}")
                out.append(self._signed({"text": c.get("text", "")}))
            return out
        if kind == "user_input":
            return []  # GET's echo of the input (POST answers carry output steps only)
        raise _unrepresented(kind)

    def close(self) -> list[dict[str, Any]]:
        return [self._signed({"text": ""})] if self.signature else []


def gemini_answer(interaction: dict[str, Any]) -> dict[str, Any]:
    convert = Parts()
    parts = [p for step in interaction.get("steps") or [] for p in convert.step(step)] + convert.close()
    candidate: dict[str, Any] = {"finishReason": finish_of(interaction), "index": 0}
    if parts:
        candidate["content"] = {"role": "model", "parts": parts}
    return {"candidates": [candidate], "usageMetadata": gemini_usage(interaction.get("usage")),
            "modelVersion": interaction.get("model")}


def _chunk(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}


class StreamTranslator:
    """Interactions SSE events -> Gemini stream chunks, as they come (text and thought deltas at once;
    a call when its step stops, whole)."""

    def __init__(self) -> None:
        self.parts = Parts()
        self.steps = StepAssembler()
        self.interaction: dict[str, Any] | None = None  # the completed interaction's summary
        self.id: str | None = None

    def event(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event.get("event_type")
        if kind == "interaction.created":
            self.id = (event.get("interaction") or {}).get("id")
            return []
        if kind == "step.start":
            step = event.get("step") or {}
            self.steps.start(event.get("index", 0), step)
            if step.get("type") not in ("thought", "function_call", "model_output", "user_input"):
                raise _unrepresented(step.get("type"))
            return []
        if kind == "step.delta":
            return self._delta(event.get("index", 0), event.get("delta") or {})
        if kind == "step.stop":
            try:
                step = self.steps.stop(event.get("index", 0)) or {}
            except UnreadableArguments as e:
                raise ProxyError("The Interactions upstream streamed unreadable call arguments.", status=502,
                                 type="server_error") from e
            return [_chunk(self.parts.step(step))] if step.get("type") == "function_call" else []
        if kind == "interaction.completed":
            self.interaction = event.get("interaction") or {}
            self.id = self.interaction.get("id") or self.id
            closing = self.parts.close()
            chunk: dict[str, Any] = {"candidates": [{"finishReason": finish_of(self.interaction), "index": 0}],
                                     "usageMetadata": gemini_usage(self.interaction.get("usage"))}
            if closing:
                chunk["candidates"][0]["content"] = {"role": "model", "parts": closing}
            return [chunk]
        if kind == "error":
            err = event.get("error") or {}
            return [{"error": {"code": 502, "status": str(err.get("code") or "UNAVAILABLE"),
                               "message": f"The Interactions upstream failed: {err.get('message')}"}}]
        return []  # interaction.status_update and future events carry nothing to pass on

    def _delta(self, index: int, delta: dict[str, Any]) -> list[dict[str, Any]]:
        kind = delta.get("type")
        if kind == "text":
            return [_chunk([self.parts._signed({"text": delta.get("text", "")})])]
        if kind == "thought_summary":
            content = delta.get("content") or {}
            return [_chunk([{"text": content.get("text", ""), "thought": True}])] if content.get("text") else []
        if kind == "thought_signature":
            self.parts.signature = delta.get("signature") or self.parts.signature
            return []
        if kind == "arguments_delta":
            self.steps.delta(index, delta)
            return []
        raise _unrepresented(f"{kind} delta")
