"""`POST /v1/responses` and `GET /v1/responses/{id}`: the OpenAI Responses API over Gemini."""

import logging
from typing import Any

from aiohttp import web

from proxy.errors import ProxyError
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import read_json, validate
from proxy.server.sse_response import open_sse, write_events
from proxy.store.base import StoredResponse
from proxy.translate.gemini_to_responses import ResponsesTranslator
from proxy.translate.input_to_contents import Conversation, input_to_contents, parse_input
from proxy.translate.responses_to_gemini import build_gemini_request, response_skeleton
from proxy.wire.responses import ResponsesRequest

log = logging.getLogger(__name__)


async def create_response(request: web.Request) -> web.StreamResponse:
    ctx: Context = request.app[CONTEXT]
    req = validate(ResponsesRequest, await read_json(request))
    session = session_of(request)
    items = parse_input(req.input)

    prior = None
    if req.previous_response_id:
        stored = await ctx.store.get_response(session, req.previous_response_id)
        if stored is None:
            raise ProxyError(f"Previous response with id '{req.previous_response_id}' not found.",
                             param="previous_response_id", code="previous_response_not_found")
        prior = Conversation(stored.contents, stored.system, stored.pending)

    model, tools, calls = await ctx.prepare(session, req.model, req.tools, items)
    conv = input_to_contents(items, prior=prior, calls=calls, names=tools.names, model=model)
    body = build_gemini_request(req, conv, tools, model)
    translator = ResponsesTranslator(response_skeleton(req, tools), tools,
                                     keep_first_call_only=req.parallel_tool_calls is False,
                                     carry_signatures="reasoning.encrypted_content" in (req.include or []))
    key = api_key_of(request)

    if req.stream:
        chunks = await ctx.upstream.stream(model, body, key)  # upstream errors surface as plain 4xx/5xx
        resp = await open_sse(request)
        try:
            await write_events(resp, translator.start())
            async for chunk in chunks:
                await write_events(resp, translator.feed(chunk))
            await write_events(resp, translator.finish())
        finally:
            await chunks.aclose()
            await _remember(ctx, session, req, conv, translator)
        await resp.write_eof()
        return resp

    data = await ctx.upstream.generate(model, body, key)
    translator.start()
    translator.feed(data)
    translator.finish()
    await _remember(ctx, session, req, conv, translator)
    return web.json_response(translator.response)


async def _remember(ctx: Context, session: str, req: ResponsesRequest, conv: Conversation,
                    translator: ResponsesTranslator) -> None:
    """Keep call records always (stateless clients resend history) and the response when store allows."""
    await ctx.store.put_calls(session, translator.calls)
    if req.store is False:
        return
    turn = translator.model_content()
    contents = conv.contents + ([turn] if turn else [])
    await ctx.store.put_response(session, StoredResponse(
        id=translator.response["id"], response=translator.response, contents=contents, system=conv.system,
        pending=[c.call_id for c in translator.calls]))


async def get_response(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    rid = request.match_info["response_id"]
    stored = await ctx.store.get_response(session_of(request), rid)
    if stored is None:
        raise ProxyError(f"No response found with id '{rid}'.", status=404, param="response_id",
                         type="invalid_request_error")
    return web.json_response(stored.response)


async def list_models(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    data: list[dict[str, Any]] = [{"id": m, "object": "model", "created": 0, "owned_by": "google"}
                                  for m in (*ctx.models, *ctx.aliases)]
    return web.json_response({"object": "list", "data": data})
