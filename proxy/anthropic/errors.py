"""Anthropic's error shape: `{"type": "error", "error": {"type", "message"}}`, the type by status
(invalid_request_error, authentication_error, not_found_error, request_too_large, rate_limit_error,
api_error, overloaded_error); the field a 400 is about is named in its message."""

from typing import Any

from proxy.anthropic.translator import error_type
from proxy.errors import ProxyError
from proxy.server.errors import ErrorShape

PATHS = ("/v1/messages",)


def is_anthropic_path(path: str) -> bool:
    return path.startswith(PATHS)


def anthropic_error_body(e: ProxyError) -> dict[str, Any]:
    message = e.message
    if e.param and e.param not in message:
        message = f"{e.param}: {message}"
    return {"type": "error", "error": {"type": error_type(e.status), "message": message}}


SHAPE = ErrorShape(is_anthropic_path, anthropic_error_body)
