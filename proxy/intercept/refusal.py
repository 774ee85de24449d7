"""A refusal answered to an intercepted app in Gemini's own error shape, instead of Google's answer."""

import json

from mitmproxy import http

from proxy.errors import ProxyError, gemini_status


def gemini_error_response(e: ProxyError, status: str | None = None) -> http.Response:
    return http.Response.make(e.status, json.dumps({"error": {
        "code": e.status, "message": e.message, "status": status or gemini_status(e.status)}}),
        {"content-type": "application/json"})
