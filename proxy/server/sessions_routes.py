"""`/v1/sessions/{session}`: give a session tools for intercepted traffic, read its captured calls, answer them.

    PUT    /v1/sessions/{s}/tools         {"tools": [OpenAI tools], "tool_choice": ...}
    GET    /v1/sessions/{s}               declarations, toolConfig and the captured rounds
    POST   /v1/sessions/{s}/tool_outputs  {"outputs": [{"call_id": ..., "output": ...}]}
    DELETE /v1/sessions/{s}
"""

import json
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from proxy.errors import ProxyError
from proxy.server.auth import SCOPE, scoped_session
from proxy.server.context import CONTEXT, Context
from proxy.server.errors import read_json, validate
from proxy.session.output_pairing import pair_outputs
from proxy.tools.hosted_tools import warning_headers
from proxy.tools.prepare_tools import prepare_tools
from proxy.tools.tool_choice import tool_choice_to_config


class SessionTools(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    tools: list[dict[str, Any]]
    tool_choice: str | dict[str, Any] | None = None


class ToolOutput(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    call_id: str | None = None  # without one, outputs pair with the latest round's open calls in order
    output: str | dict[str, Any] | list[Any]


class ToolOutputs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    outputs: list[ToolOutput] = Field(min_length=1)


async def put_tools(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    name, session = _session(request)
    req = validate(SessionTools, await read_json(request))
    prepared = prepare_tools(req.tools)
    config = tool_choice_to_config(req.tool_choice, prepared)
    await ctx.store.set_tools(session, prepared.declarations, config, prepared.names.to_client)
    # The interceptor adds functions to an app's requests; a hosted tool is not kept, and it says so.
    warnings = [f"{h.param} ({h.kind}): a session's tools are functions; this hosted tool was not kept"
                for h in prepared.hosted]
    return web.json_response({**_names(request, name, session), "functionDeclarations": prepared.declarations,
                              "toolConfig": config, **({"warnings": warnings} if warnings else {})},
                             headers=warning_headers(warnings))


async def get_session(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    name, session = _session(request)
    tc = await ctx.store.get_tool_context(session)
    if tc is None:
        raise ProxyError(f"Session '{name}' has no tools or captured calls.", status=404, param="session")
    rounds = [{"calls": [{"call_id": c.call_id, "name": tc.client_names.get(c.gemini_name, c.name),
                          "arguments": json.dumps(c.args or {}, ensure_ascii=False)} for c in r.calls],
               "outputs": r.results} for r in tc.rounds]
    return web.json_response({**_names(request, name, session), "functionDeclarations": tc.declarations,
                              "toolConfig": tc.tool_config, "rounds": rounds})


async def post_outputs(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    name, session = _session(request)
    req = validate(ToolOutputs, await read_json(request))
    outputs = [(o.call_id, o.output if isinstance(o.output, dict) else {"output": o.output}) for o in req.outputs]
    results = pair_outputs(await ctx.store.get_tool_context(session), outputs)
    unknown = await ctx.store.add_results(session, results)
    if unknown:
        raise ProxyError(f"No tool call found for function call output with call_id {unknown[0]}.", param="outputs")
    return web.json_response({**_names(request, name, session), "recorded": list(results)})


async def delete_session(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    await ctx.store.drop_tool_context(_session(request)[1])
    return web.json_response({"deleted": True})


def _session(request: web.Request) -> tuple[str, str]:
    """(the name the client used, the store's name for it within the client's scope)."""
    name = request.match_info["session"]
    return name, scoped_session(request, name, "session")


def _names(request: web.Request, name: str, session: str) -> dict[str, str]:
    """The session as the client named it; with authentication also the name intercepted traffic uses
    for it (the x-gtp-session header or <session:ID> marker an app sends through the addon)."""
    return {"session": name, "intercept_session": session} if SCOPE in request else {"session": name}


def add_routes(app: web.Application) -> None:
    app.router.add_put("/v1/sessions/{session}/tools", put_tools)
    app.router.add_get("/v1/sessions/{session}", get_session)
    app.router.add_post("/v1/sessions/{session}/tool_outputs", post_outputs)
    app.router.add_delete("/v1/sessions/{session}", delete_session)
