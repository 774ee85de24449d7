"""Gemini-side shapes: the proxy's native `/v1/gemini` body.

Gemini requests themselves stay plain JSON dicts inside the core (they are forwarded, and
arguments/schemas inside them must pass through byte-for-byte); see translate/gemini_keys.py
for the camelCase/snake_case normalisation of their structural keys.
"""

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class NativeRequest(BaseModel):
    """`POST /v1/gemini`: a Gemini request plus a conversation (session) id kept by the proxy."""

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)

    model: str
    input: str | list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    tool_config: dict[str, Any] | None = Field(
        default=None, validation_alias=AliasChoices("toolConfig", "tool_config")
    )
    system_instruction: dict[str, Any] | str | None = Field(
        default=None, validation_alias=AliasChoices("systemInstruction", "system_instruction")
    )
    generation_config: dict[str, Any] | None = Field(
        default=None, validation_alias=AliasChoices("generationConfig", "generation_config")
    )
    conversation: str | None = None
    stream: bool = False
