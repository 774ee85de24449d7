"""The inspector's routes. The page and its files come from the package (no CDN, nothing built);
the API answers with what the journal holds for the caller's scope only.

Signing in: with client keys configured, the sign-in form POSTs the key to `/inspect` (a form
body: never in a URL, a history entry or a log), which sets an HttpOnly, SameSite=Strict cookie
that stands for it and redirects to `/inspect`. The cookie is an HMAC of the key under a secret
derived from the sealing carrier key (auth.cookie_secret): useless anywhere but here, and void
after `gemini-tool-proxy carrier-key --rotate` and a restart, with no client key changed. A key in
the page's URL (`/inspect?key=`, the old sign-in) is not taken: the browser is sent to the form.
Without keys (loopback, one user) there is no sign-in."""

import asyncio
import contextlib
from importlib import resources

import orjson
from aiohttp import web

from proxy.errors import ProxyError
from proxy.inspect.changes import changes
from proxy.journal.ring import MAX_LIST
from proxy.server.auth import COOKIE_SECRET, INSPECT_COOKIE, SCOPE
from proxy.server.context import CONTEXT
from proxy.server.errors import read_json
from proxy.server.guard import is_json_type
from proxy.server.sessions_routes import get_session

STATIC = resources.files("proxy.inspect") / "static"
FILES = {"inspect.js": "text/javascript", "inspect.css": "text/css", "favicon.svg": "image/svg+xml"}
HEARTBEAT = 15.0  # seconds between comments on an idle live stream (proxies drop silent connections)
# same-origin, not no-referrer: a form posted under no-referrer says `Origin: null`, which the guard
# refuses (server/guard.py) where the browser sends no Sec-Fetch-Site; other sites still get no referrer.
PAGE_HEADERS = {"cache-control": "no-store", "x-content-type-options": "nosniff", "referrer-policy": "same-origin",
                "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                                           "connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                                           "form-action 'self'"}


def _journal(request: web.Request):
    journal = request.app[CONTEXT].recorder.journal if request.app[CONTEXT].recorder else None
    if journal is None:
        raise ProxyError("The journal is off (--journal off): there is nothing to inspect.", status=404,
                         code="journal_off")
    return journal


def _scope(request: web.Request) -> str:
    return request.get(SCOPE, "")


async def page(request: web.Request) -> web.StreamResponse:
    keys = request.app[CONTEXT].keys
    if "key" in request.query:
        raise web.HTTPSeeOther("/inspect")  # the key is not taken from a URL, nor left in the address bar
    signed_in = not keys or SCOPE in request
    return _page("index.html" if signed_in else "signin.html", 200 if signed_in else 401)


async def sign_in(request: web.Request) -> web.StreamResponse:
    """The sign-in form's POST (a form body, or JSON {"key": ...}): a cookie for a key that admits."""
    keys = request.app[CONTEXT].keys
    if not keys:
        raise web.HTTPSeeOther("/inspect")  # nothing to sign in to
    if is_json_type(request.headers.get("content-type", "")):
        sent = await read_json(request)
        key = sent.get("key") if isinstance(sent, dict) else None
    else:
        key = (await request.post()).get("key")
    cookie = keys.cookie_for(key, request.app[COOKIE_SECRET]) if isinstance(key, str) and key else None
    if cookie is None:
        return _page("signin.html", 401, "That key admits no one here.")
    resp = web.HTTPSeeOther("/inspect")
    resp.set_cookie(INSPECT_COOKIE, cookie, httponly=True, samesite="Strict", path="/inspect", secure=request.secure)
    raise resp


def _page(name: str, status: int, problem: str = "") -> web.Response:
    html = (STATIC / name).read_text().replace("<!--problem-->", f'<p class="problem">{problem}</p>' if problem
                                               else "")
    return web.Response(text=html, content_type="text/html", status=status, headers=PAGE_HEADERS)


async def static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in FILES:
        raise web.HTTPNotFound()
    return web.Response(text=(STATIC / name).read_text(), content_type=FILES[name], headers=PAGE_HEADERS)


async def exchanges(request: web.Request) -> web.Response:
    q = request.query
    try:
        limit = max(1, min(MAX_LIST, int(q.get("limit", "200"))))
    except ValueError:
        raise ProxyError(f"limit must be a whole number from 1 to {MAX_LIST}.", param="limit") from None
    rows = await _journal(request).list_all(_scope(request), limit, session=q.get("session"), model=q.get("model"),
                                  status=q.get("status"), protocol=q.get("protocol"), kind=q.get("kind"))
    return web.Response(body=orjson.dumps({"exchanges": rows}), content_type="application/json",
                        headers={"cache-control": "no-store"})


async def exchange(request: web.Request) -> web.Response:
    doc = await _journal(request).get_any(_scope(request), request.match_info["id"])
    if doc is None:
        raise ProxyError(f"No exchange {request.match_info['id'][:80]!r} in the journal (it may have been dropped "
                         "to keep the journal within --journal-max-bytes).", status=404, param="id")
    return web.Response(body=with_changes(doc), content_type="application/json", headers={"cache-control": "no-store"})


def with_changes(doc: bytes) -> bytes:
    """The document with what the proxy changed in it (changes.py: the page's marks), worked out now,
    when someone reads it, never on the request's path."""
    try:
        value = orjson.loads(doc)
        value["changes"] = changes(value)
        return orjson.dumps(value)
    except (orjson.JSONDecodeError, TypeError, AttributeError, KeyError):
        return doc


async def favicon(request: web.Request) -> web.Response:
    """The browser's own `/favicon.ico` (the pages name their icon, but a browser may still ask):
    no content, and never an exchange (recorder.UNRECORDED), nor a 401 under client keys."""
    return web.Response(status=204, headers={"cache-control": "max-age=86400"})


async def live(request: web.Request) -> web.StreamResponse:
    """New exchanges' summaries as server-sent events, as they finish."""
    journal = _journal(request)
    resp = web.StreamResponse(headers={"content-type": "text/event-stream", "cache-control": "no-store",
                                       "x-accel-buffering": "no"})
    await resp.prepare(request)
    with contextlib.suppress(ConnectionError, asyncio.CancelledError):
        async with journal.live(_scope(request)) as queue:
            await resp.write(b": live\n\n")
            while True:
                try:
                    summary = await asyncio.wait_for(queue.get(), HEARTBEAT)
                except TimeoutError:
                    await resp.write(b": idle\n\n")
                    continue
                await resp.write(b"event: exchange\ndata: " + orjson.dumps(summary) + b"\n\n")
    return resp


def add_routes(app: web.Application) -> None:
    app.router.add_get("/favicon.ico", favicon)
    app.router.add_get("/inspect", page)
    app.router.add_post("/inspect", sign_in)
    app.router.add_get("/inspect/static/{name}", static)
    app.router.add_get("/inspect/api/exchanges", exchanges)
    app.router.add_get("/inspect/api/exchanges/{id}", exchange)
    app.router.add_get("/inspect/api/live", live)
    app.router.add_get("/inspect/api/sessions/{session}", get_session)
