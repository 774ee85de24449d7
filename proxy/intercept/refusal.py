"""A refusal answered to an intercepted app in its own error shape, instead of Google's answer: Gemini's
error object; for a Claude model on Antigravity's wire, Gemini's 400 `INVALID_ARGUMENT` whose message is
Anthropic's error JSON as a string, as Google passes Claude's own refusals on
(tests/recorded/antigravity/error-400-claude-anthropic-json-in-message.json), so that the app reads
it as it reads Claude's."""

import json

from mitmproxy import http

from proxy.errors import ProxyError, gemini_status
from proxy.tools.call_ids import needs_call_ids


def gemini_error_response(e: ProxyError, status: str | None = None, model: str = "") -> http.Response:
    message = e.message
    if needs_call_ids(model) and 400 <= e.status < 500:
        message = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": e.message}},
                             separators=(",", ":"))
        status = "INVALID_ARGUMENT" if e.status == 400 else status
    return http.Response.make(e.status, json.dumps({"error": {
        "code": e.status, "message": message, "status": status or gemini_status(e.status)}}),
        {"content-type": "application/json"})
