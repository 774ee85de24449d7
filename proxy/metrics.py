"""Prometheus metrics of this process (`GET /metrics`), and the per-request record they are made from.

Latency is kept in two histograms, never one: `gtp_upstream_seconds` is time spent waiting on the
upstream (the answer, or a stream's headers and each of its chunks), `gtp_added_seconds` the rest of
the request's time — what the proxy itself adds. Keys appear only as `k-` + 8 hex digits of their
SHA-256, never themselves.

A label a client chooses (the model, and the key label of a client's own key) takes only known
values: the configured ones (the served models, the aliases' targets, the pool's keys) and those an
upstream answered successfully, up to a cap; the rest count as `other`. Every label set is kept for
the process's life, so a client cycling through names (or keys) would otherwise grow the process and
`/metrics` without end — and a key sent as the model name would be shown to every reader.
"""

import asyncio
import contextvars
import functools
import hashlib
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest

from proxy import redact

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)
# From sub-millisecond (the proxy's own work) to a long agent turn.
BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

REQUESTS = Counter("gtp_requests", "Front-end requests by route, model and outcome", ["route", "model", "outcome"],
                   registry=REGISTRY)
ADDED = Histogram("gtp_added_seconds", "Time a request spent in the proxy itself (its whole time less the "
                  "upstream's)", ["route"], buckets=BUCKETS, registry=REGISTRY)
UPSTREAM = Histogram("gtp_upstream_seconds", "Time a request spent waiting on the upstream", ["route"],
                     buckets=BUCKETS, registry=REGISTRY)
UPSTREAM_ERRORS = Counter("gtp_upstream_errors", "Upstream refusals and failures by HTTP status and class",
                          ["status", "error_class"], registry=REGISTRY)
RETRIES = Counter("gtp_upstream_retries", "Upstream requests sent again (429/500/503, failed connections)",
                  registry=REGISTRY)
TOOL_CALLS = Counter("gtp_tool_calls", "Tool calls handed to clients, and captured from intercepted traffic",
                     ["route"], registry=REGISTRY)
WEBSOCKET_MESSAGES = Counter("gtp_websocket_messages", "Messages on the Responses WebSocket by type (invalid: refused "
                             "before a response started)", ["type"], registry=REGISTRY)
TOKENS = Counter("gtp_tokens", "Tokens Gemini reported, by upstream key, model and kind", ["key", "model", "kind"],
                 registry=REGISTRY)
RATE_LIMITED = Counter("gtp_rate_limited", "Requests a client key's --limit refused, by the limit's kind", ["kind"],
                       registry=REGISTRY)
USAGE_UNRECORDED = Counter("gtp_usage_unrecorded", "Answers whose usage could not be counted (the store was "
                           "unreachable longer than the retries)", registry=REGISTRY)
STORE_ENTRIES = Gauge("gtp_store_entries", "Entries in the session store", registry=REGISTRY)
STORE_BYTES = Gauge("gtp_store_bytes", "Bytes (as JSON) in the session store", registry=REGISTRY)
CACHE_BYTES = Gauge("gtp_cache_bytes", "Bytes a cache of this process holds (history: whole histories of "
                    "previous_response_id chains' heads; items: history items stateless clients send again; "
                    "conversions: those clients' histories converted to Gemini's contents)",
                    ["cache"], registry=REGISTRY)
CACHE_MAX_BYTES = Gauge("gtp_cache_max_bytes", "Bytes a cache of this process may hold", ["cache"],
                        registry=REGISTRY)
JOURNAL_BYTES = Gauge("gtp_journal_bytes", "Bytes the exchange journal holds (bounded by --journal-max-bytes)",
                      registry=REGISTRY)
KEY_REQUESTS = Counter("gtp_key_requests", "Upstream requests by pool key and outcome", ["key", "outcome"],
                       registry=REGISTRY)
KEY_COOLING = Gauge("gtp_key_cooling_seconds", "Seconds until a pool key that Gemini rate-limited is used again",
                    ["key"], registry=REGISTRY)


OTHER = "other"  # a value outside a label's known ones
NONE = "none"    # no value (no model asked of the upstream yet, no key)
# Models learnt from successful answers: Gemini's own list (GET models) has about 50, and 200 leaves
# room for tuned models and OpenAI-compatible servers' names while /metrics stays small (each model
# is at most routes x 3 outcomes request series and keys x 4 kinds token series).
MAX_MODELS = 200
# Client keys' labels (a client's own key goes upstream when the front-end has no client keys).
MAX_KEYS = 64


class KnownLabels:
    """The values one label may take: the configured ones, and those learnt from successful answers
    up to `cap` (never one the redactor holds for a secret); anything else is OTHER."""

    def __init__(self, cap: int, fixed: tuple[str, ...] = (NONE, OTHER)) -> None:
        self.cap, self.fixed = cap, frozenset(fixed)
        self.configured: set[str] = set()
        self.learnt: set[str] = set()

    def declare(self, values: Any) -> None:
        """Values the configuration names (not counted against the cap)."""
        self.configured.update(v for v in values if v and not _secret(v))

    def learn(self, value: str) -> None:
        """A value a successful answer vouched for."""
        if value and value not in self.learnt and value not in self.configured and value not in self.fixed \
                and len(self.learnt) < self.cap and not _secret(value):
            self.learnt.add(value)

    def __call__(self, value: str) -> str:
        """The label for `value`."""
        if not value:
            return NONE
        return value if value in self.learnt or value in self.configured or value in self.fixed else OTHER


def _secret(value: str) -> bool:
    return redact.process().secret_in(value)


MODELS = KnownLabels(MAX_MODELS)
KEYS = KnownLabels(MAX_KEYS)


# Methods setting gauges just before a scrape (key pools), held weakly: a pool that is gone stops.
SCRAPE_HOOKS: "weakref.WeakSet[Any]" = weakref.WeakSet()


def key_label(key: str | None) -> str:
    return _hashed_label(key) if key else "none"


@functools.lru_cache(maxsize=1024)  # a client's own key is hashed once, not on every request
def _hashed_label(key: str) -> str:
    return "k-" + hashlib.sha256(key.encode()).hexdigest()[:8]


# Children by (metric, labels): prometheus_client's `labels()` validates and locks on every call
# (about 3 µs, eight times a request). A label set is added once and never removed, so the child
# stays the one the metric exposes. The label sets are bounded (KnownLabels); past MAX_CHILDREN
# the cache would still start over rather than grow.
MAX_CHILDREN = 4096
_CHILDREN: dict[tuple[Any, tuple[str, ...]], Any] = {}


def child(metric: Any, *labels: str) -> Any:
    """`metric.labels(*labels)`, looked up once."""
    found = _CHILDREN.get((metric, labels))
    if found is None:
        if len(_CHILDREN) >= MAX_CHILDREN:
            _CHILDREN.clear()
        found = _CHILDREN[(metric, labels)] = metric.labels(*labels)
    return found


@dataclass
class RequestRecord:
    """What one front-end request did, filled in as it runs (upstream wrappers add to it)."""
    route: str
    start: float = field(default_factory=time.perf_counter)
    model: str = ""
    upstream: float = 0.0  # seconds spent waiting on the upstream
    key: str = "none"      # label of the upstream key used last
    failed: bool = False   # a stream that ended with its protocol's failure (its status was already 200)
    client_model: str = ""  # the model name the client asked for (before aliases)
    secrets: tuple[str, ...] = ()  # what it sent that is a secret (a key as the model name): never logged
    client: str = ""       # who asked (fair_share.client_of: a scope or key digest, never the key)
    input_tokens: int | None = None
    output_tokens: int | None = None


CURRENT: contextvars.ContextVar[RequestRecord | None] = contextvars.ContextVar("gtp_request", default=None)


def add_upstream_time(seconds: float) -> None:
    record = CURRENT.get()
    if record is not None:
        record.upstream += seconds


def finish(record: RequestRecord, status: int) -> None:
    """The request's counts and times, timed now and counted in the next turn of the loop, once its
    answer is on its way (the client never waits on the histograms; a scrape, a request of its own,
    comes after). Off a loop, counted at once."""
    total = time.perf_counter() - record.start
    try:
        asyncio.get_running_loop().call_soon(_count, record, status, total)
    except RuntimeError:
        _count(record, status, total)


def _count(record: RequestRecord, status: int, total: float) -> None:
    outcome = "ok" if status < 400 else "client_error" if status < 500 else "error"
    child(REQUESTS, record.route, MODELS(record.model), outcome).inc()
    child(UPSTREAM, record.route).observe(record.upstream)
    child(ADDED, record.route).observe(max(0.0, total - record.upstream))


def stream_failed() -> None:
    record = CURRENT.get()
    if record is not None:
        record.failed = True


def exposition() -> bytes:
    for owner in list(SCRAPE_HOOKS):
        owner.export()
    return generate_latest(REGISTRY)
