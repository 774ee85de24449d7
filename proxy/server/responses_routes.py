"""`POST /v1/responses` and `GET /v1/responses/{id}`: the OpenAI Responses API over Gemini."""

import logging
from typing import Any

from aiohttp import web

from proxy import metrics
from proxy.errors import ProxyError
from proxy.from_gemini.response_object import response_skeleton
from proxy.from_gemini.to_responses import ResponsesTranslator
from proxy.server import gemini_rest, object_owners
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import read_json, validate
from proxy.server.json_answer import json_answer
from proxy.server.stream import run_stream
from proxy.server.stream_writers import ResponsesWriter
from proxy.store.base import StoredResponse, conversation_at
from proxy.to_gemini.conversation import Conversation
from proxy.to_gemini.input_to_contents import input_to_contents, parse_input
from proxy.to_gemini.request_body import build_gemini_request, stream_arguments
from proxy.tools.hosted_tools import warning_headers
from proxy.wire.gemini import checked
from proxy.wire.responses import ResponsesRequest

log = logging.getLogger(__name__)


async def create_response(request: web.Request) -> web.StreamResponse:
    ctx: Context = request.app[CONTEXT]
    sent = await read_json(request)
    req = validate(ResponsesRequest, sent)
    session = session_of(request)
    items = parse_input(req.input)

    prior = None
    if req.previous_response_id:
        prior = await conversation_at(ctx.store, session, req.previous_response_id)
        if prior is None:
            raise ProxyError(f"Previous response with id '{req.previous_response_id}' not found.",
                             param="previous_response_id", code="previous_response_not_found")

    # The tools as sent: strict validation accepted them unchanged (tests/test_wire_models.py), so
    # there is no need to dump 20 schemas back out of the models.
    model, tools, calls = await ctx.prepare(request, session, req.model, sent.get("tools"), items)
    conv = input_to_contents(items, prior=prior, calls=calls, names=tools.names, model=model,
                             result_parts=ctx.rules.result_parts(model))
    if req.store is not False:
        start = len(prior.contents) if prior else 0
        ctx.store.refuse_unkeepable([conv.contents[start:], conv.system], "This turn's input", "input")
    body = build_gemini_request(req, conv, tools, model)
    await object_owners.refuse_foreign(request, body)
    carry = "reasoning.encrypted_content" in (req.include or [])
    translator = ResponsesTranslator(response_skeleton(req, tools), tools,
                                     keep_first_call_only=req.parallel_tool_calls is False,
                                     carrier=ctx.seal(request, model) if carry else None, snapshots=False)
    key = api_key_of(request)
    headers = warning_headers(tools.warnings)

    async def remember(ok: bool) -> None:
        if ok:
            await _remember(ctx, session, req, prior, conv, translator)

    if req.stream:
        if ctx.rules.streams_arguments(model):
            stream_arguments(body)
        return await run_stream(request, ctx.upstream.stream(model, body, key), ResponsesWriter(translator),
                                headers=headers, on_end=remember)

    answer = checked(await ctx.upstream.generate(model, body, key))
    translator.start()
    translator.feed(answer)
    translator.finish()
    await remember(translator.response["status"] != "failed")
    return json_answer(translator.response, headers=headers)


async def _remember(ctx: Context, session: str, req: ResponsesRequest, prior: Conversation | None,
                    conv: Conversation, translator: ResponsesTranslator) -> None:
    """Keep call records always (stateless clients resend history) and the turn when store allows.
    Only what this turn added is stored, with a pointer to the turn before (linear memory)."""
    await ctx.store.put_calls(session, translator.calls + translator.hosted)
    metrics.child(metrics.TOOL_CALLS, "responses").inc(len(translator.calls))
    if req.store is False:
        return
    turn = translator.model_content()
    start = len(prior.contents) if prior else 0
    added = conv.contents[start:] + ([turn] if turn else [])
    system = conv.system[len(prior.system) if prior else 0:]
    await ctx.store.put_response(session, StoredResponse(
        id=translator.response["id"], response=translator.response, contents=added, system=system,
        pending=[c.call_id for c in translator.calls], parent=req.previous_response_id))


async def get_response(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    rid = request.match_info["response_id"]
    stored = await ctx.store.get_response(session_of(request), rid)
    if stored is None or "interaction" in stored.response:  # an interaction's id is not a response's
        raise ProxyError(f"No response found with id '{rid}'.", status=404, param="response_id",
                         type="invalid_request_error")
    return json_answer(stored.response)


async def list_models(request: web.Request) -> web.Response:
    """OpenAI's model list, or Gemini's for a Gemini client asking `GET /v1/models`."""
    if gemini_rest.wants_gemini_list(request):
        return await gemini_rest.list_models(request)
    ctx: Context = request.app[CONTEXT]
    data: list[dict[str, Any]] = [{"id": m, "object": "model", "created": 0, "owned_by": "google"}
                                  for m in (*ctx.models, *ctx.aliases)]
    return web.json_response({"object": "list", "data": data})
