"""OpenAI Responses API request shapes (docs/wire.md#responses-requests).

Models accept what real clients send: unknown fields are kept and ignored, never rejected.
Field types are strict (a string where a number belongs is a 400), as OpenAI does; inner objects
(`text`, `reasoning`, `tool_choice`, tools incl. namespace and custom) are typed too, so a wrong
shape anywhere is a 400 naming the field before the core sees it.
"""

import operator
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Required, TypedDict

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

# Strict types, unknown keys kept: the models below and the TypedDicts (shapes only checked, whose
# check builds no instances) share it, as does wire/chat.py.
LENIENT = ConfigDict(extra="allow", strict=True)


class _Lenient(BaseModel):
    model_config = LENIENT

    def wire(self) -> dict[str, Any]:
        """The object as the client sent it (for the core, which works on checked dicts)."""
        return self.model_dump(by_alias=True, exclude_unset=True)


class _Item:
    """An input item, read through attributes: the checked dict itself (`wire()`), a field the client
    left out read as its default. Each kind's fields are those of its shape, a TypedDict: parse_input
    checks a request's items against their shapes (strict, unknown keys kept), which builds no model
    instance (2.3 us an item as a pydantic model, a long history's largest check)."""

    # `type` is read once, when the item is made: every scan of the input (carriers, deferral,
    # compactions, the trigger) asks each item's type, and a slot is read without a Python call.
    __slots__ = ("_wire", "type")
    shape: ClassVar[type]
    _type_default: ClassVar[str | None]

    def __init__(self, wire: dict[str, Any] | None = None, /, **fields: Any) -> None:
        """`wire`: a checked item; else the item made of `fields` (the proxy's own, not checked)."""
        self._wire = wire = fields if wire is None else wire
        self.type = wire.get("type", self._type_default)

    def __init_subclass__(cls, shape: type, defaults: dict[str, Any] | None = None) -> None:
        cls.shape = shape
        cls._type_default = (defaults or {}).get("type")
        for name in shape.__annotations__:
            if name != "type":
                setattr(cls, name, property(_reader(name, (defaults or {}).get(name))))

    def wire(self) -> dict[str, Any]:
        """The item as the client sent it."""
        return self._wire

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._wire == self._wire  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._wire!r})"


# An item's checked dict, as `item.wire()` gives it, in one C call (the history builder reads each
# call's and output's fields from it).
wire_of: Callable[[Any], dict[str, Any]] = operator.attrgetter("_wire")


def _reader(name: str, default: Any) -> Any:
    def read(item: _Item) -> Any:
        return item._wire.get(name, default)
    return read


class _Message(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    type: Literal["message"]
    role: Required[Literal["user", "assistant", "system", "developer"]]
    content: Required[str | list[dict[str, Any]]]
    id: str | None


class _FunctionCall(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    type: Required[Literal["function_call"]]
    call_id: Required[str]
    name: Required[str]
    arguments: Required[str]
    id: str | None
    status: str | None
    namespace: str | None


class _CustomToolCall(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    type: Required[Literal["custom_tool_call"]]
    call_id: Required[str]
    name: Required[str]
    input: Required[str]
    id: str | None
    namespace: str | None


class _FunctionCallOutput(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    type: Required[Literal["function_call_output", "custom_tool_call_output"]]
    call_id: Required[str]
    output: Required[str | list[dict[str, Any]]]
    id: str | None


class _Reasoning(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    type: Required[Literal["reasoning"]]
    id: str | None
    summary: list[dict[str, Any]]
    encrypted_content: str | None


class _ItemReference(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    type: Required[Literal["item_reference"]]
    id: Required[str]


class _WebSearchCall(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    type: Required[Literal["web_search_call"]]
    id: Required[str]
    status: str | None
    action: dict[str, Any] | None


class _Compaction(TypedDict, total=False):
    __pydantic_config__ = LENIENT
    type: Required[Literal["compaction"]]
    encrypted_content: Required[str]
    id: str | None


class _AgentMessage(TypedDict, total=False):
    """Codex MultiAgentV2's inter-agent message (codex-rs protocol `ResponseItem::AgentMessage`; wire
    seen in MetaFARS/codex-relay #60): parts are `input_text` or `encrypted_content`; content may be null."""

    __pydantic_config__ = LENIENT
    type: Required[Literal["agent_message"]]
    author: str | None
    recipient: str | None
    content: str | list[dict[str, Any]] | None
    id: str | None


class _ToolSearchCall(TypedDict, total=False):
    """A tool search the model asked for (openai types/responses ResponseToolSearchCall; Codex's
    `ResponseItem::ToolSearchCall`): `arguments` is an object; `call_id` is null for a hosted search."""

    __pydantic_config__ = LENIENT
    type: Required[Literal["tool_search_call"]]
    arguments: Required[dict[str, Any]]
    call_id: str | None
    id: str | None
    status: str | None
    execution: Literal["server", "client"] | None


class _ToolSearchOutput(TypedDict, total=False):
    """What the search found (ResponseToolSearchOutputItem): the tools' whole definitions, which
    Codex's client-run search returns with `defer_loading: true` (its deferred tools are in no `tools`)."""

    __pydantic_config__ = LENIENT
    type: Required[Literal["tool_search_output"]]
    tools: Required[list[dict[str, Any]]]
    call_id: str | None
    id: str | None
    status: str | None
    execution: Literal["server", "client"] | None


class _CompactionTrigger(TypedDict, total=False):
    """Codex's remote compaction (v2, codex-rs compact_remote_v2.rs): the last input item asks that the
    input before it be compacted into one `compaction` item, and nothing else answered."""

    __pydantic_config__ = LENIENT
    type: Required[Literal["compaction_trigger"]]
    metadata: dict[str, Any] | None


class MessageItem(_Item, shape=_Message, defaults={"type": "message"}):
    __slots__ = ()


class FunctionCallItem(_Item, shape=_FunctionCall):
    __slots__ = ()


class CustomToolCallItem(_Item, shape=_CustomToolCall):
    __slots__ = ()


class FunctionCallOutputItem(_Item, shape=_FunctionCallOutput):
    __slots__ = ()


class ReasoningItem(_Item, shape=_Reasoning, defaults={"summary": ()}):
    __slots__ = ()


class ItemReference(_Item, shape=_ItemReference):
    __slots__ = ()


class WebSearchCallItem(_Item, shape=_WebSearchCall):
    """A search the model ran (Google Search on Gemini), replayed by stateless clients."""

    __slots__ = ()


class AgentMessageItem(_Item, shape=_AgentMessage):
    """A message one Codex agent sent another (spawn_agent, send_message, a child's completion)."""

    __slots__ = ()


class CompactionItem(_Item, shape=_Compaction):
    """What `POST /v1/responses/compact` made of the turns it dropped: their summary, sealed."""

    __slots__ = ()


class ToolSearchCallItem(_Item, shape=_ToolSearchCall):
    """A tool search, run by the client (Codex) or by the proxy (deferral.py), replayed."""

    __slots__ = ()

    @property
    def search_id(self) -> str:
        """What pairs it with its output: call_id, else (a hosted search) the item's id."""
        return self.call_id or self.id or ""


class ToolSearchOutputItem(_Item, shape=_ToolSearchOutput):
    __slots__ = ()

    @property
    def search_id(self) -> str:
        return self.call_id or self.id or ""


class CompactionTriggerItem(_Item, shape=_CompactionTrigger):
    __slots__ = ()


InputItem = (MessageItem | FunctionCallItem | CustomToolCallItem | FunctionCallOutputItem | ReasoningItem
             | ItemReference | WebSearchCallItem | CompactionItem | AgentMessageItem | ToolSearchCallItem
             | ToolSearchOutputItem | CompactionTriggerItem)

ITEM_MODELS: dict[str, type[_Item]] = {
    "message": MessageItem,
    "function_call": FunctionCallItem,
    "custom_tool_call": CustomToolCallItem,
    "function_call_output": FunctionCallOutputItem,
    "custom_tool_call_output": FunctionCallOutputItem,
    "reasoning": ReasoningItem,
    "item_reference": ItemReference,
    "web_search_call": WebSearchCallItem,
    "compaction": CompactionItem,
    "agent_message": AgentMessageItem,
    "tool_search_call": ToolSearchCallItem,
    "tool_search_output": ToolSearchOutputItem,
    "compaction_trigger": CompactionTriggerItem,
}

# The field naming the earlier call an item refers to, by the item's class.
_REFERS: dict[type[_Item], str] = {FunctionCallItem: "call_id", CustomToolCallItem: "call_id",
                                   FunctionCallOutputItem: "call_id", WebSearchCallItem: "id"}


def referred_ids(items: list[Any]) -> list[str]:
    """The ids of the earlier calls (and searches) `items` refer to, in order: what their records are
    looked up by. Read from each item's dict (an agent's history refers to dozens of calls)."""
    out = []
    for item in items:
        field = _REFERS.get(type(item))
        if field is not None:
            out.append(item._wire.get(field))  # (a field left out: None, as its attribute reads it)
        elif isinstance(item, ToolSearchCallItem):
            out.append(item.search_id)
    return out


# One check of a list per item kind: parse_input checks all the items of one kind in one call (one
# call per item cost a microsecond or two each on long histories, and one union picking each item's
# member with a discriminator function about one more).
ITEM_LISTS: dict[type[_Item], TypeAdapter[list[Any]]] = {
    model: TypeAdapter(list[model.shape]) for model in dict.fromkeys(ITEM_MODELS.values())}  # type: ignore[name-defined]


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


class ContextManagement(_Lenient):
    """One `context_management` entry (openai types/responses/response_create_params.py): only
    `compaction` exists; `compact_threshold` is the rendered-token count that triggers it."""

    type: str
    compact_threshold: int | None = None


class ResponsesRequest(_Lenient):
    model: str
    # Each item is checked by parse_input, by its kind's shape (a copy of each item here cost 18 us a
    # 50-item history, for nothing).
    input: str | list[Any] = Field(default_factory=list)
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
    context_management: list[ContextManagement] | None = None


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
