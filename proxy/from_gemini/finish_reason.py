"""Gemini finishReason / promptFeedback -> Responses status (docs/wire.md#finish-and-usage)."""

from typing import Literal

Outcome = tuple[Literal["completed", "incomplete", "failed"], str | None]

_FILTERED = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY",
             "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "MODEL_ARMOR"}
# Finishes that mean the model's tool call could not be used: never report them as a success
# (LiteLLM#16651 turned MALFORMED_FUNCTION_CALL into an empty "stop").
_FAILED_MESSAGES = {
    "MALFORMED_FUNCTION_CALL": "Gemini produced a malformed function call (finishReason MALFORMED_FUNCTION_CALL)",
    "UNEXPECTED_TOOL_CALL": "Gemini called a tool that is not declared or not allowed "
                            "(finishReason UNEXPECTED_TOOL_CALL)",
    "TOO_MANY_TOOL_CALLS": "Gemini made too many tool calls (finishReason TOO_MANY_TOOL_CALLS)",
    "MISSING_THOUGHT_SIGNATURE": "Gemini rejected the history for a missing thought signature "
                                 "(finishReason MISSING_THOUGHT_SIGNATURE)",
    "MALFORMED_RESPONSE": "Gemini produced a malformed response (finishReason MALFORMED_RESPONSE)",
    "NO_IMAGE": "Gemini was expected to produce an image and produced none (finishReason NO_IMAGE)",
    "LANGUAGE": "Gemini stopped: the answer would be in an unsupported language (finishReason LANGUAGE)",
}
# Responses `error.code` (an enum in the SDKs): the history is at fault for a missing signature.
_FAILED_CODES = {"MISSING_THOUGHT_SIGNATURE": "invalid_prompt"}


def failure_code(reason: str | None) -> str:
    """The Responses error code of a failed finish."""
    return _FAILED_CODES.get(reason or "", "server_error")


def map_finish_reason(reason: str | None, block_reason: str | None = None) -> Outcome:
    """Return (status, detail): detail is the incomplete reason or the failure message."""
    if block_reason:
        return "incomplete", "content_filter"
    if reason in (None, "", "STOP", "FINISH_REASON_UNSPECIFIED"):
        return "completed", None
    if reason == "MAX_TOKENS":
        return "incomplete", "max_output_tokens"
    if reason in _FILTERED:
        return "incomplete", "content_filter"
    return "failed", _FAILED_MESSAGES.get(reason, f"Gemini stopped with finishReason {reason}")
