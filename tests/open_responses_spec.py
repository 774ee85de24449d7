"""The Open Responses specification's resources as models, written from its JSON Schema
(openresponses/openresponses, schema/components/schemas/ResponseResource.json at 3452c012 and
CompactResource.json at 5e233781): every field the schema requires is required here, with the type
it gives, and nothing is loosened -- a number the spec wants may not be null, a nullable one may not
be absent. Items and events are validated by the openai SDK's own models besides (its union of
stream events, its ResponsesServerEvent for the WebSocket)."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictInt, StrictStr, TypeAdapter


class _Strict(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


Number = StrictFloat | StrictInt


class IncompleteDetails(_Strict):
    reason: StrictStr


class Error(_Strict):
    code: StrictStr
    message: StrictStr


class InputTokensDetails(_Strict):
    cached_tokens: StrictInt


class OutputTokensDetails(_Strict):
    reasoning_tokens: StrictInt


class Usage(_Strict):
    input_tokens: StrictInt
    output_tokens: StrictInt
    total_tokens: StrictInt
    input_tokens_details: InputTokensDetails
    output_tokens_details: OutputTokensDetails


class Reasoning(_Strict):
    effort: StrictStr | None = None
    summary: StrictStr | None = None


class TextField(_Strict):
    format: dict[str, Any]


class ResponseResource(_Strict):
    id: StrictStr
    object: Literal["response"]
    created_at: StrictInt
    completed_at: StrictInt | None
    status: StrictStr
    incomplete_details: IncompleteDetails | None
    model: StrictStr
    previous_response_id: StrictStr | None
    instructions: StrictStr | list[dict[str, Any]] | None
    output: list[dict[str, Any]]
    error: Error | None
    tools: list[dict[str, Any]]
    tool_choice: StrictStr | dict[str, Any]
    truncation: Literal["auto", "disabled"]
    parallel_tool_calls: StrictBool
    text: TextField
    top_p: Number
    presence_penalty: Number
    frequency_penalty: Number
    top_logprobs: StrictInt
    temperature: Number
    reasoning: Reasoning | None
    user: StrictStr | None
    usage: Usage | None
    max_output_tokens: StrictInt | None
    max_tool_calls: StrictInt | None
    store: StrictBool
    background: StrictBool
    service_tier: StrictStr
    metadata: dict[str, StrictStr]
    safety_identifier: StrictStr | None
    prompt_cache_key: StrictStr | None


class CompactResource(_Strict):
    id: StrictStr
    object: Literal["response.compaction"]
    output: list[dict[str, Any]]
    created_at: StrictInt
    usage: Usage


RESPONSE = TypeAdapter(ResponseResource)


def check_response(body: dict[str, Any]) -> ResponseResource:
    """A Response object as the specification requires it; `completed_at` set exactly when completed."""
    r = ResponseResource.model_validate(body)
    assert (r.completed_at is not None) == (r.status == "completed"), (r.status, r.completed_at)
    return r


def check_events(events: list[dict[str, Any]]) -> None:
    """Every `response` carried by a stream event is a whole ResponseResource."""
    for event in events:
        if isinstance(event.get("response"), dict):
            check_response(event["response"])
