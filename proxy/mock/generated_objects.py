"""The mock's objects of Google's newer, generated APIs — agents, environments, triggers (and their
executions), webhooks, credentials, voices — and the stateless decisions method: the collections
google-genai 3.6 reaches through its generated `_gaos` client, on every API version (the SDK calls
them on `v1`).

Their shapes are the SDK's own types (`google/genai/_gaos/types/*`): snake_case JSON, objects named
by `id` (an agent's and a credential's chosen by the client, the others by Google), lists under the
collection's name with `next_page_token`. A create or update with a field the type does not have is
Google's usual 400 ("Unknown name"), a missing required field a 400, an unknown object a 404.
tests/test_collections_scoped.py checks every field list below against the installed SDK's types,
so the mock cannot fall behind a release. Which checks Google makes beyond the types (an unknown
environment named by a trigger is a 404 here) is not documented: those are the mock's guess.
"""

import datetime
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from proxy.mock.validate import GeminiRejection

GENERATED = web.AppKey("generated", dict)
Problem = Callable[[web.Request], GeminiRejection | None]
Error = Callable[[GeminiRejection], web.Response]


@dataclass(frozen=True)
class Kind:
    """One collection: the fields its create and update bodies may carry (google-genai's types)."""

    name: str
    create: frozenset[str]
    required: frozenset[str] = frozenset()
    update: frozenset[str] | None = None     # None: no PATCH
    client_id: bool = False                  # the client names the object (its `id` in the body)


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


KINDS = {k.name: k for k in (
    # types.agents.Agent (the create body is the agent itself)
    Kind("agents", _f("agent_config", "base_agent", "base_environment", "description", "id", "system_instruction",
                      "tools"), client_id=True),
    # types.environments.CreateEnvironmentRequest
    Kind("environments", _f("custom_config", "from_environment", "mode", "network", "sources",
                            "system_instruction")),
    # types.triggers.TriggerCreateParams / TriggerUpdate
    Kind("triggers", _f("interaction", "schedule", "time_zone", "display_name", "environment_id",
                        "execution_timeout_seconds", "max_consecutive_failures"),
         required=_f("interaction", "schedule", "time_zone"), update=_f("display_name", "status")),
    # types.webhooks.WebhookInput / WebhookUpdate
    Kind("webhooks", _f("subscribed_events", "uri", "name"), required=_f("subscribed_events", "uri"),
         update=_f("name", "state", "subscribed_events", "uri")),
    # types.credentials.CredentialCreateParams (a union of the three configs) / CredentialUpdate
    Kind("credentials", _f("id", "injection_location", "value", "trusted_domains", "type", "token", "header_name",
                           "prefix", "client_id", "client_secret", "refresh_token", "token_url", "scopes"),
         required=_f("id"), client_id=True,
         update=_f("injection_location", "trusted_domains", "type", "value", "header_name", "prefix", "token",
                   "client_id", "client_secret", "refresh_token", "scopes", "token_url")),
    # types.voices.CreateVoiceRequest
    Kind("voices", _f("voice", "store"), required=_f("voice")),
)}
# types.decisions.CreateDecisionRequest: a stateless method (it keeps nothing).
DECISION_FIELDS = _f("input", "model", "questions")
# A credential's secrets are write-only: Google's Credential type has none of them.
_SECRET = _f("value", "token", "client_secret", "refresh_token", "injection_location", "trusted_domains",
             "header_name", "prefix", "client_id", "token_url", "scopes")
# Google's own agents (types.interactions.AgentOption), which anyone may name.
BUILTIN_AGENTS = ("deep-research-pro-preview-12-2025", "deep-research-preview-04-2026",
                  "deep-research-max-preview-04-2026", "antigravity-preview-05-2026", "antigravity-preview-09-2026")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _unknown(name: str) -> GeminiRejection:
    return GeminiRejection(400, f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.',
                           "INVALID_ARGUMENT")


def _missing(collection: str, ident: str) -> GeminiRejection:
    return GeminiRejection(404, f"Requested entity was not found: {collection}/{ident}.", "NOT_FOUND")


async def _body(request: web.Request, allowed: frozenset[str], required: frozenset[str] = frozenset()
                ) -> dict[str, Any]:
    raw = await request.read()
    try:
        body = await request.json() if raw else {}
    except ValueError:
        raise GeminiRejection(400, "Invalid JSON payload received.", "INVALID_ARGUMENT") from None
    if not isinstance(body, dict):
        raise GeminiRejection(400, "Invalid JSON payload received. Expected an object.", "INVALID_ARGUMENT")
    for name in body:
        if name not in allowed:
            raise _unknown(name)
    for name in sorted(required - body.keys()):
        raise GeminiRejection(400, f"{name} is required.", "INVALID_ARGUMENT")
    return body


class Store:
    """The objects of every generated collection, by collection and id (one mock, one project)."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in KINDS}
        self.executions: dict[str, list[dict[str, Any]]] = {}

    def get(self, collection: str, ident: str) -> dict[str, Any]:
        found = self.objects[collection].get(ident)
        if found is None:
            raise _missing(collection, ident)
        return found

    def require_named(self, collection: str, body: dict[str, Any]) -> None:
        """The objects a body names by id exist (an agent may also be one of Google's)."""
        interaction = body.get("interaction") if isinstance(body.get("interaction"), dict) else {}
        named = {"agents": [body.get("base_environment")],
                 "environments": [body.get("from_environment")],
                 "triggers": [body.get("environment_id"), interaction.get("environment")]}.get(collection, [])
        for ident in named:
            if isinstance(ident, str):
                self.get("environments", ident.removeprefix("environments/"))
        for agent in (body.get("base_agent"), interaction.get("agent")):
            if isinstance(agent, str) and agent not in BUILTIN_AGENTS:
                self.get("agents", agent.removeprefix("agents/"))


def _shown(collection: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in _SECRET} if collection == "credentials" else obj


def install(app: web.Application, key_problem: Problem, error: Error, remember: Callable[..., None]) -> None:
    store = app[GENERATED] = Store()
    versions = "{version:v1|v1beta|v1alpha}"

    def guarded(handler: Callable[..., Any], collection: str) -> Callable[[web.Request], Any]:
        async def run(request: web.Request) -> web.StreamResponse:
            problem = key_problem(request)
            if problem:
                return error(problem)
            remember(request, None, collection, None)
            try:
                return await handler(request, collection)
            except GeminiRejection as e:
                return error(e)
        return run

    async def create(request: web.Request, collection: str) -> web.Response:
        kind = KINDS[collection]
        body = await _body(request, kind.create, kind.required)
        store.require_named(collection, body)
        ident = body.get("id") if kind.client_id and isinstance(body.get("id"), str) else secrets.token_hex(6)
        if ident in store.objects[collection]:
            raise GeminiRejection(409, f"{collection}/{ident} already exists.", "ALREADY_EXISTS")
        now = _now()
        if collection == "voices":
            obj = {**(body["voice"] if isinstance(body["voice"], dict) else {}), "id": ident}
        elif collection in ("agents", "environments", "credentials"):
            obj = {**body, "id": ident}
        else:
            obj = {**body, "id": ident, "create_time": now, "update_time": now}
        if collection == "triggers":
            obj["status"] = "ACTIVE"
        if collection == "webhooks":
            obj["state"] = "ENABLED"
        store.objects[collection][ident] = obj
        return web.json_response(_shown(collection, obj))

    async def listing(request: web.Request, collection: str) -> web.Response:
        items = [_shown(collection, o) for o in store.objects[collection].values()]
        return web.json_response({collection: items} if items else {})

    async def get(request: web.Request, collection: str) -> web.Response:
        return web.json_response(_shown(collection, store.get(collection, request.match_info["id"])))

    async def delete(request: web.Request, collection: str) -> web.Response:
        store.get(collection, request.match_info["id"])
        del store.objects[collection][request.match_info["id"]]
        return web.json_response({})

    async def patch(request: web.Request, collection: str) -> web.Response:
        obj = store.get(collection, request.match_info["id"])
        update = KINDS[collection].update or frozenset()
        obj.update(await _body(request, update))
        if "update_time" in obj:
            obj["update_time"] = _now()
        return web.json_response(_shown(collection, obj))

    async def executions(request: web.Request, collection: str) -> web.Response:
        trigger = store.get("triggers", request.match_info["id"])
        runs = store.executions.setdefault(trigger["id"], [])
        if request.method == "GET":
            return web.json_response({"trigger_executions": runs} if runs else {})
        now = _now()
        run = {"id": secrets.token_hex(6), "trigger_id": trigger["id"], "status": "SUCCEEDED", "start_time": now,
               "end_time": now, "interaction_id": f"v1_{secrets.token_hex(8)}"}
        runs.append(run)
        return web.json_response(run)

    async def webhook_method(request: web.Request, collection: str) -> web.Response:
        ident, _, method = request.match_info["id_method"].partition(":")
        hook = store.get("webhooks", ident)
        if method == "ping":
            await _body(request, frozenset())
            return web.json_response({})
        if method == "rotateSigningSecret":
            await _body(request, _f("revocation_behavior"))
            hook["update_time"] = _now()
            return web.json_response({"secret": "whsec_" + secrets.token_urlsafe(18)})
        raise GeminiRejection(404, f"Method {method} not found on webhooks.", "NOT_FOUND")

    async def decide(request: web.Request, collection: str) -> web.Response:
        await _body(request, DECISION_FIELDS, DECISION_FIELDS)
        return web.json_response({"answers": [], "usage": {"total_tokens": 1}})

    for collection, kind in KINDS.items():
        base = f"/{versions}/{collection}"
        app.router.add_get(base, guarded(listing, collection))
        app.router.add_post(base, guarded(create, collection))
        if collection == "webhooks":  # `{id}:ping` and `{id}:rotateSigningSecret`
            app.router.add_post(base + "/{id_method:[^/]+:[A-Za-z]+}", guarded(webhook_method, collection))
        app.router.add_get(base + "/{id}", guarded(get, collection))
        app.router.add_delete(base + "/{id}", guarded(delete, collection))
        if kind.update is not None:
            app.router.add_patch(base + "/{id}", guarded(patch, collection))
    app.router.add_route("*", f"/{versions}/triggers/{{id}}/executions", guarded(executions, "triggers"))
    app.router.add_post(f"/{versions}/decisions", guarded(decide, "decisions"))
