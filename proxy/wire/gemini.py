"""Gemini's wire at the boundary: typed models of generateContent requests and answers, the Cloud
Code wrapper, and the proxy's own `/v1/gemini` body.

The models check shapes (a wrong one is a 400 naming the field, before anything is sent); the core
keeps working on the checked, camelCase dicts, because arguments and schemas inside them must pass
through byte for byte. Unknown fields are allowed: Gemini grows faster than this file.
"""

import re
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from proxy.errors import ProxyError, UpstreamError
from proxy.wire.json_body import field_path

_INSTANCE = re.compile(r" or instance of \w+")


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
                              extra="allow")


class PartialArg(_Wire):
    json_path: str
    string_value: str | None = None
    number_value: float | None = None
    bool_value: bool | None = None
    null_value: str | None = None
    will_continue: bool | None = None


class FunctionCall(_Wire):
    name: str | None = None  # absent on the continuing fragments of a streamed call (partialArgs)
    args: dict[str, Any] | None = None
    id: str | None = None
    partial_args: list[PartialArg] | None = None
    will_continue: bool | None = None


class FunctionResponse(_Wire):
    name: str
    response: dict[str, Any] | None = None
    id: str | None = None
    parts: list[dict[str, Any]] | None = None


class Blob(_Wire):
    mime_type: str | None = None
    data: str


class FileData(_Wire):
    mime_type: str | None = None
    file_uri: str


class ToolCall(_Wire):
    """A server-side tool invocation (Google Search...) Gemini ran itself: kept in history as sent."""

    id: str | None = None
    tool_type: str | None = None
    args: dict[str, Any] | None = None


class ToolResponse(_Wire):
    id: str | None = None
    tool_type: str | None = None
    response: dict[str, Any] | None = None


class Part(_Wire):
    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    tool_call: ToolCall | None = None
    tool_response: ToolResponse | None = None


class Content(_Wire):
    role: str | None = None
    parts: list[Part] = Field(default_factory=list)


class FunctionDeclaration(_Wire):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    parameters_json_schema: Any = None
    response: dict[str, Any] | None = None


class Tool(_Wire):
    function_declarations: list[FunctionDeclaration] | None = None
    google_search: dict[str, Any] | None = None


class FunctionCallingConfig(_Wire):
    mode: str | None = None
    allowed_function_names: list[str] | None = None


class ToolConfig(_Wire):
    function_calling_config: FunctionCallingConfig | None = None
    include_server_side_tool_invocations: bool | None = None


class ThinkingConfig(_Wire):
    include_thoughts: bool | None = None
    thinking_budget: int | None = None
    thinking_level: str | None = None


class GenerationConfig(_Wire):
    temperature: float | None = None
    top_p: float | None = None
    top_k: float | None = None
    max_output_tokens: int | None = None
    candidate_count: int | None = None
    stop_sequences: list[str] | None = None
    response_mime_type: str | None = None
    thinking_config: ThinkingConfig | None = None


class GenerateContentRequest(_Wire):
    contents: list[Content] = Field(default_factory=list)
    system_instruction: Content | None = None
    tools: list[Tool] | None = None
    tool_config: ToolConfig | None = None
    generation_config: GenerationConfig | None = None
    safety_settings: list[dict[str, Any]] | None = None
    cached_content: str | None = None


class CloudCodeRequest(_Wire):
    """Cloud Code Assist (`/v1internal:*GenerateContent`): the Gemini request wrapped with its model."""

    model: str
    project: str | None = None
    request: dict[str, Any]


class GroundingWeb(_Wire):
    uri: str | None = None
    title: str | None = None
    domain: str | None = None


class GroundingChunk(_Wire):
    web: GroundingWeb | None = None


class Segment(_Wire):
    """Where a grounded claim sits in the answer: UTF-8 byte offsets, and its text."""

    start_index: int | None = None
    end_index: int | None = None
    part_index: int | None = None
    text: str | None = None


class GroundingSupport(_Wire):
    segment: Segment | None = None
    grounding_chunk_indices: list[int] | None = None


class GroundingMetadata(_Wire):
    web_search_queries: list[str] | None = None
    grounding_chunks: list[GroundingChunk] | None = None
    grounding_supports: list[GroundingSupport] | None = None


class Candidate(_Wire):
    content: Content | None = None
    finish_reason: str | None = None
    finish_message: str | None = None
    index: int | None = None
    grounding_metadata: GroundingMetadata | None = None


class PromptFeedback(_Wire):
    block_reason: str | None = None


class GenerateContentResponse(_Wire):
    """One answer, or one streamed chunk of it."""

    candidates: list[Candidate] | None = None
    prompt_feedback: PromptFeedback | None = None
    usage_metadata: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


def _where(e: ValidationError, prefix: tuple[str | int, ...]) -> tuple[str, str]:
    err = e.errors()[0]
    loc = [p for p in err["loc"] if isinstance(p, int) or not str(p).startswith(("function-", "tagged-"))]
    return field_path([*prefix, *loc]), _INSTANCE.sub("", err["msg"])


def _check_request(model: type[_Wire], body: dict[str, Any]) -> None:
    try:
        model.model_validate(body)
    except ValidationError as e:
        where, msg = _where(e, ())
        raise ProxyError(f"Invalid JSON payload received. Invalid value at '{where}': {msg}.", param=where,
                         code="invalid_value") from None


def check_generate_request(body: dict[str, Any]) -> None:
    """Raise a 400 naming the first field whose shape Gemini would refuse (body already camelCase)."""
    _check_request(GenerateContentRequest, body)


def check_cloudcode_request(body: dict[str, Any]) -> None:
    _check_request(CloudCodeRequest, body)


def check_answer(chunk: Any) -> dict[str, Any]:
    """An answer (or chunk) from upstream, checked before any translator reads it; a broken one is a 502."""
    if not isinstance(chunk, dict):
        raise ProxyError("Gemini sent an answer that is not a JSON object.", status=502, type="server_error",
                         code="upstream_error")
    try:
        GenerateContentResponse.model_validate(chunk)
    except ValidationError as e:
        where, msg = _where(e, ())
        raise ProxyError(f"Gemini sent an answer of an unexpected shape at '{where}': {msg}.", status=502,
                         type="server_error", code="upstream_error") from None
    return chunk


def checked(answer: Any) -> dict[str, Any]:
    """A whole answer or a chunk, ready for a translator: Gemini's `{"error": ...}` (its way of failing
    mid-stream) raised as an UpstreamError, the shape checked."""
    if isinstance(answer, dict) and "error" in answer:
        err = answer["error"]
        raise UpstreamError.from_gemini(err if isinstance(err, dict) else {"message": str(err)})
    return check_answer(answer)


def grounding_of(answer: dict[str, Any]) -> dict[str, Any] | None:
    """The first candidate's groundingMetadata (Google Search's sources), if this chunk has it."""
    cands = answer.get("candidates") or []
    found = cands[0].get("groundingMetadata") if cands else None
    return found if isinstance(found, dict) else None


def first_candidate_parts(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of the first candidate: the one helper every reader of a checked answer uses."""
    cands = answer.get("candidates") or []
    return list((cands[0].get("content") or {}).get("parts") or []) if cands else []


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
