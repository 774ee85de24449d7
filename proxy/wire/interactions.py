"""Gemini Interactions API request shapes (`POST /{version}/interactions`).

The reference is google-genai's own types (`google.genai.interactions`, generated from Google's API
description); tests/test_interactions_wire.py checks these models against them. Field types are
strict and unknown top-level fields are refused, as Google's API does ("Unknown name ..."), so a
mistyped option is a 400 naming it, never silently ignored. Steps and content stay plain dicts here:
to_gemini/interaction_input.py reads them one by one and names the field that is wrong.
"""

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

# Step types a client may send back in `input` (its history), and the ones the proxy produces.
STEP_TYPES = ("user_input", "model_output", "thought", "function_call", "function_result")
CONTENT_TYPES = ("text", "image", "audio", "video", "document")
STATUSES = ("in_progress", "requires_action", "completed", "failed", "cancelled", "incomplete")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class GenerationConfig(_Strict):
    temperature: float | int | None = None
    top_p: float | int | None = None
    seed: int | None = None
    stop_sequences: list[str] | None = None
    max_output_tokens: int | None = None
    thinking_level: Literal["minimal", "low", "medium", "high", "xhigh"] | None = None
    thinking_summaries: Literal["auto", "none"] | None = None
    tool_choice: str | dict[str, Any] | None = None


class CreateInteraction(_Strict):
    """A create request with a `model` (agents are Google's own and cannot be served here)."""

    model: str | None = None
    agent: str | None = None
    agent_config: dict[str, Any] | None = None
    input: str | dict[str, Any] | list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    system_instruction: str | None = None
    generation_config: GenerationConfig | None = None
    previous_interaction_id: str | None = None
    store: bool | None = None
    stream: bool | None = None
    background: bool | None = None
    response_format: dict[str, Any] | list[dict[str, Any]] | None = None
    response_mime_type: str | None = None
    response_modalities: list[str] | None = None
    safety_settings: list[dict[str, Any]] | None = None
    labels: dict[str, str] | None = None
    service_tier: str | None = None
    cached_content: str | None = None
    continuation_token: str | None = None
    environment: str | dict[str, Any] | None = None
    webhook_config: dict[str, Any] | None = None


class UnreadableArguments(ValueError):
    """A call step whose streamed arguments are not JSON; `step` is the call as it started."""

    def __init__(self, step: dict[str, Any]) -> None:
        super().__init__(f"unreadable streamed arguments of {step.get('name')!r}")
        self.step = step


class StepAssembler:
    """An Interactions stream's `step.start` / `step.delta` / `step.stop` events -> whole steps:
    streamed call arguments joined, a thought step's streamed signature set. The one reading the
    upstream client and the interceptor share; text deltas are left to each (they pass them on live)."""

    def __init__(self) -> None:
        self._steps: dict[int, dict[str, Any]] = {}
        self._arguments: dict[int, list[str]] = {}

    def start(self, index: Any, step: dict[str, Any]) -> None:
        self._steps[index] = dict(step)

    def delta(self, index: Any, delta: dict[str, Any]) -> None:
        if delta.get("type") == "arguments_delta":
            self._arguments.setdefault(index, []).append(str(delta.get("arguments") or ""))
        elif delta.get("type") == "thought_signature" and index in self._steps:
            self._steps[index]["signature"] = delta.get("signature")
        elif delta.get("type") in ("google_search_call", "google_search_result") and index in self._steps:
            # a search step's body arrives whole in one delta (tests/recorded/interactions-google-search.jsonl)
            self._steps[index].update({k: v for k, v in delta.items() if k != "type"})

    def stop(self, index: Any) -> dict[str, Any] | None:
        """The whole step (None for an index never started); UnreadableArguments when its streamed
        arguments are not JSON."""
        step = self._steps.pop(index, None)
        joined = "".join(self._arguments.pop(index, []))
        if step is not None and joined:
            try:
                step["arguments"] = json.loads(joined)
            except json.JSONDecodeError:
                raise UnreadableArguments(step) from None
        return step
