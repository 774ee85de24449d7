"""The Interactions API's error shape."""

import re
from typing import Any

from proxy.errors import ProxyError, UpstreamError, gemini_status

INTERACTIONS_PATH = re.compile(r"^/(v1|v1beta|v1alpha)/interactions(/|$)")


def interactions_error_body(e: ProxyError) -> dict[str, Any]:
    """The Interactions API's error object: google-genai reads `code` as a string (the status name)."""
    status = e.status
    if isinstance(e, UpstreamError) and e.gemini_error and isinstance(e.gemini_error.get("status"), str):
        return {"error": {"code": e.gemini_error["status"], "message": e.message}}
    return {"error": {"code": gemini_status(status), "message": e.message}}


def is_interactions_path(path: str) -> bool:
    return INTERACTIONS_PATH.match(path) is not None
