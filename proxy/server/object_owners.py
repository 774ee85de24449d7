"""Objects that live at Google (files, cachedContents, batches, tunedModels, corpora, file search
stores...) belong to the client key that created them through the proxy.

With client keys, the proxy calls Google with one identity (the server's key) for every client, so
Google alone would let any client list, read, use or delete any other's objects. The proxy records
each object's creator (the name Google gives it, against the client's scope) in the session store —
shared by every instance — and answers another client, or one whose record is gone, with Gemini's
404: a list shows a client only its own objects. Without client keys there is one tenant (or each
client brings its own Google key), and nothing is checked.

A record lives as long as the store keeps entries (`--store-ttl`, renewed on each use through the
proxy): an object not touched through the proxy for longer can no longer be reached through it.
"""

import re
from typing import Any

from aiohttp import web

from proxy.errors import ProxyError
from proxy.server.auth import SCOPE
from proxy.server.context import CONTEXT, Context

# Collections whose objects are kept per client (the models collection is Google's, not anyone's).
OWNED = frozenset({"files", "cachedContents", "batches", "tunedModels", "corpora", "fileSearchStores",
                   "generatedFiles", "operations"})
# The store's session for the records: '/' cannot appear in a client's session name.
OWNERS = "objects/owners"
_NAME = re.compile("^(" + "|".join(sorted(OWNED)) + r")/([A-Za-z0-9_\-.]+)")
_FILE_URI = re.compile(r"^(?:https://generativelanguage\.googleapis\.com/v1[a-z0-9]*/)?(files/[A-Za-z0-9_\-.]+)$")


def owned_name(segments: list[str]) -> str | None:
    """`files/abc` for `files/abc`, `files/abc:download`, `tunedModels/x/operations/y`; None for a
    collection itself or another path."""
    if len(segments) < 2 or segments[0] not in OWNED:
        return None
    return f"{segments[0]}/{segments[1].split(':')[0]}"


def _not_found(name: str) -> ProxyError:
    return ProxyError(f"Requested entity was not found: {name}.", status=404, code="not_found")


async def _owner(ctx: Context, name: str) -> str | None:
    mark = await ctx.store.get_mark(OWNERS, "owner", name)
    return mark.get("scope") if isinstance(mark, dict) else None


async def require(request: web.Request, name: str) -> None:
    """The client's own object, or Gemini's 404 (another client's, or one the proxy has no record of)."""
    scope = request.get(SCOPE)
    if scope and await _owner(request.app[CONTEXT], name) != scope:
        raise _not_found(name)


async def record(request: web.Request, answer: Any) -> None:
    """The object a create answered with (its top-level `name`, or an upload's `file.name`) now
    belongs to this client; a name that already has an owner keeps it."""
    scope = request.get(SCOPE)
    if not scope or not isinstance(answer, dict):
        return
    file = answer.get("file")
    for candidate in (answer.get("name"), file.get("name") if isinstance(file, dict) else None):
        m = _NAME.match(candidate) if isinstance(candidate, str) else None
        if m:
            name = f"{m.group(1)}/{m.group(2)}"
            ctx: Context = request.app[CONTEXT]
            owner = await _owner(ctx, name)
            if owner is None:
                await ctx.store.put_mark(OWNERS, "owner", name, {"scope": scope})
            elif owner != scope:
                raise _not_found(name)


async def own_items(request: web.Request, collection: str, answer: Any) -> Any:
    """A list answer with only this client's objects (pages keep Google's nextPageToken)."""
    scope = request.get(SCOPE)
    items = answer.get(collection) if scope and isinstance(answer, dict) else None
    if not isinstance(items, list):
        return answer
    ctx: Context = request.app[CONTEXT]
    kept = []
    for item in items:
        name = item.get("name") if isinstance(item, dict) else None
        m = _NAME.match(name) if isinstance(name, str) else None
        if m and await _owner(ctx, f"{m.group(1)}/{m.group(2)}") == scope:
            kept.append(item)
    return {**answer, collection: kept}


async def refuse_foreign(request: web.Request, body: dict[str, Any]) -> None:
    """A generate request that names a cached content or a Gemini file: the client's own, or a 404
    (before Gemini is asked: it would use the server's identity, and another client's object)."""
    if not request.get(SCOPE):
        return
    cached = body.get("cachedContent", body.get("cached_content"))
    if isinstance(cached, str):
        m = _NAME.match(cached)
        await require(request, f"{m.group(1)}/{m.group(2)}" if m else cached)
    for content in body.get("contents") or []:
        for part in (content.get("parts") or []) if isinstance(content, dict) else []:
            data = part.get("fileData", part.get("file_data")) if isinstance(part, dict) else None
            uri = data.get("fileUri", data.get("file_uri")) if isinstance(data, dict) else None
            m = _FILE_URI.match(uri) if isinstance(uri, str) else None
            if m:
                await require(request, m.group(1))


# -- resumable uploads: Google's session URL is the credential for the bytes -------------------------

async def start_upload(request: web.Request, upload_id: str) -> None:
    """An upload session started by this client: its bytes may come without a key (google-genai sends
    none to the session URL, as Google does not ask for one), and only to this client."""
    scope = request.get(SCOPE)
    if scope:
        await request.app[CONTEXT].store.put_mark(OWNERS, "upload", upload_id, {"scope": scope})


async def upload_scope(request: web.Request) -> str | None:
    """The scope of the client that started the upload session this request names, if any."""
    upload_id = request.query.get("upload_id")
    if not upload_id or not request.path.startswith("/upload/"):
        return None
    mark = await request.app[CONTEXT].store.get_mark(OWNERS, "upload", upload_id)
    return mark.get("scope") if isinstance(mark, dict) else None


async def require_upload(request: web.Request) -> None:
    """An upload session's bytes and finalize: from the client that started it, or a 404."""
    upload_id = request.query.get("upload_id")
    if upload_id and request.get(SCOPE) and await upload_scope(request) != request.get(SCOPE):
        raise _not_found(f"upload {upload_id[:16]}")
