"""A Responses or Chat request (already split into conversation and tools) -> a Gemini request body."""

from typing import Any

from proxy.to_gemini.conversation import Conversation
from proxy.to_gemini.reasoning import structured_output, thinking_config
from proxy.tools.prepare_tools import PreparedTools
from proxy.tools.tool_choice import tool_choice_to_config
from proxy.wire.responses import ResponsesRequest, wire_choice


def build_gemini_request(req: ResponsesRequest, conv: Conversation, tools: PreparedTools,
                         model: str | None = None) -> dict[str, Any]:
    """`model` is the Gemini model when the client's name is an alias."""
    # `instructions` are not carried over from previous_response_id; system messages in input are.
    reasoning = req.reasoning
    fmt = req.text.format if req.text else None
    return assemble_request(conv, tools, wire_choice(req.tool_choice), instructions=req.instructions,
                            generation={"temperature": req.temperature, "topP": req.top_p,
                                        "presencePenalty": req.presence_penalty,
                                        "frequencyPenalty": req.frequency_penalty,
                                        "maxOutputTokens": req.max_output_tokens,
                                        "thinkingConfig": thinking_config(model or req.model,
                                                                          reasoning.effort if reasoning else None,
                                                                          reasoning.summary if reasoning else None),
                                        **structured_output(fmt.wire() if fmt else None)})


def assemble_request(conv: Conversation, tools: PreparedTools, tool_choice: str | dict[str, Any] | None, *,
                     instructions: str | None = None, generation: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Gemini body for a conversation, tools and generation settings (None values are left out)."""
    body: dict[str, Any] = {"contents": conv.contents}
    system = ([{"text": instructions}] if instructions else []) + conv.system
    if system:
        body["systemInstruction"] = {"parts": system}
    if tools.declarations or tools.builtins:
        body["tools"] = tools.gemini_tools()
    config = tool_choice_to_config(tool_choice, tools) or {}
    if tools.server_side:  # Google Search next to functions (Gemini 3): its toolCall/toolResponse parts come back
        config["includeServerSideToolInvocations"] = True
    if config:
        body["toolConfig"] = config
    gen = {k: v for k, v in (generation or {}).items() if v is not None}
    if gen:
        body["generationConfig"] = gen
    return body


def stream_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """Ask Gemini to stream call arguments (partialArgs) for a streaming request with functions."""
    if body.get("tools") and any(t.get("functionDeclarations") for t in body["tools"]):
        config = body.setdefault("toolConfig", {}).setdefault("functionCallingConfig", {})
        config["streamFunctionCallArguments"] = True
    return body
