"""The mock's objects that live at Google: Files (resumable uploads as google-genai makes them) and
cachedContents, strict like the real API for the shapes the proxy passes through.

An upload starts with `POST /upload/{v}/files` (`X-Goog-Upload-Command: start`, the file's metadata
as `{"file": {...}}`); Google answers with the session's URL in `x-goog-upload-url` and
`x-goog-upload-status: active`. The bytes follow to that URL (`upload, finalize`), answered with
`x-goog-upload-status: final` and `{"file": {...}}`. A missing file is Google's 403; a missing cache
its 404.
"""

import base64
import datetime
import hashlib
import secrets
from collections.abc import Callable
from typing import Any

from aiohttp import web

from proxy.mock.validate import GeminiRejection, get

FILES = web.AppKey("files", dict)
UPLOADS = web.AppKey("uploads", dict)
CACHES = web.AppKey("caches", dict)
GOOGLE = "https://generativelanguage.googleapis.com"
Problem = Callable[[web.Request], GeminiRejection | None]
Error = Callable[[GeminiRejection], web.Response]


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _id() -> str:
    return secrets.token_hex(6)


def install(app: web.Application, key_problem: Problem, error: Error, remember: Callable[..., None],
            seed: dict[str, dict[str, Any]]) -> None:
    app[FILES], app[UPLOADS], app[CACHES] = dict(seed), {}, {}
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


async def create_cache(request: web.Request) -> web.Response:
    body = await request.json()
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        raise GeminiRejection(400, "cachedContent.model is required.", "INVALID_ARGUMENT")
    name, now = f"cachedContents/{_id()}", _now()
    cache = {"name": name, "model": body["model"], "createTime": now, "updateTime": now, "expireTime": now,
             "displayName": get(body, "displayName") or "",
             "usageMetadata": {"totalTokenCount": len(str(body.get("contents", ""))) // 4 + 1}}
    request.app[CACHES][name] = cache
    return web.json_response(cache)


async def patch_cache(request: web.Request) -> web.Response:
    cache = CACHE_ROUTES.found(request)
    cache["updateTime"] = _now()
    return web.json_response(cache)
