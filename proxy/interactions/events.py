"""The Interactions stream events the translator emits, as TypedDicts named after google-genai's
classes (`google.genai.interactions.<Name>`: InteractionCreatedEvent, StepStart, StepDelta, ...), with
their field names and the required/optional split of the SDK's own `<Name>TypedDict`s (`event_type`
required; `event_id` optional to the SDK, though every event here has one: it is how a stream resumes).

At run time they are plain dicts (the writer and fast_json take them as they are); to mypy a
misspelt or missing field is an error in the translator, not a client's parse failure.
tests/test_typed_events.py checks every class's keys against the SDK model's fields and runs mypy
on the translators. Nested objects (the interaction, a step, a delta, the error) stay `dict[str, Any]`.
"""

from typing import Any, Literal, NotRequired, TypedDict

_Object = dict[str, Any]


class InteractionCreatedEvent(TypedDict):
    event_type: Literal["interaction.created"]
    interaction: _Object
    event_id: NotRequired[str]


class InteractionCompletedEvent(TypedDict):
    event_type: Literal["interaction.completed"]
    interaction: _Object
    event_id: NotRequired[str]


class StepStart(TypedDict):
    event_type: Literal["step.start"]
    index: int
    step: _Object
    event_id: NotRequired[str]


class StepDelta(TypedDict):
    event_type: Literal["step.delta"]
    index: int
    delta: _Object
    event_id: NotRequired[str]
    metadata: NotRequired[_Object]


class StepStop(TypedDict):
    event_type: Literal["step.stop"]
    index: int
    event_id: NotRequired[str]
    step_usage: NotRequired[_Object]
    usage: NotRequired[_Object]


class ErrorEvent(TypedDict):
    event_type: Literal["error"]
    error: NotRequired[_Object]
    event_id: NotRequired[str]


InteractionsEvent = (
    InteractionCreatedEvent | InteractionCompletedEvent | StepStart | StepDelta | StepStop | ErrorEvent
)
"""Every event the Interactions translator emits (google-genai's InteractionSSEEvent members)."""
