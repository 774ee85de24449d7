"""The Messages stream events the Anthropic translator emits, as TypedDicts named after the anthropic
SDK's classes (`anthropic.types.<Name>`; a message_delta carrying context_management is the beta
`anthropic.types.beta.BetaRawMessageDeltaEvent`, the stream's `error` event is `ErrorResponse`), with
its field names and its required/optional split.

At run time they are plain dicts (the writer and fast_json take them as they are); to mypy a
misspelt or missing field is an error in the translator, not a client's parse failure.
tests/test_typed_events.py checks every class's keys against the SDK model's fields and runs mypy
on the translators. Nested objects (the message, a block, a delta, usage) stay `dict[str, Any]`.
"""

from typing import Any, Literal, NotRequired, TypedDict

_Object = dict[str, Any]


class RawMessageStartEvent(TypedDict):
    type: Literal["message_start"]
    message: _Object


class RawContentBlockStartEvent(TypedDict):
    type: Literal["content_block_start"]
    index: int
    content_block: _Object


class RawContentBlockDeltaEvent(TypedDict):
    type: Literal["content_block_delta"]
    index: int
    delta: _Object


class RawContentBlockStopEvent(TypedDict):
    type: Literal["content_block_stop"]
    index: int


class RawMessageDeltaEvent(TypedDict):
    type: Literal["message_delta"]
    delta: _Object
    usage: _Object


class BetaRawMessageDeltaEvent(TypedDict):
    """message_delta as the beta SDK has it: with the context edits applied (context_edits.py)."""
    type: Literal["message_delta"]
    delta: _Object
    usage: _Object
    context_management: NotRequired[_Object | None]
    input_transformations: NotRequired[list[_Object] | None]


class RawMessageStopEvent(TypedDict):
    type: Literal["message_stop"]


class ErrorResponse(TypedDict):
    """The stream's `error` event (the SDKs raise on it)."""
    type: Literal["error"]
    error: _Object
    request_id: NotRequired[str | None]


AnthropicEvent = (
    RawMessageStartEvent | RawContentBlockStartEvent | RawContentBlockDeltaEvent | RawContentBlockStopEvent
    | RawMessageDeltaEvent | BetaRawMessageDeltaEvent | RawMessageStopEvent | ErrorResponse
)
"""Every event the Anthropic translator emits."""
