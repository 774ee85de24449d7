"""The Responses stream events the translator emits, as TypedDicts named after the openai SDK's
classes (`openai.types.responses.<Name>`), with its field names and its required/optional split.

At run time they are plain dicts (the writers, the WebSocket and fast_json take them as they are);
to mypy a misspelt or missing field is an error in the translator, not a client's parse failure.
tests/test_typed_events.py checks every class's keys against the SDK model's fields and runs mypy
on the translators. Nested objects (the response, an item, a part, an annotation) stay
`dict[str, Any]`: they are built and checked elsewhere (response_object.py, the SDK tests).
"""

from typing import Any, Literal, NotRequired, TypedDict

_Object = dict[str, Any]


class ResponseCreatedEvent(TypedDict):
    type: Literal["response.created"]
    sequence_number: int
    response: _Object


class ResponseInProgressEvent(TypedDict):
    type: Literal["response.in_progress"]
    sequence_number: int
    response: _Object


class ResponseCompletedEvent(TypedDict):
    type: Literal["response.completed"]
    sequence_number: int
    response: _Object


class ResponseIncompleteEvent(TypedDict):
    type: Literal["response.incomplete"]
    sequence_number: int
    response: _Object


class ResponseFailedEvent(TypedDict):
    type: Literal["response.failed"]
    sequence_number: int
    response: _Object


class ResponseOutputItemAddedEvent(TypedDict):
    type: Literal["response.output_item.added"]
    sequence_number: int
    output_index: int
    item: _Object


class ResponseOutputItemDoneEvent(TypedDict):
    type: Literal["response.output_item.done"]
    sequence_number: int
    output_index: int
    item: _Object


class ResponseContentPartAddedEvent(TypedDict):
    type: Literal["response.content_part.added"]
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    part: _Object


class ResponseContentPartDoneEvent(TypedDict):
    type: Literal["response.content_part.done"]
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    part: _Object


class ResponseTextDeltaEvent(TypedDict):
    type: Literal["response.output_text.delta"]
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: list[_Object]


class ResponseTextDoneEvent(TypedDict):
    type: Literal["response.output_text.done"]
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: list[_Object]


class ResponseOutputTextAnnotationAddedEvent(TypedDict):
    type: Literal["response.output_text.annotation.added"]
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    annotation_index: int
    annotation: NotRequired[_Object | None]


class ResponseReasoningSummaryPartAddedEvent(TypedDict):
    type: Literal["response.reasoning_summary_part.added"]
    sequence_number: int
    item_id: str
    output_index: int
    summary_index: int
    part: _Object


class ResponseReasoningSummaryPartDoneEvent(TypedDict):
    type: Literal["response.reasoning_summary_part.done"]
    sequence_number: int
    item_id: str
    output_index: int
    summary_index: int
    part: _Object
    status: NotRequired[Literal["incomplete"] | None]


class ResponseReasoningSummaryTextDeltaEvent(TypedDict):
    type: Literal["response.reasoning_summary_text.delta"]
    sequence_number: int
    item_id: str
    output_index: int
    summary_index: int
    delta: str


class ResponseReasoningSummaryTextDoneEvent(TypedDict):
    type: Literal["response.reasoning_summary_text.done"]
    sequence_number: int
    item_id: str
    output_index: int
    summary_index: int
    text: str


class ResponseFunctionCallArgumentsDeltaEvent(TypedDict):
    type: Literal["response.function_call_arguments.delta"]
    sequence_number: int
    item_id: str
    output_index: int
    delta: str


class ResponseFunctionCallArgumentsDoneEvent(TypedDict):
    type: Literal["response.function_call_arguments.done"]
    sequence_number: int
    item_id: str
    output_index: int
    arguments: str


class ResponseCustomToolCallInputDeltaEvent(TypedDict):
    type: Literal["response.custom_tool_call_input.delta"]
    sequence_number: int
    item_id: str
    output_index: int
    delta: str


class ResponseCustomToolCallInputDoneEvent(TypedDict):
    type: Literal["response.custom_tool_call_input.done"]
    sequence_number: int
    item_id: str
    output_index: int
    input: str


class ResponseWebSearchCallInProgressEvent(TypedDict):
    type: Literal["response.web_search_call.in_progress"]
    sequence_number: int
    item_id: str
    output_index: int


class ResponseWebSearchCallSearchingEvent(TypedDict):
    type: Literal["response.web_search_call.searching"]
    sequence_number: int
    item_id: str
    output_index: int


class ResponseWebSearchCallCompletedEvent(TypedDict):
    type: Literal["response.web_search_call.completed"]
    sequence_number: int
    item_id: str
    output_index: int


ResponsesEvent = (
    ResponseCreatedEvent | ResponseInProgressEvent | ResponseCompletedEvent | ResponseIncompleteEvent
    | ResponseFailedEvent | ResponseOutputItemAddedEvent | ResponseOutputItemDoneEvent
    | ResponseContentPartAddedEvent | ResponseContentPartDoneEvent | ResponseTextDeltaEvent | ResponseTextDoneEvent
    | ResponseOutputTextAnnotationAddedEvent | ResponseReasoningSummaryPartAddedEvent
    | ResponseReasoningSummaryPartDoneEvent | ResponseReasoningSummaryTextDeltaEvent
    | ResponseReasoningSummaryTextDoneEvent | ResponseFunctionCallArgumentsDeltaEvent
    | ResponseFunctionCallArgumentsDoneEvent | ResponseCustomToolCallInputDeltaEvent
    | ResponseCustomToolCallInputDoneEvent | ResponseWebSearchCallInProgressEvent
    | ResponseWebSearchCallSearchingEvent | ResponseWebSearchCallCompletedEvent
)
"""Every event the Responses translator emits (openai.types.responses.ResponseStreamEvent's members)."""

