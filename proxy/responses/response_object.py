"""The Responses API's Response object as it starts: every field of the Open Responses
`ResponseResource` (all are required there), echoing the request's configuration. A setting the
client left out shows the value Gemini actually used: its documented default, never a made-up one."""

import time
from typing import Any

from proxy import ids
from proxy.tools.hosted_tools import WARNING_METADATA, warning_text
from proxy.tools.prepare_tools import PreparedTools
from proxy.wire.responses import ResponsesRequest, wire_choice

# Gemini's sampling defaults (models.get reports them per model: temperature 1.0 and topP 0.95 for
# the 2.x and 3.x families); the penalties default to 0 (GenerationConfig).
DEFAULT_TEMPERATURE = 1.0
DEFAULT_TOP_P = 0.95
# OpenAI's documented value for a request that named no tier.
DEFAULT_SERVICE_TIER = "default"


def _echo_tool_choice(choice: str | dict[str, Any] | None) -> str | dict[str, Any]:
    if choice is None:
        return "auto"
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("function"), dict):
        return {"type": "function", "name": choice["function"].get("name")}  # Chat shape -> Responses shape
    return choice


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def response_skeleton(req: ResponsesRequest, tools: PreparedTools) -> dict[str, Any]:
    """The Response object before any output: it echoes the request's configuration."""
    choice = wire_choice(req.tool_choice)
    fmt = req.text.format.wire() if req.text and req.text.format else None
    return {
        "id": ids.response_id(),
        "object": "response",
        "created_at": int(time.time()),
        "completed_at": None,
        "status": "in_progress",
        "model": req.model,
        "output": [],
        "error": None,
        "incomplete_details": None,
        "instructions": req.instructions,
        "max_output_tokens": req.max_output_tokens,
        "max_tool_calls": req.max_tool_calls,
        "parallel_tool_calls": _or(req.parallel_tool_calls, True),
        "previous_response_id": req.previous_response_id,
        "reasoning": {"effort": req.reasoning.effort if req.reasoning else None,
                      "summary": req.reasoning.summary if req.reasoning else None},
        "store": _or(req.store, True),
        "background": bool(req.background),
        "temperature": _or(req.temperature, DEFAULT_TEMPERATURE),
        "top_p": _or(req.top_p, DEFAULT_TOP_P),
        "presence_penalty": _or(req.presence_penalty, 0.0),
        "frequency_penalty": _or(req.frequency_penalty, 0.0),
        "top_logprobs": _or(req.top_logprobs, 0),
        "service_tier": _or(req.service_tier, DEFAULT_SERVICE_TIER),
        "safety_identifier": req.safety_identifier,
        "prompt_cache_key": req.prompt_cache_key,
        "text": {"format": fmt or {"type": "text"}},
        "tool_choice": _echo_tool_choice(choice),
        "tools": tools.echo,
        "truncation": "disabled",  # the proxy never truncates: Gemini gets the whole history
        "usage": None,
        "user": req.user,
        # A hosted tool the request went without is said here too (tools/hosted_tools.py).
        "metadata": {**(req.metadata or {}), **({WARNING_METADATA: warning_text(tools.warnings)}
                                                if tools.warnings else {})},
    }
