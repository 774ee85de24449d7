"""Anthropic's error shape: `{"type": "error", "error": {"type", "message"}}`, the type by status
(invalid_request_error, authentication_error, not_found_error, request_too_large, rate_limit_error,
api_error, overloaded_error); the field a 400 is about is named in its message. A refusal the SDKs
tell apart by code (threads.py) carries `details: {"error_code": ...}`, where they read it
(anthropic-python `_exceptions.extract_error_code`)."""

from typing import Any

from proxy.anthropic.translator import error_type
from proxy.errors import ProxyError

PATHS = ("/v1/messages",)


def is_anthropic_path(path: str) -> bool:
    return path.startswith(PATHS)


def anthropic_error_body(e: ProxyError) -> dict[str, Any]:
    message = e.message
    if e.param and e.param not in message:
        message = f"{e.param}: {message}"
    error: dict[str, Any] = {"type": error_type(e.status), "message": message}
    details = getattr(e, "details", None)
    if details:
        error["details"] = details
    return {"type": "error", "error": error}

