"""What the route handlers share: the session store, the upstream client, settings."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web

from proxy import metrics
from proxy.errors import ProxyError, RateLimited
from proxy.journal import exchange
from proxy.journal.exchange import Exchange
from proxy.journal.recorder import Recorder
from proxy.model_rules import ModelRules
from proxy.server.auth import SCOPE, ClientKeys, presented_key, scoped_session
from proxy.server.fair_share import client_of
from proxy.server.in_flight import InFlight
from proxy.server.protocol import protocol_of
from proxy.server.site import ServerLimits
from proxy.signatures.call_record import CallRecord
from proxy.signatures.carrier import CarrierSeal
from proxy.signatures.carrier_keys import CarrierKeys
from proxy.signatures.model_bound import for_model
from proxy.store.base import SessionStore
from proxy.to_gemini.kept_conversion import kept_conversions
from proxy.tools.deferral import called_by_items, found_by_items, split_deferred
from proxy.tools.prepare_tools import PreparedTools, prepare_tools
from proxy.tools.schema_mode import schema_mode_for
from proxy.upstream.base import Upstream
from proxy.upstream.fallback import served_model
from proxy.upstream.gemini.client import GeminiUpstream
from proxy.usage.ledger import Ledger, LimitsUnavailable
from proxy.usage.limits import rate_headers, refusal_text
from proxy.wire.model_name import check_model_name, credential_like, credential_refusal
from proxy.wire.resent_items import kept_items, recent_histories
from proxy.wire.responses import InputItem, referred_ids
from proxy.wire.shared_tools import SharedTools

SESSION_HEADER = "x-gtp-session"
DEFAULT_SESSION = "default"
DEFAULT_MODELS = ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-pro-preview", "gemini-3-flash-preview")
# Names refused as credentials one request's record holds (a WebSocket's many messages share one).
MAX_REQUEST_SECRETS = 8


RATE_HEADERS = web.RequestKey("gtp_rate_headers", dict)  # an admitted turn's rate-limit headers, for its answer


@dataclass
class Context:
    store: SessionStore
    upstream: Upstream
    max_body: int
    models: tuple[str, ...] = field(default=DEFAULT_MODELS)
    # Client model name -> Gemini model (Codex unlocks its full tool set only for names it knows).
    aliases: dict[str, str] = field(default_factory=dict)
    # (model pattern, "json" | "parameters") rules; see translate/prepare_tools.schema_mode_for.
    schema_modes: list[tuple[str, str]] = field(default_factory=list)
    fill_missing: bool = False  # opt-in null placeholders for missing required call arguments
    rules: ModelRules = field(default_factory=ModelRules)  # what differs between model families
    rest: GeminiUpstream | None = None  # Gemini itself, for the passed-through REST methods (not the relay)
    keys: ClientKeys = field(default_factory=lambda: ClientKeys(()))  # none: no authentication (loopback)
    carrier: CarrierKeys = field(default_factory=CarrierKeys.ephemeral)  # seals stateless clients' carriers
    limits: ServerLimits = field(default_factory=ServerLimits)
    in_flight: InFlight = field(default_factory=InFlight)
    recorder: Recorder | None = None  # the journal and traces (journal/recorder.py); None: nothing recorded
    # Gemini collections an operator lets client keys reach unscoped (--passthrough-collection).
    passthrough_collections: frozenset[str] = frozenset()
    # The Gemini Developer API upstream that serves `model` and can hold its explicit caches
    # (cachedContents), or None (Vertex, Interactions, an OpenAI-compatible or relay upstream).
    explicit_cache: Callable[[str], GeminiUpstream | None] = field(default=lambda model: None)
    usage: Ledger = field(default_factory=Ledger)  # usage and cost per key, and the keys' limits

    def __post_init__(self) -> None:
        # The models this front-end serves by name are the metrics' model labels from the start.
        metrics.MODELS.declare([*self.models, *self.aliases.values()])

    async def keep_calls(self, session: str, calls: list[CallRecord], route: str,
                         hosted: list[CallRecord] | None = None, model: str | None = None) -> None:
        """The records of the calls (and hosted searches) an answer handed out: kept whatever the
        client's `store`, since stateless clients resend their history and need them back. Each
        names `model`, the Gemini model that made them (its signatures are bound to it)."""
        records = calls + (hosted or [])
        if model is not None:
            model = served_model(model)  # a fallback model answered: the records are its (fallback.py)
            records = [r if r.model else replace(r, model=model) for r in records]
        await self.store.put_calls(session, records)
        metrics.child(metrics.TOOL_CALLS, route).inc(len(calls))

    async def admit(self, request: web.Request) -> None:
        """A turn's place in its client key's limits (--limit), before Gemini is asked: refused in
        the protocol's own rate-limit error, or admitted with the protocol's rate-limit headers
        (its record's `limits`: openai, anthropic or gemini). When the limits a fleet shares are
        unreachable, a limited key is refused (503) rather than let through; keys without limits never ask."""
        try:
            verdict = await self.usage.admit(client_of(request))
        except LimitsUnavailable:
            raise ProxyError("This client key has a budget (--limit) and the store that keeps budgets is "
                             "unreachable; retry when it is back.", status=503, code="store_unavailable",
                             type="server_error", headers={"Retry-After": "1"}) from None
        if verdict is None:
            return
        protocol = protocol_of(request)
        headers = rate_headers(verdict, protocol.limits if protocol is not None else "openai")
        if not verdict.allowed:
            metrics.child(metrics.RATE_LIMITED, verdict.refused_by).inc()
            raise RateLimited(refusal_text(verdict), status=429, type="rate_limit_error", code="rate_limit_exceeded",
                              headers=headers, retry_after=verdict.retry_after, quota=verdict.refused_by)
        request[RATE_HEADERS] = headers

    async def count_tokens(self, model: str, body: dict[str, Any], api_key: str | None) -> int:
        """Gemini's countTokens for the body the proxy would send (Responses' input_tokens, Anthropic's
        count_tokens); only Gemini's own API has it, not a relay or a local server."""
        if self.rest is None:
            raise ProxyError("Counting tokens needs Gemini's own API as the upstream (countTokens).", status=501,
                             type="server_error")
        return await self.rest.count_tokens(model, body, api_key)

    async def store_gauges(self) -> None:
        """Set the store's gauges for a scrape (a shared store is asked; unreachable leaves them)."""
        # (resent_items.py's two and kept_conversion.py's, this process's own)
        metrics.CACHE_BYTES.labels("items").set(kept_items.bytes + recent_histories.bytes)
        metrics.CACHE_MAX_BYTES.labels("items").set(kept_items.max_bytes + recent_histories.max_bytes)
        metrics.CACHE_BYTES.labels("conversions").set(kept_conversions.bytes)  # (to_gemini/kept_conversion.py)
        metrics.CACHE_MAX_BYTES.labels("conversions").set(kept_conversions.max_bytes)
        histories = getattr(self.store, "histories", None)
        if histories is not None:  # this process's own, whatever the store's backend
            metrics.CACHE_BYTES.labels("history").set(histories.bytes)
            metrics.CACHE_MAX_BYTES.labels("history").set(histories.max_bytes)
        usage = getattr(self.store, "usage", None)
        if usage is None:
            return
        try:
            total, entries = await usage()
        except ProxyError:
            return
        metrics.STORE_BYTES.set(total)
        metrics.STORE_ENTRIES.set(entries)

    def gemini_model(self, name: str) -> str:
        """The Gemini model a client's model name stands for, checked against Gemini's grammar
        (it becomes part of the upstream URL). A name that looks like a credential is refused before
        anything records it, and is a secret of the request: scrubbed wherever its journal, its span
        and its log lines would show it (the body it came in, the path)."""
        record = metrics.CURRENT.get()
        if credential_like(name):
            ex = exchange.CURRENT.get()
            if ex is not None:
                ex.secrets = (*ex.secrets, name)
            if record is not None and name not in record.secrets and len(record.secrets) < MAX_REQUEST_SECRETS:
                record.secrets = (*record.secrets, name)  # (a socket's record: bounded, its path has none)
            raise credential_refusal()
        if record is not None and not record.client_model:
            record.client_model = name[:200]
        return check_model_name(self.aliases.get(name, name))

    def json_schema_mode(self, gemini_model: str) -> bool:
        return schema_mode_for(gemini_model, self.schema_modes)

    def seal(self, request: web.Request, model: str) -> CarrierSeal:
        """The carrier for this client (its scope) and this Gemini model."""
        return CarrierSeal(self.carrier, request.get(SCOPE) or "", model)

    async def prepare(self, request: web.Request, session: str, client_model: str,
                      tools: list[dict[str, Any]] | None, items: list[InputItem], web_search: bool = False,
                      loaded: Iterable[str] = ()) -> tuple[str, PreparedTools, dict[str, CallRecord]]:
        """The Gemini model, the tools for it, and what is known of the calls `items` refer to:
        this process's records win; carriers replayed by stateless clients (this client's own, for
        this model) fill the gaps. Deferred tools are declared only once loaded (deferral.py): by
        `items`, or by `loaded` (names a stored history or a front-end's own blocks loaded)."""
        model = self.gemini_model(client_model)
        tools, deferral = split_deferred(tools, lambda: called_by_items(items) | set(loaded), found_by_items(items))
        prepared = prepare_tools(tools, json_schema_mode=self.json_schema_mode(model), fill_missing=self.fill_missing,
                                 web_search=web_search, digests=tools.facts if type(tools) is SharedTools else None
                                 ).serve_hosted(model, self.rules.hosted_tools)
        prepared.deferral = deferral
        if deferral is not None and exchange.CURRENT.get() is not None:
            held = deferral.held_back()
            exchange.note("tools", f"deferred tools: {len(held)} of {len(deferral.tools)} held back from Gemini's "
                                   f"declarations until a search finds them (~{deferral.tokens_saved()} input tokens "
                                   "not sent)", held_back=len(held), tokens_saved=deferral.tokens_saved())
        call_ids = referred_ids(items)
        if call_ids:
            carried = self.seal(request, model).decode(items)
            stored = await self.store.get_calls(session, call_ids)
            if any(r.model and r.model != model for r in stored.values()):  # made by another model: unsigned
                _note_other_model(stored, model)
                stored = {cid: for_model(r, model) for cid, r in stored.items()}
        else:  # nothing in the request looks a record up (a conversation's first turn): no carrier, no store
            carried, stored = {}, {}
        calls = {**carried, **stored}
        ex = exchange.CURRENT.get()
        if ex is not None:
            if call_ids or prepared.warnings:
                _note_preparation(ex, prepared, carried, stored, call_ids)
            elif not prepared.json_schema_mode:  # (the common case, without the call)
                ex.note_all(*prepared.schema_repair_notes())
        return model, prepared, calls


def _note_other_model(stored: dict[str, CallRecord], model: str) -> None:
    other = sorted({r.model for r in stored.values() if r.model and r.model != model})
    exchange.note("signature", f"call record(s) made by {', '.join(other)}, replayed to {model}: sent without their "
                               "thought signatures (bound to the model that made them; the sentinel where Gemini "
                               "needs one)", source="other_model")


# Calls whose record's source is noted one by one (the latest asked for); the rest share one note.
NOTED_CALLS = 8


def _note_preparation(ex: Exchange, prepared: PreparedTools, carried: dict[str, CallRecord],
                      stored: dict[str, CallRecord], asked: list[str]) -> None:
    """The journal's decisions of a request's preparation: schema repairs (worked out once per tool
    list), and where each earlier call's record (its thought signature, Gemini's own id and name)
    came from."""
    if not prepared.json_schema_mode:
        ex.note_all(*prepared.schema_repair_notes())
    for warning in prepared.warnings:
        ex.note("warning", warning)
    ids = list(dict.fromkeys(asked))
    older, latest = ids[:-NOTED_CALLS], ids[-NOTED_CALLS:]
    notes: list[dict[str, Any]] = []  # (added at once: Exchange.note_all keeps to MAX_NOTES as note does)
    if older:
        found = sum(1 for i in older if i in stored or i in carried)
        notes.append({"kind": "signature", "message": f"{len(older)} earlier call(s): {found} record(s) restored "
                      f"(store or carrier), {len(older) - found} sent with the sentinel where Gemini needs one",
                      "call_ids": older[:200]})
    for call_id in latest:
        record = stored.get(call_id) or carried.get(call_id)
        if record is None:
            notes.append({"kind": "signature", "message": f"call {call_id}: no record (store or carrier); sent with "
                          "the sentinel signature where Gemini needs one", "call_id": call_id, "source": "none"})
            continue
        source = "store" if call_id in stored else "carrier"
        signed = bool(record.signature)
        notes.append({"kind": "signature", "message": f"call {call_id}: record restored from the {source}"
                      + (" with its thought signature" if signed else " (it had no signature)"),
                      "call_id": call_id, "source": source, "signed": signed})
    ex.note_all(notes)


def parse_aliases(specs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`["gpt-5.5=gemini-2.5-pro", ...]` -> a dict; a malformed entry is a ValueError naming it."""
    out = {}
    for spec in specs:
        name, sep, target = spec.partition("=")
        if not sep or not name.strip() or not target.strip():
            raise ValueError(f"model alias must look like NAME=GEMINI_MODEL, not {spec!r}")
        try:
            out[name.strip()] = check_model_name(target.strip())
        except ProxyError as e:
            raise ValueError(f"model alias {spec!r}: {e.message}") from None
    return out


CONTEXT = web.AppKey("context", Context)


def session_of(request: web.Request) -> str:
    """The session a request belongs to: the x-gtp-session header, else the default session,
    inside the authenticated client's scope (auth.py)."""
    return scoped_session(request, request.headers.get(SESSION_HEADER) or DEFAULT_SESSION, SESSION_HEADER)


def api_key_of(request: web.Request) -> str | None:
    """The Gemini key for this request (never logged): the caller's own when the front-end has no
    client keys; with client keys the caller's key only admitted it, and the server's key
    (GEMINI_API_KEY) is used (None)."""
    return None if SCOPE in request else presented_key(request)
