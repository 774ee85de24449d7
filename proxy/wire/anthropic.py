"""Anthropic Messages API request shapes (`POST /v1/messages`, `/v1/messages/count_tokens`), as the
`anthropic` SDKs and Claude Code send them (tests/recorded/claude-code-2.1.337-request.json).

Unknown fields are kept and ignored (Claude Code sends `output_config`,
`metadata` and new fields with each beta); types are strict, so a wrong shape is a 400 naming the
field before the core sees it.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from proxy.errors import ProxyError

# The most max_tokens passed on: Gemini's maxOutputTokens is an int32 (generation_config.max_output_tokens),
# so a larger count could only fail there, in Gemini's words, after the request was built.
MAX_TOKENS_BOUND = 2**31 - 1


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_unset=True)


class Block(_Lenient):
    """One content block; the fields each type uses are checked where it is converted (to_items.py)."""

    type: str
    text: str | None = None
    source: dict[str, Any] | None = None
    id: str | None = None
    name: str | None = None
    input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    # a tool_result's blocks, or a server tool's result object (tool_search_tool_result, a web search's error)
    content: str | list[dict[str, Any]] | dict[str, Any] | None = None
    is_error: bool | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    cache_control: dict[str, Any] | None = None


class Message(_Lenient):
    role: Literal["user", "assistant", "system"]  # Claude Code 2.1 sends its long prompt as a system message
    content: str | list[Block]


class Tool(_Lenient):
    """A client tool (`name`, `input_schema`) or a server tool (`type`: web_search_20250305, ...)."""

    name: str
    type: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None


class ToolChoice(_Lenient):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class Thinking(_Lenient):
    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: int | None = None


class Thread(BaseModel):
    """`thread` (beta `message-threads-2026-08-12`): `create` holds the conversation under the answer's
    `id`; `continue` sends only the new turn after `previous_message_id` (the SDK's
    BetaThreadCreateParams / BetaThreadContinueParams). Strict and closed: a thread type or field
    this proxy does not know cannot be honoured, so it is a 400 naming it, never ignored."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["create", "continue"]
    previous_message_id: str | None = None


class ContextManagement(_Lenient):
    """`context_management` (beta context-management-2025-06-27): the edits, each checked by
    anthropic/context_edits.py (a kind it does not apply is a 400 naming it)."""

    edits: list[Any] | None = None


class MessagesRequest(_Lenient):
    model: str
    max_tokens: int
    messages: list[Message]
    system: str | list[Block] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    stream: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    thinking: Thinking | None = None
    metadata: dict[str, Any] | None = None
    output_config: dict[str, Any] | None = None
    thread: Thread | None = None
    context_management: ContextManagement | None = None


class CountTokensRequest(_Lenient):
    model: str
    messages: list[Message]
    system: str | list[Block] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None
    context_management: ContextManagement | None = None


def check_ranges(req: MessagesRequest) -> None:
    """Values Anthropic refuses, refused as it does (400 invalid_request_error, the field named first:
    `max_tokens: Input should be ...`) instead of forwarded to Gemini: max_tokens at least 1, and
    temperature from 0.0 to 1.0 (the Messages API's documented range; Gemini's goes to 2)."""
    if req.max_tokens < 1:
        raise ProxyError("max_tokens: Input should be greater than or equal to 1", param="max_tokens")
    if req.max_tokens > MAX_TOKENS_BOUND:
        raise ProxyError(f"max_tokens: Input should be less than or equal to {MAX_TOKENS_BOUND}", param="max_tokens")
    if req.temperature is not None and req.temperature > 1:
        raise ProxyError("temperature: Input should be less than or equal to 1", param="temperature")
    if req.temperature is not None and not req.temperature >= 0:
        raise ProxyError("temperature: Input should be greater than or equal to 0", param="temperature")
