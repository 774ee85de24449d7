"""Build the front-end application; the CLI and the mitmproxy addon run it."""

import asyncio
import re
from collections.abc import Callable
from typing import Any

from aiohttp import web

from proxy import ids, metrics
from proxy.anthropic.protocol import PROTOCOL as ANTHROPIC
from proxy.chat.protocol import PROTOCOL as CHAT
from proxy.errors import ProxyError
from proxy.front.models_route import list_models
from proxy.gemini.protocol import PROTOCOL as GEMINI
from proxy.inspect import quota_routes
from proxy.inspect.routes import add_routes as add_inspect_routes
from proxy.interactions.protocol import PROTOCOL as INTERACTIONS
from proxy.journal import access_log, exchange
from proxy.journal.recorder import UNRECORDED, Recorder
from proxy.logs import REQUEST_ID, SESSION_ID
from proxy.model_rules import ModelRules
from proxy.responses.protocol import PROTOCOL as RESPONSES
from proxy.server import background, object_owners, recording, usage_route
from proxy.server.auth import COOKIE_SECRET, ClientKeys, admit, authenticate, cookie_secret, presented_key
from proxy.server.context import CONTEXT, RATE_HEADERS, Context
from proxy.server.errors import answered
from proxy.server.fair_share import FAIR, FairShare, client_of
from proxy.server.guard import RequestGuard
from proxy.server.protocol import PROTOCOLS, ClientProtocol, protocol_of
from proxy.server.sessions_routes import add_routes as add_session_routes
from proxy.server.site import FINAL_PHASE, ServerLimits
from proxy.server.workers import shutdown_workers
from proxy.signatures.carrier_keys import CarrierKeys
from proxy.store.base import SessionStore
from proxy.upstream.base import Upstream
from proxy.upstream.fallback import SERVED, SERVED_HEADER, FallbackUpstream
from proxy.upstream.forced_choice import ForcedChoiceUpstream, Policy
from proxy.upstream.gemini.client import CLIENT_HEADERS, DEFAULT_TOTAL_TIMEOUT, GeminiUpstream, client_headers
from proxy.upstream.http import DEFAULT_MAX_RETRIES
from proxy.upstream.observed import ObservedUpstream
from proxy.upstream.routes import RoutedUpstream
from proxy.upstream.text_calls import TextCallsUpstream
from proxy.usage.ledger import Ledger

# Request bodies above this are refused with a 413 in the caller's protocol. Agent histories with
# inline images reach several MB; 32 MiB stays well above that and below Gemini's own ~20 MB inline cap x2.
MAX_BODY_BYTES = 32 * 1024 * 1024
REQUEST_ID_OK = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")  # a caller's x-request-id, kept when it is this tame
# The client protocols, each one record (server/protocol.py). Their order is the one order there is:
# routes are added in it, Gemini's catch-all last, and a path belongs to the first that owns it
# (Interactions' paths lie inside Gemini's).
PROTOCOLS_IN_ORDER: tuple[ClientProtocol, ...] = (RESPONSES, CHAT, ANTHROPIC, INTERACTIONS, GEMINI)


GUARD = web.AppKey("guard", RequestGuard)


@web.middleware
async def front_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every request's layers, outermost first, in one frame (six middlewares were six coroutines and
    partials on every request's path): its ids, metrics and journal exchange, then (`_admitted`)
    the error rendering, the guard, authentication, the client's fair share and a Gemini-native
    caller's identity. Observing from outside the error rendering, it sees every answer as the
    client got it, errors in their protocol."""
    route = request.match_info.route.resource
    record = metrics.RequestRecord(route.canonical if route is not None else "other")
    rid = request.headers.get("x-request-id", "")
    rid = rid if REQUEST_ID_OK.match(rid) else ids.request_id()
    session = request.headers.get("x-gtp-session", "")[:128] or None
    recorder = request.app[CONTEXT].recorder
    recorded = not request.path.startswith(UNRECORDED)  # in the journal and the access log
    ex = recording.start(recorder, request, rid, session) if recorded else None
    tokens = (metrics.CURRENT.set(record), REQUEST_ID.set(rid), SESSION_ID.set(session), exchange.CURRENT.set(ex))
    status, resp = 500, None
    try:
        resp = await answered(request, _admitted, handler)
        status = 500 if record.failed else resp.status
        resp.headers["x-request-id"] = rid
        protocol = protocol_of(request)
        if protocol is not None and protocol.request_id_header:
            resp.headers[protocol.request_id_header] = rid
        return resp
    except web.HTTPException as e:
        status = e.status
        raise
    finally:
        if route is not None and record.route != "/metrics":
            metrics.finish(record, status)
        if recorded and access_log.enabled():
            access_log.write(access_log.access_fields(request.method, request.path, status, record, rid, session))
        exchange.CURRENT.reset(tokens[3])
        metrics.CURRENT.reset(tokens[0])
        REQUEST_ID.reset(tokens[1])
        SESSION_ID.reset(tokens[2])
        if ex is not None and recorder is not None:
            # The status as the exchange records it: a stream that failed after its 200 keeps its 200
            # (its error says what happened).
            recording.end(recorder, ex, request, resp, resp.status if resp is not None else status, record)


async def _admitted(request: web.Request, handler: Any) -> web.StreamResponse:
    """Inside the error rendering (errors.answered), so each refusal is in the caller's protocol: the
    Host, Origin and Content-Type checks (guard.py); the client key (the bytes of a resumable upload
    come without one: the session a client started admits them, object_owners.py); every POST (what
    reaches Gemini) holding one of its client's places while it runs, a stream to its end; and a
    Gemini-native caller's User-Agent / x-goog-api-client going upstream with the proxy's token."""
    refusal = request.app[GUARD].refusal(request.method, request.path, request.headers, request.body_exists)
    if refusal is not None:
        raise refusal
    ctx = request.app[CONTEXT]
    if ctx.keys and presented_key(request) is None and "upload_id" in request.query and (
            scope := await object_owners.upload_scope(request)) is not None:
        admit(request, scope)
    else:
        authenticate(request, ctx.keys, request.app[COOKIE_SECRET])
        record = metrics.CURRENT.get()
        if record is not None:
            record.client = client_of(request)  # whose usage its answers are (usage/ledger.py)
    protocol = protocol_of(request)
    identity = CLIENT_HEADERS.set(client_headers(request.headers)) if (
        protocol is not None and protocol.forwards_client_identity) else None
    try:
        if request.method != "POST":
            return await handler(request)
        fair, who = request.app[FAIR], client_of(request)
        fair.hold(who)
        try:
            return await handler(request)
        finally:
            fair.release(who)
    finally:
        if identity is not None:
            CLIENT_HEADERS.reset(identity)


async def metrics_route(request: web.Request) -> web.Response:
    await request.app[CONTEXT].store_gauges()
    return web.Response(body=metrics.exposition(), content_type="text/plain", charset="utf-8",
                        headers={"cache-control": "no-store"})


async def healthz(request: web.Request) -> web.Response:
    """The process serves (liveness). /readyz says whether it can also keep sessions."""
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    """Readiness for a load balancer: 200 while the session store answers and a Gemini connection is
    to be had; 503 from SIGTERM on (draining), while the store does not answer, or while every pooled
    upstream connection is in use or requests wait for one (saturated: send new clients elsewhere).
    The process keeps serving what it can, and /healthz stays 200."""
    ctx = request.app[CONTEXT]
    if ctx.in_flight.draining:  # SIGTERM came (cli._until_stopped): the balancer is to send no more
        return web.json_response({"status": "draining", "reason": "the proxy is shutting down; it serves what "
                                  "reaches it until the drain ends"}, status=503, headers={"Retry-After": "1"})
    check = getattr(ctx.store, "check", None)
    try:
        if check is not None:
            await check()
    except (ProxyError, ValueError) as e:
        return web.json_response({"status": "unavailable", "store": getattr(e, "message", str(e))}, status=503,
                                 headers={"Retry-After": "1"})
    if ctx.rest is not None:
        in_use, size, waiting = ctx.rest.pool_state()
        pool = {"in_use": in_use, "size": size, "waiting": waiting}
        if waiting or (size and in_use >= size):
            reason = (f"{in_use} of {size} upstream connections in use, {waiting} request(s) waiting for one")
            return web.json_response({"status": "saturated", "store": "ok", "upstream_connections": pool,
                                      "reason": reason}, status=503, headers={"Retry-After": "1"})
        return web.json_response({"status": "ready", "store": "ok", "upstream_connections": pool})
    return web.json_response({"status": "ready", "store": "ok"})


def drain(app: web.Application) -> None:
    """SIGTERM: /readyz answers 503 from now on, and every answer closes its connection (so a client
    or balancer keeping it alive reconnects, elsewhere); requests are still served until the listener
    closes."""
    app[CONTEXT].in_flight.draining = True


async def _close_while_draining(request: web.Request, response: web.StreamResponse) -> None:
    if request.app[CONTEXT].in_flight.draining and not isinstance(response, web.WebSocketResponse):
        response.force_close()  # the connection ends after this answer
        response.headers["Connection"] = "close"  # and says so: aiohttp wrote its own before this hook


def _explicit_cache(upstream: Upstream) -> Callable[[str], GeminiUpstream | None]:
    """The upstream serving a model when it is Gemini's Developer API itself (its subclasses, Vertex
    and the Interactions API, keep caches elsewhere or only implicitly)."""
    def serving(model: str) -> GeminiUpstream | None:
        chosen = upstream.pick(model) if isinstance(upstream, RoutedUpstream) else upstream
        return chosen if type(chosen) is GeminiUpstream else None
    return serving


def make_app(store: SessionStore, upstream: Upstream, max_body: int = MAX_BODY_BYTES,
             aliases: dict[str, str] | None = None, schema_modes: list[tuple[str, str]] | None = None,
             fill_missing: bool = False, forced_choice: Policy = "retry",
             keys: ClientKeys | None = None, carrier: CarrierKeys | None = None,
             limits: ServerLimits | None = None, rules: ModelRules | None = None,
             recorder: Recorder | None = None, guard: RequestGuard | None = None,
             passthrough_collections: frozenset[str] = frozenset(), usage: Ledger | None = None) -> web.Application:
    """`guard`: who may reach it from a browser (guard.py); by default what a loopback bind allows."""
    app = web.Application(middlewares=[front_middleware], client_max_size=max_body)
    app[GUARD] = guard or RequestGuard()
    gemini = upstream.default if isinstance(upstream, RoutedUpstream) else upstream
    rest = gemini if isinstance(gemini, GeminiUpstream) else None
    rules = rules or ModelRules()
    explicit_cache = _explicit_cache(upstream)
    usage = usage or Ledger()
    upstream = ObservedUpstream(ForcedChoiceUpstream(TextCallsUpstream(upstream, rules.text_calls), forced_choice),
                                usage)
    if rules.fallback:  # outside the observer: each model tried is a call of its own in the journal
        policy = getattr(gemini, "retry", None)
        upstream = FallbackUpstream(upstream, rules.fallback,
                                    policy.max_retries if policy is not None else DEFAULT_MAX_RETRIES,
                                    getattr(gemini, "total_timeout", DEFAULT_TOTAL_TIMEOUT))
    app[CONTEXT] = Context(store=store, upstream=upstream, max_body=max_body, aliases=dict(aliases or {}),
                           schema_modes=list(schema_modes or []), fill_missing=fill_missing,
                           keys=keys or ClientKeys(()), carrier=carrier or CarrierKeys.ephemeral(),
                           limits=limits or ServerLimits(), rules=rules, rest=rest, recorder=recorder,
                           passthrough_collections=passthrough_collections, explicit_cache=explicit_cache,
                           usage=usage)
    app[COOKIE_SECRET] = cookie_secret(app[CONTEXT].carrier)
    ctx_limits = app[CONTEXT].limits
    app[FAIR] = FairShare(ctx_limits.max_in_flight_per_key, ctx_limits.max_background_per_key)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_route)
    app.router.add_get("/v1/models", list_models)
    add_session_routes(app)
    usage_route.add_routes(app)
    add_inspect_routes(app)
    quota_routes.add_routes(app)
    app[PROTOCOLS] = PROTOCOLS_IN_ORDER
    for protocol in PROTOCOLS_IN_ORDER:
        protocol.add_routes(app)

    async def close_upstream(_: web.Application) -> None:
        await upstream.close()
        await usage.close()
        shutdown_workers()
        if recorder is not None:
            recorder.close()

    async def end_requests(_: web.Application) -> None:
        """Requests and background runs get the shutdown time but its final phase to finish, then
        end in their protocol (a run: stored failed, background.stop_runs)."""
        ctx = app[CONTEXT]
        grace = max(0.0, ctx.limits.shutdown_timeout - FINAL_PHASE)
        runs = [run for p in PROTOCOLS_IN_ORDER if p.tasks is not None for run in app[p.tasks].values()]
        await asyncio.gather(ctx.in_flight.stop(grace=grace), background.stop_runs(runs, grace, FINAL_PHASE))

    async def start_recorder(_: web.Application) -> None:
        if recorder is not None:
            recorder.start()

    async def served_model(_: web.Request, response: web.StreamResponse) -> None:
        """Which model answered, on a model with a fallback chain (its stream's header: after the choice)."""
        served = SERVED.get()
        if served is not None:
            response.headers[SERVED_HEADER] = served.model

    async def rate_limit_headers(request: web.Request, response: web.StreamResponse) -> None:
        """An admitted turn's answer says where its client key stands (Context.admit)."""
        for name, value in request.get(RATE_HEADERS, {}).items():
            response.headers[name] = value

    app.on_response_prepare.append(served_model)
    app.on_response_prepare.append(rate_limit_headers)
    app.on_startup.append(start_recorder)
    app.on_response_prepare.append(_close_while_draining)
    app.on_shutdown.append(end_requests)
    app.on_cleanup.append(close_upstream)
    return app
