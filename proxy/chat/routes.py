"""`POST /v1/chat/completions`: OpenAI Chat Completions over Gemini, sync and streaming."""

from typing import Any

from aiohttp import web

from proxy.chat.stream_writer import ChatWriter
from proxy.chat.to_items import KEPT_ITEMS, message_items
from proxy.chat.translator import ChatTranslator
from proxy.errors import PairingError, ProxyError
from proxy.server import object_owners
from proxy.server.answer_turn import ReadyTurn, answer_turn
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import kept_scope, read_json, validate
from proxy.to_gemini.input_to_contents import input_to_contents, own_items
from proxy.to_gemini.reasoning import structured_output, thinking_config
from proxy.to_gemini.request_body import assemble_request
from proxy.tools.hosted_tools import warning_headers
from proxy.wire.chat import ChatRequest
from proxy.wire.resent_items import converted
from proxy.wire.responses import wire_choice

# OpenAI's own wording for the two pairing errors of the Chat API (typo included).
UNKNOWN_TOOL_MESSAGE = ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                        "with 'tool_calls'.")
MISSING_TOOL_MESSAGE = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                        "'tool_call_id'. The following tool_call_ids did not have response messages: {}")


async def chat_completions(request: web.Request) -> web.StreamResponse:
    ctx: Context = request.app[CONTEXT]
    sent = await read_json(request, shared_tools=True, history="messages")
    req = validate(ChatRequest, sent)
    if req.n not in (None, 1):
        raise ProxyError("Only n=1 is supported: Gemini is asked for one candidate.", param="n",
                         code="invalid_value")
    session = session_of(request)
    # (a resent message's typed items: made once per client scope, shared by its later turns)
    items = [item for part in converted(sent.get("messages"), req.messages, ChatRequest, KEPT_ITEMS,
                                        lambda i, m: own_items(message_items(i, m))) for item in part]
    # The tools as sent: strict validation accepted them unchanged (tests/test_wire_models.py), so
    # there is no need to dump 20 schemas back out of the models.
    await ctx.admit(request)
    model, tools, calls = await ctx.prepare(request, session, req.model, sent.get("tools"), items,
                                            web_search=req.web_search_options is not None)
    try:
        conv = input_to_contents(items, calls=calls, names=tools.names, model=model,
                                 result_parts=ctx.rules.result_parts(model),
                                 scope=kept_scope(request, sent.get("messages")))
    except PairingError as e:
        message = MISSING_TOOL_MESSAGE.format(e.call_id) if e.missing_output else UNKNOWN_TOOL_MESSAGE
        raise ProxyError(message, param="messages", code=None) from None
    stop = [req.stop] if isinstance(req.stop, str) else req.stop
    body = assemble_request(conv, tools, wire_choice(req.tool_choice), generation={
        "temperature": req.temperature, "topP": req.top_p, "stopSequences": stop,
        "maxOutputTokens": req.max_completion_tokens or req.max_tokens,
        "thinkingConfig": thinking_config(model, req.reasoning_effort, None),
        **structured_output(req.response_format.wire() if req.response_format else None)})
    await object_owners.refuse_foreign(request, body)
    translator = ChatTranslator(req.model, tools, keep_first_call_only=req.parallel_tool_calls is False)
    key = api_key_of(request)
    headers = warning_headers(tools.warnings)

    async def remember(ok: bool) -> None:
        if ok:
            await ctx.keep_calls(session, translator.calls, "chat", model=model)

    def whole(answers: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
        for answer in answers:
            translator.feed(answer)
        _, failure = translator.outcome()
        if failure:  # never an empty success: an unusable finish is an error in Chat's own shape
            raise ProxyError(failure, status=502, type="server_error", code="upstream_error")
        return translator.completion(), True

    include_usage = bool(req.stream_options and req.stream_options.include_usage)
    # (no `tools`: Chat has no hosted tool search for the proxy to run)
    return await answer_turn(request, ReadyTurn(model=model, body=body, key=key, stream=bool(req.stream),
                                                writer=lambda: ChatWriter(translator, include_usage), whole=whole,
                                                remember=remember, headers=headers))


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/chat/completions", chat_completions)
