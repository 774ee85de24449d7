"""The mock Gemini as an aiohttp app: `/v1beta/models/{model}:generateContent` and friends.

Runs as a server of its own (`gemini-tool-proxy mock`) or inside the proxy (`--upstream mock`).
Requests it accepted are kept in `app[RECEIVED]` (most recent last) so tests can see what the
proxy really sent upstream.
"""

import asyncio
import collections
import json
import re

from aiohttp import web

from proxy.mock.model import merge_chunks, respond
from proxy.mock.validate import GeminiRejection, validate_request

RECEIVED = web.AppKey("received", collections.deque)
MODEL_NAME = re.compile(r"^(gemini|gemma)-[A-Za-z0-9.\-]+$")
NO_KEY = ("Method doesn't allow unregistered callers (callers without established identity). "
          "Please use API Key or other form of API consumer identity to call this API.")
MODELS = ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-pro-preview", "gemini-3-flash-preview", "gemma-3-27b-it"]


def _error(e: GeminiRejection) -> web.Response:
    return web.json_response(e.body(), status=e.status)


def _api_key(request: web.Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return (request.headers.get("x-goog-api-key") or request.query.get("key")
            or (auth[7:] if auth.lower().startswith("bearer ") else None))


async def generate(request: web.Request) -> web.StreamResponse:
    version = request.match_info["version"]
    model, _, method = request.match_info["target"].rpartition(":")
    if method not in ("generateContent", "streamGenerateContent"):
        return _error(GeminiRejection(404, f"Method {method} not found.", "NOT_FOUND"))
    key = _api_key(request)
    if not key:
        return _error(GeminiRejection(403, NO_KEY, "PERMISSION_DENIED"))
    if key.startswith("bad"):
        return _error(GeminiRejection(400, "API key not valid. Please pass a valid API key."))
    if not MODEL_NAME.match(model):
        return _error(GeminiRejection(404, f"models/{model} is not found for API version {version}, or is not "
                                           "supported for generateContent. Call ListModels to see the list of "
                                           "available models and their supported methods.", "NOT_FOUND"))
    try:
        body = json.loads(await request.read())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error(GeminiRejection(400, "Invalid JSON payload received. Unexpected token."))
    try:
        validate_request(body, model)
    except GeminiRejection as e:
        return _error(e)
    request.app[RECEIVED].append({"model": model, "method": method, "body": body, "key": key})
    reply = respond(body, model)
    if reply.error:
        status, name, message = reply.error
        return _error(GeminiRejection(status, message, name))
    if method == "generateContent":
        return web.json_response(merge_chunks(reply.chunks))

    sse = request.query.get("alt") == "sse"
    resp = web.StreamResponse(headers={"content-type": "text/event-stream" if sse else "application/json"})
    await resp.prepare(request)
    for i, chunk in enumerate(reply.chunks):
        if i and reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.stream_error_after is not None and i == reply.stream_error_after:
            chunk = {"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}}
        data = json.dumps(chunk, ensure_ascii=False)
        if sse:
            await resp.write(f"data: {data}\r\n\r\n".encode())
        else:
            await resp.write((("[" if i == 0 else ",\r\n") + data).encode())
        if reply.stream_error_after is not None and i == reply.stream_error_after:
            break
    if not sse:
        await resp.write(b"]")
    await resp.write_eof()
    return resp


async def list_models(request: web.Request) -> web.Response:
    return web.json_response({"models": [
        {"name": f"models/{m}", "displayName": m, "supportedGenerationMethods": ["generateContent",
                                                                               "streamGenerateContent"]}
        for m in MODELS]})


def make_mock_app() -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[RECEIVED] = collections.deque(maxlen=256)
    app.router.add_post("/{version:v1|v1beta|v1alpha}/models/{target}", generate)
    app.router.add_get("/{version:v1|v1beta|v1alpha}/models", list_models)
    return app


async def start_mock(host: str = "127.0.0.1", port: int = 0) -> tuple[web.AppRunner, str, web.Application]:
    """Start the mock on loopback; returns (runner, base URL, app). Port 0 picks a free port."""
    app = make_mock_app()
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://{host}:{bound}", app

