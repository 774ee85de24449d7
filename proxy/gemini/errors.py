"""Gemini's error shape, for every Gemini-native route (REST, `/v1/gemini`, the object routes)."""

import math
from typing import Any

from proxy.errors import ProxyError, RateLimited, UpstreamError, gemini_status
from proxy.server.collections import KNOWN

_GEMINI_PREFIXES = ("/v1beta/", "/v1alpha/", "/v1/models/", "/v1/gemini", "/v1/interactions", "/upload/",
                    *(f"/v1/{c}" for c in sorted(KNOWN - {"models"})))


def is_gemini_path(path: str) -> bool:
    """Gemini-native routes answer in Gemini's error shape (`/v1/models` alone is OpenAI's list)."""
    return path.startswith(_GEMINI_PREFIXES) or path in ("/v1beta", "/v1alpha")


def gemini_error_body(e: ProxyError) -> dict[str, Any]:
    """Gemini's error object; Gemini's own (from upstream) is kept as sent, with a usable code."""
    if isinstance(e, UpstreamError) and e.gemini_error:
        err = dict(e.gemini_error)
        if not (isinstance(err.get("code"), int) and 400 <= err["code"] < 600):
            err["code"] = e.status
        return {"error": err}
    body: dict[str, Any] = {"code": e.status, "message": e.message, "status": gemini_status(e.status)}
    if isinstance(e, RateLimited):
        body["details"] = [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
             "violations": [{"quotaMetric": "gemini-tool-proxy/client_key_budget", "quotaId": e.quota}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{max(1, math.ceil(e.retry_after))}s"}]
    return {"error": body}

