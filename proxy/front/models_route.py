"""`GET /v1/models`: one path, three protocols' lists: OpenAI's, Gemini's for a Gemini client, Anthropic's
for a request with `anthropic-version`."""

from typing import Any

from aiohttp import web

from proxy.anthropic import routes as anthropic
from proxy.gemini import rest
from proxy.server.context import CONTEXT, Context


async def list_models(request: web.Request) -> web.Response:
    """OpenAI's model list, or Gemini's for a Gemini client asking `GET /v1/models`."""
    if rest.wants_gemini_list(request):
        return await rest.list_models(request)
    if anthropic.wants_anthropic_list(request):
        return await anthropic.list_models(request)
    ctx: Context = request.app[CONTEXT]
    data: list[dict[str, Any]] = [{"id": m, "object": "model", "created": 0, "owned_by": "google"}
                                  for m in (*ctx.models, *ctx.aliases)]
    return web.json_response({"object": "list", "data": data})
