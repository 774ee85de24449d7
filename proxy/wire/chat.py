"""OpenAI Chat Completions request shape (reference/protocols.md §A8). Unknown fields are ignored;
messages, tool calls, content parts, tools and tool_choice are typed so a wrong shape is a 400."""

from typing import Any, Literal

from pydantic import Field

from proxy.wire.responses import TextFormat, ToolChoice, ToolSpec, _Lenient


class ContentPart(_Lenient):
    type: str
    text: str | None = None
    refusal: str | None = None
    image_url: dict[str, Any] | str | None = None


class ToolCallFunction(_Lenient):
    name: str
    arguments: str | None = None


class ToolCall(_Lenient):
    id: str
    type: str = "function"
    function: ToolCallFunction


class ChatMessage(_Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class StreamOptions(_Lenient):
    include_usage: bool | None = None


class ChatRequest(_Lenient):
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[ToolSpec] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    web_search_options: dict[str, Any] | None = None  # search_context_size, user_location: Google Search has neither
    n: int | None = None
    response_format: TextFormat | None = None
    reasoning_effort: str | None = None
    user: str | None = None
