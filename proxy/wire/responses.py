"""OpenAI Responses API request shapes (reference/protocols.md §A2-A4).

Models accept what real clients send: unknown fields are kept and ignored, never rejected.
Field types are strict (a string where a number belongs is a 400), as OpenAI does; inner objects
(`text`, `reasoning`, `tool_choice`, tools incl. namespace and custom) are typed too, so a wrong
shape anywhere is a 400 naming the field before the core sees it.
"""

from typing import Annotated, Any, Literal, Required, TypedDict

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter

# Strict types, unknown keys kept: the models below and the TypedDicts (shapes only checked, whose
# check builds no instances) share it, as does wire/chat.py.
LENIENT = ConfigDict(extra="allow", strict=True)


class _Lenient(BaseModel):
    model_config = LENIENT

    def wire(self) -> dict[str, Any]:
        """The object as the client sent it (for the core, which works on checked dicts)."""
        return self.model_dump(by_alias=True, exclude_unset=True)


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


class WebSearchCallItem(_Lenient):
    """A search the model ran (Google Search on Gemini), replayed by stateless clients."""

    type: Literal["web_search_call"]
    id: str
    status: str | None = None
    action: dict[str, Any] | None = None


class CompactionItem(_Lenient):
    """What `POST /v1/responses/compact` made of the turns it dropped: their summary, sealed."""

    type: Literal["compaction"]
    encrypted_content: str
    id: str | None = None


InputItem = (MessageItem | FunctionCallItem | CustomToolCallItem | FunctionCallOutputItem | ReasoningItem
             | ItemReference | WebSearchCallItem | CompactionItem)

ITEM_MODELS: dict[str, type[BaseModel]] = {
    "message": MessageItem,
    "function_call": FunctionCallItem,
    "custom_tool_call": CustomToolCallItem,
    "function_call_output": FunctionCallOutputItem,
    "custom_tool_call_output": FunctionCallOutputItem,
    "reasoning": ReasoningItem,
    "item_reference": ItemReference,
    "web_search_call": WebSearchCallItem,
    "compaction": CompactionItem,
}


def _item_tag(item: Any) -> str:
    kind = item.get("type", "message") if isinstance(item, dict) else None
    return "function_call_output" if kind == "custom_tool_call_output" else kind


# Every item validated in one call (one per item cost a microsecond or two each on long histories);
# parse_input has checked each item's type first, so the tag always names a member.
INPUT_ITEMS: TypeAdapter[list[InputItem]] = TypeAdapter(list[Annotated[
    Annotated[MessageItem, Tag("message")] | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[CustomToolCallItem, Tag("custom_tool_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")] | Annotated[ReasoningItem, Tag("reasoning")]
    | Annotated[ItemReference, Tag("item_reference")] | Annotated[WebSearchCallItem, Tag("web_search_call")]
    | Annotated[CompactionItem, Tag("compaction")],
    Discriminator(_item_tag)]])


class FunctionRef(TypedDict, total=False):
    """`{"name": ...}`: the Chat API's nested function in tools and tool_choice."""

    __pydantic_config__ = LENIENT
    name: Required[str]
    description: str | None
    parameters: dict[str, Any] | None
    strict: bool | None


class _CustomFormat(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    type: Required[str]
    syntax: str | None
    definition: str | None


class ToolSpec(TypedDict, total=False):
    """A function tool (flat Responses or nested Chat shape), a custom tool, a namespace of tools,
    or a hosted tool (web_search, ...): one shape, checked by the fields each kind uses. Only
    checked: the core reads the tools as sent (`sent.get("tools")`), so they are TypedDicts, whose
    check builds no model instances (20 tools 69 -> 35 us); what it gives equals what was sent
    (tests/test_wire_models.py)."""

    __pydantic_config__ = LENIENT
    type: str
    name: str | None
    description: str | None
    parameters: dict[str, Any] | None
    strict: bool | None
    function: FunctionRef | None
    format: _CustomFormat | None
    tools: list["ToolSpec"] | None  # a namespace's members


class AllowedToolRef(_Lenient):
    type: str | None = None
    name: str | None = None
    function: FunctionRef | None = None


class AllowedTools(_Lenient):
    mode: Literal["auto", "required"] | None = None
    tools: list[AllowedToolRef] | None = None


class ToolChoiceObject(_Lenient):
    """`{"type": "function", "name"}` (Responses), `{"type": "function", "function": {"name"}}` (Chat),
    `{"type": "allowed_tools", ...}` in either nesting, or a hosted tool's type."""

    type: str
    name: str | None = None
    function: FunctionRef | None = None
    mode: Literal["auto", "required"] | None = None
    tools: list[AllowedToolRef] | None = None
    allowed_tools: AllowedTools | None = None


ToolChoice = Literal["none", "auto", "required"] | ToolChoiceObject


class TextFormat(_Lenient):
    type: Literal["text", "json_object", "json_schema"]
    name: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    json_schema: dict[str, Any] | None = None  # Chat's response_format nests the spec here
    strict: bool | None = None
    description: str | None = None


class TextConfig(_Lenient):
    format: TextFormat | None = None
    verbosity: str | None = None


class Reasoning(_Lenient):
    effort: str | None = None
    summary: str | None = None


class ResponsesRequest(_Lenient):
    model: str
    input: str | list[dict[str, Any]] = Field(default_factory=list)
    instructions: str | None = None
    tools: list[ToolSpec] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    previous_response_id: str | None = None
    store: bool | None = None
    stream: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    metadata: dict[str, str] | None = None
    reasoning: Reasoning | None = None
    text: TextConfig | None = None
    include: list[str] | None = None
    user: str | None = None
    # Echoed in the Response object (Open Responses' ResponseResource requires each of them).
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    top_logprobs: int | None = None
    max_tool_calls: int | None = None
    background: bool | None = None
    service_tier: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    truncation: Literal["auto", "disabled"] | None = None


# `include` values of the Responses API. The proxy fills what it can; the rest name outputs of tools
# Gemini does not have here (nothing to include) -- but logprobs it cannot give, so they are a 400.
INCLUDE_VALUES = frozenset({"code_interpreter_call.outputs", "computer_call_output.output.image_url",
                            "file_search_call.results", "message.input_image.image_url",
                            "reasoning.encrypted_content", "web_search_call.action.sources",
                            "web_search_call.results", "message.output_text.logprobs"})


def wire_choice(choice: str | _Lenient | None) -> str | dict[str, Any] | None:
    return choice.wire() if isinstance(choice, _Lenient) else choice


class CompactRequest(_Lenient):
    """`POST /v1/responses/compact`: the conversation to compact (input and/or the stored chain)."""

    model: str
    input: str | list[dict[str, Any]] | None = None
    previous_response_id: str | None = None
    instructions: str | None = None
