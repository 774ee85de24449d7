"""Gemini Interactions API request shapes (`POST /{version}/interactions`).

The reference is google-genai's own types (`google.genai.interactions`, generated from Google's API
description); tests/test_interactions_wire.py checks these models against them. Field types are
strict and unknown top-level fields are refused, as Google's API does ("Unknown name ..."), so a
mistyped option is a 400 naming it, never silently ignored. Steps and content stay plain dicts here:
to_gemini/interaction_input.py reads them one by one and names the field that is wrong.
"""

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
