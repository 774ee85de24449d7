"""The Responses API's Response object as it starts: it echoes the request's configuration."""

import time
from typing import Any

from proxy import ids
from proxy.tools.hosted_tools import WARNING_METADATA, warning_text
from proxy.tools.prepare_tools import PreparedTools
from proxy.wire.responses import ResponsesRequest, wire_choice


def _echo_tool_choice(choice: str | dict[str, Any] | None) -> str | dict[str, Any]:
    if choice is None:
        return "auto"
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("function"), dict):
        return {"type": "function", "name": choice["function"].get("name")}  # Chat shape -> Responses shape
    return choice


def response_skeleton(req: ResponsesRequest, tools: PreparedTools) -> dict[str, Any]:
    """The Response object before any output: it echoes the request's configuration."""
    choice = wire_choice(req.tool_choice)
    fmt = req.text.format.wire() if req.text and req.text.format else None
    return {
        "id": ids.response_id(),
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": req.model,
        "output": [],
        "error": None,
        "incomplete_details": None,
        "instructions": req.instructions,
        "max_output_tokens": req.max_output_tokens,
        "parallel_tool_calls": True if req.parallel_tool_calls is None else req.parallel_tool_calls,
        "previous_response_id": req.previous_response_id,
        "reasoning": {"effort": req.reasoning.effort if req.reasoning else None,
                      "summary": req.reasoning.summary if req.reasoning else None},
        "store": True if req.store is None else req.store,
        "temperature": req.temperature,
        "text": {"format": fmt or {"type": "text"}},
        "tool_choice": _echo_tool_choice(choice),
        "tools": tools.echo,
        "top_p": req.top_p,
        "truncation": "disabled",
        "usage": None,
        "user": req.user,
        # A hosted tool the request went without is said here too (tools/hosted_tools.py).
        "metadata": {**(req.metadata or {}), **({WARNING_METADATA: warning_text(tools.warnings)}
                                                if tools.warnings else {})},
    }
