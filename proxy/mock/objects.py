"""The mock's objects that live at Google: Files (resumable uploads as google-genai makes them) and
cachedContents, strict like the real API for the shapes the proxy passes through.

An upload starts with `POST /upload/{v}/files` (`X-Goog-Upload-Command: start`, the file's metadata
as `{"file": {...}}`); Google answers with the session's URL in `x-goog-upload-url` and
`x-goog-upload-status: active`. The bytes follow to that URL (`upload, finalize`), answered with
`x-goog-upload-status: final` and `{"file": {...}}`. A missing file is Google's 403; a missing cache
its 404.

A cache holds its model, contents, systemInstruction, tools and toolConfig; it is refused below the
model's minimum (CACHE_MINIMUM, Google's 400 text) and forgotten at its expireTime. A generate request
naming it (use_cache) gets the cache's contents as its prefix and its system prompt and tools, and
may not set its own (Google's 400); a cache it cannot reach is a 403.
"""

import base64
import datetime
import fnmatch
import hashlib
import json
import re
import secrets
from collections.abc import Callable
from typing import Any

from aiohttp import web

from proxy.mock.validate import GeminiRejection, get

FILES = web.AppKey("files", dict)
UPLOADS = web.AppKey("uploads", dict)
CACHES = web.AppKey("caches", dict)
CACHE_BODIES = web.AppKey("cache_bodies", dict)  # what each cache holds (never shown: Google's GET leaves it out)
GOOGLE = "https://generativelanguage.googleapis.com"
Problem = Callable[[web.Request], GeminiRejection | None]
Error = Callable[[GeminiRejection], web.Response]


def _now(later: float = 0.0) -> str:
    moment = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=later)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


# Google's minimum tokens of an explicit cache, by model (ai.google.dev/gemini-api/docs/caching,
# 2026-09: 4,096 on Gemini 3.x, 2,048 on 2.5); None: the model has no explicit caching (Gemini 4
# Argon caches implicitly only). The mock's own table, not the proxy's: a test of the proxy's gate
# must not agree with itself.
CACHE_MINIMUM = (("gemini-4*", None), ("gemini-3*", 4096), ("gemini-2.5*", 2048), ("gemini-2.0*", 2048),
                 ("*", 4096))
CACHED = ("systemInstruction", "tools", "toolConfig")
# Google's words for a generate request that names a cache and sets what the cache holds (vercel/ai #3333).
CACHE_CONFLICT = ("CachedContent can not be used with GenerateContent request setting system_instruction, tools or "
                  "tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request.")
DURATION = re.compile(r"^(\d+(?:\.\d+)?)s$")


def cache_tokens(body: dict[str, Any]) -> int:
    """What the mock counts for a cache: its contents, system prompt, tools and tool config (a token
    per four characters of their JSON, the mock's usual count)."""
    held = {k: body[k] for k in ("contents", *CACHED) if body.get(k) is not None}
    return max(1, len(json.dumps(held)) // 4)


def _minimum(model: str) -> int | None:
    name = model.removeprefix("models/")
    return next(m for pattern, m in CACHE_MINIMUM if fnmatch.fnmatchcase(name, pattern))


def _id() -> str:
    return secrets.token_hex(6)


def install(app: web.Application, key_problem: Problem, error: Error, remember: Callable[..., None],
            seed: dict[str, dict[str, Any]]) -> None:
    app[FILES], app[UPLOADS], app[CACHES], app[CACHE_BODIES] = dict(seed), {}, {}, {}
    versions = "{version:v1|v1beta|v1alpha}"

    def guarded(handler: Callable[..., Any]) -> Callable[[web.Request], Any]:
        async def run(request: web.Request) -> web.StreamResponse:
            problem = key_problem(request)
            if problem:
                return error(problem)
            remember(request, None, request.path.split("/")[-2 if request.match_info.get("name") else -1], None)
            try:
                return await handler(request)
            except GeminiRejection as e:
                return error(e)
        return run

    app.router.add_post(f"/upload/{versions}/files", guarded(upload))
    app.router.add_post(f"/{versions}/cachedContents", guarded(create_cache))
    app.router.add_patch(f"/{versions}/cachedContents/{{name}}", guarded(patch_cache))
    for routes in (FILE_ROUTES, CACHE_ROUTES):
        app.router.add_get(f"/{versions}/{routes.collection}", guarded(routes.list))
        app.router.add_get(f"/{versions}/{routes.collection}/{{name}}", guarded(routes.get))
        app.router.add_delete(f"/{versions}/{routes.collection}/{{name}}", guarded(routes.delete))


async def upload(request: web.Request) -> web.Response:
    command = request.headers.get("x-goog-upload-command", "")
    if request.headers.get("x-goog-upload-protocol") == "resumable" and command == "start":
        body = await request.json()
        meta = body.get("file") if isinstance(body, dict) else None
        size = request.headers.get("x-goog-upload-header-content-length")
        if not isinstance(meta, dict) or not (size or "").isdigit():
            raise GeminiRejection(400, "Invalid upload start: expected {\"file\": {...}} and "
                                       "X-Goog-Upload-Header-Content-Length.", "INVALID_ARGUMENT")
        upload_id = secrets.token_urlsafe(12)
        request.app[UPLOADS][upload_id] = {"meta": meta, "size": int(size), "data": b"",
                                           "mime": request.headers.get("x-goog-upload-header-content-type")}
        # Google names itself; so does the mock (the proxy in between must point the client back at it).
        origin = f"{request.scheme}://{request.host}"
        url = f"{origin}/upload/{request.match_info['version']}/files?upload_id={upload_id}&upload_protocol=resumable"
        return web.Response(status=200, headers={"x-goog-upload-url": url, "x-goog-upload-status": "active",
                                                 "x-goog-upload-chunk-granularity": "8388608"})
    session = request.app[UPLOADS].get(request.query.get("upload_id", ""))
    if session is None or not command.startswith("upload"):
        raise GeminiRejection(400, "Unknown or missing upload session.", "INVALID_ARGUMENT")
    if int(request.headers.get("x-goog-upload-offset", "-1")) != len(session["data"]):
        raise GeminiRejection(400, "The upload offset does not match what was received.", "INVALID_ARGUMENT")
    session["data"] += await request.read()
    if "finalize" not in command:
        return web.Response(status=200, headers={"x-goog-upload-status": "active"})
    del request.app[UPLOADS][request.query["upload_id"]]
    name = f"files/{_id()}"
    now = _now()
    meta = session["meta"]  # proto JSON: either spelling
    file = {"name": name, "displayName": get(meta, "displayName") or name,
            "mimeType": get(meta, "mimeType") or session["mime"] or "application/octet-stream",
            "sizeBytes": str(len(session["data"])), "createTime": now, "updateTime": now, "expirationTime": now,
            "sha256Hash": base64.b64encode(hashlib.sha256(session["data"]).hexdigest().encode()).decode(),
            "uri": f"{GOOGLE}/v1beta/{name}", "state": "ACTIVE", "source": "UPLOADED"}
    request.app[FILES][name] = file
    return web.json_response({"file": file}, headers={"x-goog-upload-status": "final"})


def _missing_file(name: str) -> GeminiRejection:
    return GeminiRejection(403, f"You do not have permission to access the File {name.removeprefix('files/')} "
                                "or it may not exist.", "PERMISSION_DENIED")


def _missing_cache(name: str) -> GeminiRejection:
    return GeminiRejection(404, f"CachedContent not found (or permission denied): {name}", "NOT_FOUND")


class _Collection:
    """List, get and delete for one collection, with Google's answer for a name it does not hold."""

    def __init__(self, key: web.AppKey[dict[str, Any]], collection: str,
                 missing: Callable[[str], GeminiRejection]) -> None:
        self.key, self.collection, self.missing = key, collection, missing

    def found(self, request: web.Request) -> dict[str, Any]:
        name = f"{self.collection}/{request.match_info['name']}"
        if name not in request.app[self.key]:
            raise self.missing(name)
        return request.app[self.key][name]

    async def list(self, request: web.Request) -> web.Response:
        items = list(request.app[self.key].values())
        return web.json_response({self.collection: items} if items else {})

    async def get(self, request: web.Request) -> web.Response:
        return web.json_response(self.found(request))

    async def delete(self, request: web.Request) -> web.Response:
        del request.app[self.key][self.found(request)["name"]]
        return web.json_response({})


FILE_ROUTES = _Collection(FILES, "files", _missing_file)
CACHE_ROUTES = _Collection(CACHES, "cachedContents", _missing_cache)


def _ttl(body: dict[str, Any]) -> float:
    """Seconds the cache lives: its `ttl` ("300s"), Google's default of an hour without one."""
    ttl = body.get("ttl")
    if ttl is None:
        return 3600.0
    found = DURATION.match(ttl) if isinstance(ttl, str) else None
    if found is None:
        raise GeminiRejection(400, f"Invalid value at 'cached_content.ttl' (type.googleapis.com/google.protobuf."
                                   f"Duration), {json.dumps(ttl)}", "INVALID_ARGUMENT")
    return float(found.group(1))


async def create_cache(request: web.Request) -> web.Response:
    body = await request.json()
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        raise GeminiRejection(400, "cachedContent.model is required.", "INVALID_ARGUMENT")
    minimum, tokens = _minimum(body["model"]), cache_tokens(body)
    if minimum is None:  # (the mock's words: Google's for this case are not on record)
        raise GeminiRejection(400, f"Explicit caching is not supported for {body['model']}.", "INVALID_ARGUMENT")
    if tokens < minimum:  # Google's words (zyddnys/manga-image-translator #929)
        raise GeminiRejection(400, f"Cached content is too small. total_token_count={tokens}, "
                                   f"min_total_token_count={minimum}", "INVALID_ARGUMENT")
    name, now = f"cachedContents/{_id()}", _now()
    cache = {"name": name, "model": body["model"], "createTime": now, "updateTime": now,
             "expireTime": _now(_ttl(body)), "displayName": get(body, "displayName") or "",
             "usageMetadata": {"totalTokenCount": tokens}}
    request.app[CACHES][name] = cache
    request.app[CACHE_BODIES][name] = {k: body[k] for k in ("contents", *CACHED) if body.get(k) is not None}
    return web.json_response(cache)


def _expired(cache: dict[str, Any]) -> bool:
    when = datetime.datetime.fromisoformat(cache["expireTime"].replace("Z", "+00:00"))
    return when <= datetime.datetime.now(datetime.UTC)


def use_cache(app: web.Application, body: dict[str, Any], model: str) -> tuple[dict[str, Any], int]:
    """A generate request naming a cache -> the request the model answers (the cache's contents first,
    its system prompt, tools and tool config) and the tokens the cache holds; Google's refusals
    otherwise. The 403 for a cache that is gone or another project's: hermes-agent #29818 reports
    403 and 404 (which one Google sends for which case is not on record: the mock picks 403)."""
    name = body["cachedContent"]
    cache = app[CACHES].get(name)
    if cache is not None and _expired(cache):
        del app[CACHES][name]
        cache = None
    if cache is None:
        raise GeminiRejection(403, f"CachedContent not found (or permission denied): {name}", "PERMISSION_DENIED")
    if any(body.get(k) is not None for k in CACHED):
        raise GeminiRejection(400, CACHE_CONFLICT, "INVALID_ARGUMENT")
    if cache["model"].removeprefix("models/") != model:  # (the mock's words)
        raise GeminiRejection(400, f"Model used by GenerateContent request (models/{model}) and CachedContent "
                                   f"({cache['model']}) has to be the same.", "INVALID_ARGUMENT")
    held = app[CACHE_BODIES][name]
    merged = {**{k: v for k, v in body.items() if k != "cachedContent"}, **{k: held[k] for k in CACHED if k in held},
              "contents": (held.get("contents") or []) + (body.get("contents") or [])}
    return merged, cache["usageMetadata"]["totalTokenCount"]


async def patch_cache(request: web.Request) -> web.Response:
    cache = CACHE_ROUTES.found(request)
    cache["updateTime"] = _now()
    return web.json_response(cache)
