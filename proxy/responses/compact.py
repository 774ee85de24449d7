"""`POST /v1/responses/compact`: a long conversation made short enough to continue (compaction.py).

The conversation is the stored chain behind `previous_response_id`, then `input`. The output has
OpenAI's shape: the user messages, then the kept exchange, then the compaction item. Fed back as
`input`, it continues the conversation: the summary opens the history (input_to_contents puts a
compaction's summary first, wherever the item stands).
"""

import time
from typing import Any

from aiohttp import web

from proxy import ids
from proxy.errors import ProxyError
from proxy.from_gemini.usage import map_usage
from proxy.responses.compaction import compact, expand_compacted, items_at, open_compactions, refuse_unopened
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import read_json, validate
from proxy.server.json_answer import json_answer
from proxy.to_gemini.input_to_contents import parse_input
from proxy.wire.responses import CompactRequest


async def compact_route(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    req = validate(CompactRequest, await read_json(request))
    session = session_of(request)
    history: list[Any] = []
    stored = 0  # how many items the stored chain gave, before the input's
    if req.previous_response_id:
        found = await items_at(ctx.store, session, req.previous_response_id)
        if found is None:
            raise ProxyError(f"Previous response with id '{req.previous_response_id}' not found.",
                             param="previous_response_id", code="previous_response_not_found")
        history, stored = found, len(found)
    if isinstance(req.input, str):
        history.append({"type": "message", "role": "user", "content": req.input})
    elif req.input:  # a compaction made on create stands for the input it replaced (compaction.py)
        history.extend(expand_compacted(ctx.seal(request, ctx.gemini_model(req.model)), req.input))
    if not history:
        raise ProxyError("Nothing to compact: give 'input', 'previous_response_id', or both.", param="input",
                         code="missing_required_parameter")
    items = parse_input(history)
    await ctx.admit(request)
    model, _tools, calls = await ctx.prepare(request, session, req.model, None, items)
    seal = ctx.seal(request, model)
    summaries, carried = open_compactions(seal, items)
    refuse_unopened(items, summaries, stored, req.previous_response_id)  # as /v1/responses does
    done = await compact(ctx, api_key_of(request), seal, model, history, items, {**carried, **calls}, summaries,
                         req.instructions)
    return json_answer({"id": ids.response_id(), "object": "response.compaction", "output": done.output,
                        "created_at": int(time.time()), "usage": map_usage(done.usage)})
