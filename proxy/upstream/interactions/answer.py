"""An Interaction (or its SSE events) -> Gemini generateContent answers (or stream chunks).

A `thought` step's signature goes on the Gemini part of the step that follows it (the call or text
it belongs to); a signature with nothing after it travels on an empty text part. Google Search runs
as `google_search_call` / `google_search_result` steps and `url_citation` annotations on the text
(tests/recorded/interactions-google-search.jsonl): they become Gemini's own shapes for the same
things, `toolCall` / `toolResponse` parts and `groundingMetadata`, so every front-end shows them as
it shows a search Gemini ran. Steps Gemini's answer shape cannot carry are refused with a 502
naming them, never dropped.
"""

from typing import Any

from proxy.errors import ProxyError, UpstreamError
from proxy.upstream.interactions.continuation import summed, token_of
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


_SEARCH = "GOOGLE_SEARCH_WEB"
_SEARCH_STEPS = ("google_search_call", "google_search_result")


class Parts:
    """Steps -> Gemini parts, a signature waiting for the part it belongs to; citations collected as
    Gemini's groundingMetadata (its segments count UTF-8 bytes of the whole answer text)."""

    def __init__(self) -> None:
        self.signature: str | None = None
        self.text: list[str] = []  # the answer's text so far (citations index into it)
        self.chunks: list[dict[str, Any]] = []
        self.supports: list[dict[str, Any]] = []
        self.queries: list[str] = []

    def cite(self, annotations: Any, text_start: int) -> None:
        """`url_citation` annotations on a text that starts `text_start` characters into the answer
        (the recorded offsets are the text's own character offsets; all ASCII in the recording, so
        bytes and characters agree there)."""
        whole = "".join(self.text)
        for a in annotations or []:
            if not isinstance(a, dict) or a.get("type") != "url_citation" or not isinstance(a.get("url"), str):
                raise _unrepresented(f"text annotation {a.get('type') if isinstance(a, dict) else a!r}")
            lo, hi = text_start + int(a.get("start_index") or 0), text_start + int(a.get("end_index") or 0)
            self.chunks.append({"web": {"uri": a["url"], "title": a.get("title") or a["url"]}})
            self.supports.append({"segment": {"startIndex": len(whole[:lo].encode()),
                                              "endIndex": len(whole[:hi].encode()), "text": whole[lo:hi]},
                                  "groundingChunkIndices": [len(self.chunks) - 1]})

    def grounding(self) -> dict[str, Any] | None:
        if not (self.chunks or self.queries):
            return None
        out: dict[str, Any] = {"groundingChunks": self.chunks, "groundingSupports": self.supports}
        if self.queries:
            out["webSearchQueries"] = self.queries
        return out

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
                start = sum(map(len, self.text))
                self.text.append(c.get("text", ""))
                self.cite(c.get("annotations"), start)
                out.append(self._signed({"text": c.get("text", "")}))
            return out
        if kind == "google_search_call":
            args = step.get("arguments") or {}
            self.queries += [q for q in args.get("queries") or [] if isinstance(q, str)]
            return [self._signed({"toolCall": {"id": step.get("id"), "toolType": _SEARCH, "args": args}})]
        if kind == "google_search_result":
            return [self._signed({"toolResponse": {"id": step.get("call_id"), "toolType": _SEARCH,
                                                   "response": {"result": step.get("result")}}})]
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
    if (grounding := convert.grounding()) is not None:
        candidate["groundingMetadata"] = grounding
    return {"candidates": [candidate], "usageMetadata": gemini_usage(interaction.get("usage")),
            "modelVersion": interaction.get("model")}


def _chunk(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}


class StreamTranslator:
    """Interactions SSE events -> Gemini stream chunks, as they come (text and thought deltas at once;
    a call when its step stops, whole). The events of an answer's continuation hops (continuation.py)
    follow on: a hop's end only sets `continuation`, and the last hop's usage is the sum of all."""

    def __init__(self) -> None:
        self.parts = Parts()
        self.steps = StepAssembler()
        self.interaction: dict[str, Any] | None = None  # the completed interaction's summary
        self.id: str | None = None
        self.step_text: dict[int, int] = {}  # per step index: where its text starts in the answer
        self.continuation: str | None = None  # the token the hop that just ended asks to go on with
        self.hop_added = False  # whether the current hop started a step of the answer (continuation.added_steps)
        self.usages: list[Any] = []  # the usage of each hop before the current one

    def event(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event.get("event_type")
        if kind == "interaction.created":
            self.id = (event.get("interaction") or {}).get("id")
            return []
        if kind == "step.start":
            step = event.get("step") or {}
            self.steps.start(event.get("index", 0), step)
            self.hop_added = self.hop_added or step.get("type") != "user_input"
            self.step_text[event.get("index", 0)] = sum(map(len, self.parts.text))  # where its text starts
            if step.get("type") not in ("thought", "function_call", "model_output", "user_input", *_SEARCH_STEPS):
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
            return [_chunk(self.parts.step(step))] if step.get("type") in ("function_call", *_SEARCH_STEPS) else []
        if kind == "interaction.completed":
            interaction = event.get("interaction") or {}
            self.id = interaction.get("id") or self.id
            if (token := token_of(interaction)) is not None:  # the answer goes on in another hop
                self.continuation = token
                self.usages.append(interaction.get("usage"))
                return []
            self.interaction = interaction
            usage = summed([*self.usages, interaction.get("usage")]) if self.usages else interaction.get("usage")
            closing = self.parts.close()
            chunk: dict[str, Any] = {"candidates": [{"finishReason": finish_of(self.interaction), "index": 0}],
                                     "usageMetadata": gemini_usage(usage)}
            if closing:
                chunk["candidates"][0]["content"] = {"role": "model", "parts": closing}
            if (grounding := self.parts.grounding()) is not None:
                chunk["candidates"][0]["groundingMetadata"] = grounding
            return [chunk]
        if kind == "error":
            err = event.get("error") or {}
            return [{"error": {"code": 502, "status": str(err.get("code") or "UNAVAILABLE"),
                               "message": f"The Interactions upstream failed: {err.get('message')}"}}]
        return []  # interaction.status_update and future events carry nothing to pass on

    def _delta(self, index: int, delta: dict[str, Any]) -> list[dict[str, Any]]:
        kind = delta.get("type")
        if kind == "text":
            self.parts.text.append(delta.get("text", ""))
            return [_chunk([self.parts._signed({"text": delta.get("text", "")})])]
        if kind == "text_annotation_delta":  # citations of the text step this index streams
            self.parts.cite(delta.get("annotations"), self.step_text.get(index, 0))
            return []
        if kind in _SEARCH_STEPS:
            self.steps.delta(index, delta)
            return []
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
