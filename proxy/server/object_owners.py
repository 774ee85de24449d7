"""Objects that live at Google (files, cachedContents, batches, tunedModels, corpora, file search
stores, agents, environments, triggers, webhooks, credentials, voices...: collections.OWNED) belong
to the client key that created them through the proxy.

With client keys, the proxy calls Google with one identity (the server's key) for every client, so
Google alone would let any client list, read, use or delete any other's objects. The proxy records
each object's creator (the name Google gives it, or `collection/id` for the collections that name
objects by id, against the client's scope) in the session store — shared by every instance — and
answers another client, or one whose record is gone, with Gemini's 404: a list shows a client only
its own objects, and a body that names another's object is refused before Google is asked. Without
client keys there is one tenant (or each client brings its own Google key), and nothing is checked.

A record lives as long as the store keeps entries (`--store-ttl`, renewed on each use through the
proxy): an object not touched through the proxy for longer can no longer be reached through it.
"""

from typing import Any

from aiohttp import web

from proxy.errors import ProxyError
from proxy.server.auth import SCOPE
from proxy.server.collections import BUILTIN_AGENT, OWNED, item_name, names_in, references
from proxy.server.context import CONTEXT, Context

# The store's session for the records: '/' cannot appear in a client's session name.
OWNERS = "objects/owners"


def owned_name(segments: list[str]) -> str | None:
    """`files/abc` for `files/abc`, `files/abc:download`, `tunedModels/x/operations/y`,
    `triggers/t/executions`; None for a collection itself or another path."""
    if len(segments) < 2 or segments[0] not in OWNED or not segments[1]:
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


async def _claim(request: web.Request, name: str) -> None:
    """`name` now belongs to this client; a name that already has an owner keeps it."""
    ctx: Context = request.app[CONTEXT]
    owner = await _owner(ctx, name)
    if owner is None:
        await ctx.store.put_mark(OWNERS, "owner", name, {"scope": request[SCOPE]})
    elif owner != request[SCOPE]:
        raise _not_found(name)


async def record(request: web.Request, collection: str, answer: Any) -> None:
    """The object a create answered with (its `name` or `id`, or an upload's `file.name`) now belongs
    to this client."""
    if not request.get(SCOPE) or not isinstance(answer, dict):
        return
    file = answer.get("file")
    for candidate in (item_name(collection, answer), item_name("files", file) if isinstance(file, dict) else None):
        if candidate:
            await _claim(request, candidate)


async def record_executions(request: web.Request, answer: Any) -> None:
    """A trigger's executions (a run's answer, or a list) ran interactions at Google: they are the
    trigger owner's, so that only it may continue one (a trigger's previous_interaction_id)."""
    if not request.get(SCOPE) or not isinstance(answer, dict):
        return
    runs = answer.get("trigger_executions", answer.get("triggerExecutions"))
    for run in runs if isinstance(runs, list) else [answer]:
        interaction = run.get("interaction_id", run.get("interactionId")) if isinstance(run, dict) else None
        if isinstance(interaction, str) and interaction:
            await _claim(request, f"interactions/{interaction}")


async def own_items(request: web.Request, collection: str, answer: Any) -> Any:
    """A list answer with only this client's objects (pages keep Google's nextPageToken)."""
    scope = request.get(SCOPE)
    items = answer.get(collection) if scope and isinstance(answer, dict) else None
    if not isinstance(items, list):
        return answer
    ctx: Context = request.app[CONTEXT]
    kept = []
    for item in items:
        name = item_name(collection, item)
        if name and await _owner(ctx, name) == scope:
            kept.append(item)
    return {**answer, collection: kept}


async def refuse_named(request: web.Request, collection: str, body: Any) -> None:
    """A create, update or stateless body that names objects (a file, a cachedContent, a trigger's
    environment, an agent's base agent...): each must be the client's own, or Gemini's 404 before
    Google is asked (it would act with the server's identity on another client's object). Google's
    own agents may be named by anyone."""
    if not request.get(SCOPE):
        return
    for name in names_in(body):
        await require(request, name)
    ctx: Context = request.app[CONTEXT]
    for target, name in references(collection, body):
        if target == "agents" and BUILTIN_AGENT.match(name.removeprefix("agents/")) \
                and await _owner(ctx, name) is None:
            continue
        await require(request, name)


async def refuse_foreign(request: web.Request, body: dict[str, Any]) -> None:
    """A generate request that names a cached content or a Gemini file: the client's own, or a 404
    (before Gemini is asked: it would use the server's identity, and another client's object)."""
    if not request.get(SCOPE):
        return
    cached = body.get("cachedContent", body.get("cached_content"))
    if isinstance(cached, str):
        await require(request, names_in(cached)[0] if names_in(cached) else cached)
    for content in body.get("contents") or []:
        for part in (content.get("parts") or []) if isinstance(content, dict) else []:
            data = part.get("fileData", part.get("file_data")) if isinstance(part, dict) else None
            uri = data.get("fileUri", data.get("file_uri")) if isinstance(data, dict) else None
            for name in names_in(uri) if isinstance(uri, str) else []:
                await require(request, name)


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
