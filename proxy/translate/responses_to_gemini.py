"""A Responses request (already split into conversation and tools) -> a Gemini request body,
and the Response object skeleton that echoes the request's configuration."""

import time
from typing import Any

from proxy import ids
from proxy.translate.input_to_contents import Conversation
from proxy.translate.prepare_tools import PreparedTools, tool_choice_to_config
from proxy.translate.reasoning import structured_output, thinking_config
from proxy.wire.responses import ResponsesRequest


def build_gemini_request(req: ResponsesRequest, conv: Conversation, tools: PreparedTools,
                         model: str | None = None) -> dict[str, Any]:
    """`model` is the Gemini model when the client's name is an alias."""
    # `instructions` are not carried over from previous_response_id; system messages in input are.
    reasoning = req.reasoning or {}
    return assemble_request(conv, tools, req.tool_choice, instructions=req.instructions,
                            generation={"temperature": req.temperature, "topP": req.top_p,
                                        "maxOutputTokens": req.max_output_tokens,
                                        "thinkingConfig": thinking_config(model or req.model, reasoning.get("effort"),
                                                                          reasoning.get("summary")),
                                        **structured_output((req.text or {}).get("format"))})


def assemble_request(conv: Conversation, tools: PreparedTools, tool_choice: str | dict[str, Any] | None, *,
                     instructions: str | None = None, generation: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Gemini body for a conversation, tools and generation settings (None values are left out)."""
    body: dict[str, Any] = {"contents": conv.contents}
    system = ([{"text": instructions}] if instructions else []) + conv.system
    if system:
        body["systemInstruction"] = {"parts": system}
    if tools.declarations:
        body["tools"] = tools.gemini_tools()
    config = tool_choice_to_config(tool_choice, tools)
    if config:
        body["toolConfig"] = config
    gen = {k: v for k, v in (generation or {}).items() if v is not None}
    if gen:
        body["generationConfig"] = gen
    return body


def _echo_tool_choice(choice: str | dict[str, Any] | None) -> str | dict[str, Any]:
    if choice is None:
        return "auto"
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("function"), dict):
        return {"type": "function", "name": choice["function"].get("name")}  # Chat shape -> Responses shape
    return choice


def response_skeleton(req: ResponsesRequest, tools: PreparedTools) -> dict[str, Any]:
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
        "reasoning": {"effort": (req.reasoning or {}).get("effort"), "summary": (req.reasoning or {}).get("summary")},
        "store": True if req.store is None else req.store,
        "temperature": req.temperature,
        "text": {"format": (req.text or {}).get("format") or {"type": "text"}},
        "tool_choice": _echo_tool_choice(req.tool_choice),
        "tools": tools.echo,
        "top_p": req.top_p,
        "truncation": "disabled",
        "usage": None,
        "user": req.user,
        "metadata": req.metadata or {},
    }
