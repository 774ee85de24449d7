"""OpenAI Responses API request shapes (reference/protocols.md §A2-A4).

Models accept what real clients send: unknown fields are kept and ignored, never rejected.
Field types are strict (a string where a number belongs is a 400), as OpenAI does.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class InputText(_Lenient):
    type: Literal["input_text", "output_text", "text", "refusal", "summary_text", "reasoning_text"]
    text: str | None = None
    refusal: str | None = None


class MessageItem(_Lenient):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[dict[str, Any]]
    id: str | None = None


class FunctionCallItem(_Lenient):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str
    id: str | None = None
    status: str | None = None
    namespace: str | None = None


class CustomToolCallItem(_Lenient):
    type: Literal["custom_tool_call"]
    call_id: str
    name: str
    input: str
    id: str | None = None
    namespace: str | None = None


class FunctionCallOutputItem(_Lenient):
    type: Literal["function_call_output", "custom_tool_call_output"]
    call_id: str
    output: str | list[dict[str, Any]]
    id: str | None = None


class ReasoningItem(_Lenient):
    type: Literal["reasoning"]
    id: str | None = None
    summary: list[dict[str, Any]] = Field(default_factory=list)
    encrypted_content: str | None = None


class ItemReference(_Lenient):
    type: Literal["item_reference"]
    id: str


InputItem = MessageItem | FunctionCallItem | CustomToolCallItem | FunctionCallOutputItem | ReasoningItem | ItemReference

ITEM_MODELS: dict[str, type[BaseModel]] = {
    "message": MessageItem,
    "function_call": FunctionCallItem,
    "custom_tool_call": CustomToolCallItem,
    "function_call_output": FunctionCallOutputItem,
    "custom_tool_call_output": FunctionCallOutputItem,
    "reasoning": ReasoningItem,
    "item_reference": ItemReference,
}


class ResponsesRequest(_Lenient):
    model: str
    input: str | list[dict[str, Any]] = Field(default_factory=list)
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    previous_response_id: str | None = None
    store: bool | None = None
    stream: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    metadata: dict[str, str] | None = None
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    include: list[str] | None = None
    user: str | None = None
