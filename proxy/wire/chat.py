"""OpenAI Chat Completions request shape (docs/wire.md#chat). Unknown fields are ignored;
messages, tool calls, content parts, tools and tool_choice are typed so a wrong shape is a 400."""

from typing import Any, Literal, Required, TypedDict

from pydantic import Field

from proxy.wire.responses import LENIENT, TextFormat, ToolChoice, ToolSpec, _Lenient


# The messages are only read by chat/to_items.py, as dicts: TypedDicts, whose check builds no model
# instances (50 messages took 100 us as models), and which equal what was sent (unknown keys kept).
class ContentPart(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    type: Required[str]
    text: str | None
    refusal: str | None
    image_url: dict[str, Any] | str | None


class ToolCallFunction(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    name: Required[str]
    arguments: str | None


class ToolCall(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    id: Required[str]
    type: str
    function: Required[ToolCallFunction]


class ChatMessage(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    role: Required[Literal["system", "developer", "user", "assistant", "tool"]]
    content: str | list[ContentPart] | None
    tool_calls: list[ToolCall] | None
    tool_call_id: str | None
    name: str | None


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
