"""The rest of Gemini's REST surface on the native front-end (google-genai / LangChain `base_url`):
countTokens, embedContent, batchEmbedContents, `GET models` and `models/{m}` (aliases included),
and every other API path (files, cachedContents, operations, uploads) passed through untouched.

Answers and errors come back exactly as Gemini gave them; the proxy's own refusals are in Gemini's
error shape (errors.py). URLs are built from checked segments only (upstream/gemini/client.py).
"""

import json
from typing import Any

from aiohttp import web
from yarl import URL

from proxy.errors import ProxyError
from proxy.server import object_owners
from proxy.server.auth import SCOPE
from proxy.server.collections import KNOWN, OWNED, STATELESS, check_allowed, collection_of
from proxy.server.context import CONTEXT, Context, api_key_of
from proxy.server.errors import read_json
from proxy.server.object_owners import owned_name
from proxy.upstream.gemini.client import Forwarded, GeminiUpstream
from proxy.wire.model_name import credential_like, model_resource

MODEL_METHODS = ("countTokens", "embedContent", "batchEmbedContents")


def _gemini(ctx: Context) -> GeminiUpstream:
    if ctx.rest is None:
        raise ProxyError("This front-end's upstream (the relay) carries generateContent only; other Gemini "
                         "methods need a Gemini upstream.", status=501)
    return ctx.rest


def _answer(fwd: Forwarded, body: bytes | None = None) -> web.Response:
    return web.Response(body=fwd.body if body is None else body, status=fwd.status, headers=fwd.headers)


async def _forward(request: web.Request, segments: list[str], body: bytes, prefix: tuple[str, ...] = ()) -> Forwarded:
    ctx: Context = request.app[CONTEXT]
    gemini = _gemini(ctx)
    url = gemini.path_url(prefix or (request.match_info.get("version", "v1"),), segments, request.query)
    model = segments[1].split(":", 1)[0] if len(segments) > 1 and segments[0] in ("models", "tunedModels") else ""
    return await gemini.forward(request.method, url, body, request.headers, api_key_of(request), model)


def _json(fwd: Forwarded) -> Any:
    try:
        return json.loads(fwd.body) if fwd.status == 200 else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


async def model_method(request: web.Request, model: str, method: str) -> web.Response:
    """`models/{m}:countTokens|embedContent|batchEmbedContents`, the model's alias resolved."""
    ctx: Context = request.app[CONTEXT]
    body = await read_json(request)
    if not isinstance(body, dict):
        raise ProxyError("Invalid JSON payload received. Expected an object.")
    await object_owners.refuse_foreign(request, body)
    if isinstance(body.get("generateContentRequest"), dict):
        await object_owners.refuse_foreign(request, body["generateContentRequest"])
    gemini_model = ctx.gemini_model(model)
    collection, model_id = model_resource(gemini_model)
    requests = body.get("requests") if method == "batchEmbedContents" else None
    for sub in requests if isinstance(requests, list) else []:
        if isinstance(sub, dict) and isinstance(sub.get("model"), str):  # each names its model too
            sub["model"] = "/".join(model_resource(ctx.gemini_model(sub["model"].removeprefix("models/"))))
    if method == "countTokens" and isinstance(body.get("generateContentRequest"), dict):
        body["generateContentRequest"]["model"] = f"{collection}/{model_id}"
    data = json.dumps(body, ensure_ascii=False).encode()
    return _answer(await _forward(request, [collection, f"{model_id}:{method}"], data))


async def list_models(request: web.Request) -> web.Response:
    """Gemini's model list, with each alias listed as the model it stands for."""
    ctx: Context = request.app[CONTEXT]
    fwd = await _forward(request, ["models"], b"")
    data = _json(fwd)
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        return _answer(fwd)
    by_name = {m.get("name"): m for m in data["models"] if isinstance(m, dict)}
    for alias, target in ctx.aliases.items():
        entry = by_name.get(f"models/{target.removeprefix('models/')}")
        if entry is not None:
            data["models"].append({**entry, "name": f"models/{alias}", "displayName": alias})
    return _answer(fwd, json.dumps(data).encode())


async def get_model(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    name = request.match_info["target"]
    if ":" in name:  # a method (models/{m}:generateContent) is POSTed, never fetched
        raise ProxyError(f"Method GET is not allowed on {request.path}.", status=405)
    collection, model_id = model_resource(ctx.gemini_model(name))
    fwd = await _forward(request, [collection, model_id], b"")
    data = _json(fwd)
    if isinstance(data, dict) and name in ctx.aliases:
        data = {**data, "name": f"models/{name}", "displayName": name}
        return _answer(fwd, json.dumps(data).encode())
    return _answer(fwd)


async def passthrough(request: web.Request) -> web.Response:
    """Any other Gemini API path, untouched: files, cachedContents, operations, batches, agents,
    triggers... With client keys, each client reaches only the objects it created (object_owners.py),
    and a collection the proxy cannot scope is refused (collections.py)."""
    tail = request.match_info["tail"]
    segments = tail.split("/")
    if request.match_info["version"] == "v1" and collection_of(segments) not in (
            KNOWN | request.app[CONTEXT].passthrough_collections):
        raise web.HTTPNotFound()  # elsewhere /v1 belongs to the OpenAI routes
    return await _owned(request, segments, await request.read())


async def upload(request: web.Request) -> web.Response:
    """`/upload/{version}/files` (google-genai's resumable uploads). Google answers the start with the
    session's URL on its own host; the client is pointed back at the proxy instead, so the bytes come
    through it too (with the proxy's credentials and its checks), never straight to Google."""
    prefix = ("upload", request.match_info["version"])
    await object_owners.require_upload(request)
    answer = await _owned(request, request.match_info["tail"].split("/"), await request.read(), prefix)
    url = answer.headers.get("x-goog-upload-url")
    upstream = URL(_gemini(request.app[CONTEXT]).base_url)
    if url and URL(url).origin() == upstream.origin():
        session = URL(url)
        answer.headers["x-goog-upload-url"] = str(session.with_scheme(request.url.scheme).with_host(
            request.url.host or "127.0.0.1").with_port(request.url.port))
        if session.query.get("upload_id"):
            await object_owners.start_upload(request, session.query["upload_id"])
    return answer


def _json_body(request: web.Request, body: bytes) -> Any:
    """A JSON request body, to look for the objects it names (an upload's bytes are not looked into)."""
    if not body or not request.content_type.endswith("json"):
        return None
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


async def _owned(request: web.Request, segments: list[str], body: bytes, prefix: tuple[str, ...] = ()
                 ) -> web.Response:
    """Forward, keeping each client to its own objects: one it names (in the path or the body) must be
    its own; what a create answers with becomes its own; a list shows only its own."""
    collection = collection_of(segments)
    if collection in ("models", "tunedModels") and len(segments) > 1 and credential_like(segments[1].split(":")[0]):
        request.app[CONTEXT].gemini_model(segments[1].split(":")[0])  # refused, and a secret of the request
    if request.get(SCOPE) is None:
        return _answer(await _forward(request, segments, body, prefix))
    check_allowed(collection, request.app[CONTEXT].passthrough_collections)
    if collection not in OWNED | STATELESS:  # Google's own (models), or allowed unscoped by the operator
        return _answer(await _forward(request, segments, body, prefix))
    name = owned_name(segments)
    if name is not None:
        await object_owners.require(request, name)
    if request.method in ("POST", "PATCH", "PUT"):
        await object_owners.refuse_named(request, collection, _json_body(request, body))
    fwd = await _forward(request, segments, body, prefix)
    data = _json(fwd)
    if data is None or collection in STATELESS:
        return _answer(fwd)
    if collection == "triggers" and len(segments) > 2 and segments[2] == "executions":
        await object_owners.record_executions(request, data)
    if name is None and request.method == "GET":
        return _answer(fwd, json.dumps(await object_owners.own_items(request, collection, data)).encode())
    if request.method in ("POST", "PATCH") and name is None:
        await object_owners.record(request, collection, data)
        registered = data.get(collection) if isinstance(data, dict) else None  # files:register's files
        for item in registered if isinstance(registered, list) else []:
            await object_owners.record(request, collection, item)
    return _answer(fwd)


def wants_gemini_list(request: web.Request) -> bool:
    """`GET /v1/models` from a Gemini client (it sends its API key the Gemini way), not an OpenAI one."""
    return bool(request.headers.get("x-goog-api-key") or request.headers.get("x-goog-api-client")
                or "key" in request.query)


def add_routes(app: web.Application) -> None:
    """After the OpenAI routes: `/v1/...` paths they serve are matched first."""
    versions = "{version:v1|v1beta|v1alpha}"
    app.router.add_get(f"/{versions}/models", list_models)
    app.router.add_get(f"/{versions}/models/{{target}}", get_model)
    app.router.add_route("*", f"/{versions}/{{tail:.+}}", passthrough)
    app.router.add_route("*", f"/upload/{versions}/{{tail:.+}}", upload)
