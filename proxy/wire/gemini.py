"""Gemini's wire at the boundary: typed models of generateContent requests and answers, the Cloud
Code wrapper, and the proxy's own `/v1/gemini` body.

The typed shapes are checked (a wrong one is a 400 naming the field, before anything is sent); the
core keeps working on the checked, camelCase dicts, because arguments and schemas inside them must pass
through byte for byte. Unknown fields are allowed: Gemini grows faster than this file.
"""

import re
from typing import Any, Required, TypedDict

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from proxy.errors import ProxyError, UpstreamError
from proxy.wire.json_body import field_path
from proxy.wire.shared_tools import SharedTools

_INSTANCE = re.compile(r" or instance of \w+")

# The shapes are TypedDicts checked by pydantic TypeAdapters: the check builds plain dicts, not
# model instances (a third of the time for a large request: 50 contents in 40 us instead of 130),
# and nothing reads its result. Keys are Gemini's camelCase (requests are converted by
# gemini_keys.to_camel_request first; answers come camelCase); unknown keys are allowed.


class PartialArg(TypedDict, total=False):
    jsonPath: Required[str]
    stringValue: str | None
    numberValue: float | None
    boolValue: bool | None
    nullValue: str | None
    willContinue: bool | None


class FunctionCall(TypedDict, total=False):
    name: str | None  # absent on the continuing fragments of a streamed call (partialArgs)
    args: dict[str, Any] | None
    id: str | None
    partialArgs: list[PartialArg] | None
    willContinue: bool | None


class FunctionResponse(TypedDict, total=False):
    name: Required[str]
    response: dict[str, Any] | None
    id: str | None
    parts: list[dict[str, Any]] | None


class Blob(TypedDict, total=False):
    mimeType: str | None
    data: Required[str]


class FileData(TypedDict, total=False):
    mimeType: str | None
    fileUri: Required[str]


class ToolCall(TypedDict, total=False):
    """A server-side tool invocation (Google Search...) Gemini ran itself: kept in history as sent."""

    id: str | None
    toolType: str | None
    args: dict[str, Any] | None


class ToolResponse(TypedDict, total=False):
    id: str | None
    toolType: str | None
    response: dict[str, Any] | None


class Part(TypedDict, total=False):
    text: str | None
    thought: bool | None
    thoughtSignature: str | None
    functionCall: FunctionCall | None
    functionResponse: FunctionResponse | None
    inlineData: Blob | None
    fileData: FileData | None
    toolCall: ToolCall | None
    toolResponse: ToolResponse | None


class Content(TypedDict, total=False):
    role: str | None
    parts: list[Part]


class FunctionDeclaration(TypedDict, total=False):
    name: Required[str]
    description: str | None
    parameters: dict[str, Any] | None
    parametersJsonSchema: Any
    response: dict[str, Any] | None


class Tool(TypedDict, total=False):
    functionDeclarations: list[FunctionDeclaration] | None
    googleSearch: dict[str, Any] | None


class FunctionCallingConfig(TypedDict, total=False):
    mode: str | None
    allowedFunctionNames: list[str] | None


class ToolConfig(TypedDict, total=False):
    functionCallingConfig: FunctionCallingConfig | None
    includeServerSideToolInvocations: bool | None


class ThinkingConfig(TypedDict, total=False):
    includeThoughts: bool | None
    thinkingBudget: int | None
    thinkingLevel: str | None


class GenerationConfig(TypedDict, total=False):
    temperature: float | None
    topP: float | None
    topK: float | None
    maxOutputTokens: int | None
    candidateCount: int | None
    stopSequences: list[str] | None
    responseMimeType: str | None
    thinkingConfig: ThinkingConfig | None


class GenerateContentRequest(TypedDict, total=False):
    contents: list[Content]
    systemInstruction: Content | None
    tools: list[Tool] | None
    toolConfig: ToolConfig | None
    generationConfig: GenerationConfig | None
    safetySettings: list[dict[str, Any]] | None
    cachedContent: str | None


class CloudCodeRequest(TypedDict, total=False):
    """Cloud Code Assist (`/v1internal:*GenerateContent`): the Gemini request wrapped with its model."""

    model: Required[str]
    project: str | None
    request: Required[dict[str, Any]]


class GroundingWeb(TypedDict, total=False):
    uri: str | None
    title: str | None
    domain: str | None


class GroundingChunk(TypedDict, total=False):
    web: GroundingWeb | None


class Segment(TypedDict, total=False):
    """Where a grounded claim sits in the answer: UTF-8 byte offsets, and its text."""

    startIndex: int | None
    endIndex: int | None
    partIndex: int | None
    text: str | None


class GroundingSupport(TypedDict, total=False):
    segment: Segment | None
    groundingChunkIndices: list[int] | None


class GroundingMetadata(TypedDict, total=False):
    webSearchQueries: list[str] | None
    groundingChunks: list[GroundingChunk] | None
    groundingSupports: list[GroundingSupport] | None


class Candidate(TypedDict, total=False):
    content: Content | None
    finishReason: str | None
    finishMessage: str | None
    index: int | None
    groundingMetadata: GroundingMetadata | None


class PromptFeedback(TypedDict, total=False):
    blockReason: str | None


class GenerateContentResponse(TypedDict, total=False):
    """One answer, or one streamed chunk of it."""

    candidates: list[Candidate] | None
    promptFeedback: PromptFeedback | None
    usageMetadata: dict[str, Any] | None
    error: dict[str, Any] | None


_REQUEST = TypeAdapter(GenerateContentRequest)
_CLOUDCODE = TypeAdapter(CloudCodeRequest)
_ANSWER = TypeAdapter(GenerateContentResponse)


def _where(e: ValidationError, prefix: tuple[str | int, ...]) -> tuple[str, str]:
    err = e.errors()[0]
    loc = [p for p in err["loc"] if isinstance(p, int) or not str(p).startswith(("function-", "tagged-"))]
    return field_path([*prefix, *loc]), _INSTANCE.sub("", err["msg"])


def _check_request(shape: TypeAdapter[Any], body: dict[str, Any]) -> None:
    try:
        shape.validate_python(body)
    except ValidationError as e:
        where, msg = _where(e, ())
        raise ProxyError(f"Invalid JSON payload received. Invalid value at '{where}': {msg}.", param=where,
                         code="invalid_value") from None


def check_generate_request(body: dict[str, Any]) -> None:
    """Raise a 400 naming the first field whose shape Gemini would refuse (body already camelCase).
    Tools shared by their text (wire/shared_tools.py) are checked the first time only."""
    tools = body.get("tools")
    if type(tools) is SharedTools and GenerateContentRequest in tools.checked:
        _check_request(_REQUEST, {k: v for k, v in body.items() if k != "tools"})
        return
    _check_request(_REQUEST, body)
    if type(tools) is SharedTools:
        # What passed (a TypedDict check gives back what was sent); a copy of the list, not the list
        # itself: an evicted list in a cycle with its own memo would wait for the collector.
        tools.checked[GenerateContentRequest] = list(tools)


def check_cloudcode_request(body: dict[str, Any]) -> None:
    _check_request(_CLOUDCODE, body)


def check_answer(chunk: Any) -> dict[str, Any]:
    """An answer (or chunk) from upstream, checked before any translator reads it; a broken one is a 502."""
    if not isinstance(chunk, dict):
        raise ProxyError("Gemini sent an answer that is not a JSON object.", status=502, type="server_error",
                         code="upstream_error")
    try:
        _ANSWER.validate_python(chunk)
    except ValidationError as e:
        where, msg = _where(e, ())
        raise ProxyError(f"Gemini sent an answer of an unexpected shape at '{where}': {msg}.", status=502,
                         type="server_error", code="upstream_error") from None
    return chunk


def error_of(body: Any) -> dict[str, Any] | None:
    """Gemini's error object in a parsed error answer (`{"error": {...}}`, or a list holding one: some
    endpoints wrap it), or None."""
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else None


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
