"""What the front-end and the addon hold to record exchanges: the journal (unless `--journal off`),
the tracer (when an OTLP endpoint is set) and the redactor both use. With neither, nothing is
recorded and `note()` calls cost a context-variable lookup."""

import logging
import time
from collections.abc import Iterable
from typing import Any

from proxy import ids
from proxy.journal import redact
from proxy.journal.exchange import CURRENT, Exchange
from proxy.journal.ring import DEFAULT_MAX_BYTES, Journal, summarize
from proxy.journal.tracing import Tracing

log = logging.getLogger(__name__)
# Paths never recorded: the inspector's own, and the operational ones (they would drown the rest).
UNRECORDED = ("/inspect", "/metrics", "/healthz", "/readyz")


def protocol_of(path: str) -> str:
    p = path.split("?", 1)[0]
    if p.startswith("/v1/responses") or p == "/v1/realtime":
        return "responses"
    if p.startswith("/v1/chat/completions"):
        return "chat"
    if p.startswith("/v1/messages"):
        return "anthropic"
    if "interactions" in p:
        return "interactions"
    if p.startswith("/v1/sessions"):
        return "sessions"
    if p.startswith(("/v1beta", "/v1alpha", "/v1/models/", "/v1/gemini", "/v1/files", "/upload")):
        return "gemini"
    return "other"


class Recorder:
    def __init__(self, journal: Journal | None = None, tracing: Tracing | None = None,
                 secrets: Iterable[str] = ()) -> None:
        self.redactor = journal.redactor if journal is not None else redact.Redactor()
        self.redactor.add(secrets)
        if tracing is not None:
            tracing.redactor = self.redactor
        self.journal, self.tracing = journal, tracing
        redact.scrub_logs(self.redactor)

    @classmethod
    def from_options(cls, journal: str = "on", max_bytes: int = DEFAULT_MAX_BYTES, otlp_endpoint: str | None = None,
                     env: dict[str, str] | None = None, secrets: Iterable[str] = (), store: Any = None
                     ) -> "Recorder":
        """`store`: the session store; when its backend is Redis, the journal is shared through it."""
        import os

        from proxy.journal.tracing import endpoint_from
        env = dict(os.environ) if env is None else env
        endpoint = endpoint_from(otlp_endpoint, env)
        def redis_client() -> Any:
            return getattr(getattr(store, "backend", None), "client", None)

        return cls(Journal(max_bytes, shared=redis_client if store is not None else None) if journal != "off" else None,
                   Tracing(endpoint) if endpoint else None, [*secrets, *redact.known_secrets(env)])

    @property
    def active(self) -> bool:
        return self.journal is not None or self.tracing is not None

    def begin(self, kind: str, method: str, path: str, headers: Any, secrets: Iterable[str | None] = (),
              **fields: Any) -> Exchange:
        """A new exchange. `headers`: a mapping (its credential headers are replaced when the exchange is
        serialized, redact.headers)."""
        return Exchange(id=ids.exchange_id(), kind=kind, method=method, path=redact.path(path),
                        protocol=fields.pop("protocol", None) or protocol_of(path), request_headers=headers,
                        secrets=[s for s in secrets if s], traceparent=headers.get("traceparent"), **fields)

    def finish(self, ex: Exchange) -> None:
        """Keep the exchange (journal) and export it (traces)."""
        ex.end = ex.end or time.perf_counter()
        try:
            if self.tracing is not None:  # before the journal settles the bodies: spans read the live objects
                self.tracing.export(ex, summarize(ex))
            if self.journal is not None:
                self.journal.add(ex)
        except Exception:  # what the proxy did is recorded on the side: a failure here never fails a request
            log.exception("could not record exchange %s", ex.id)

    def close(self) -> None:
        if self.journal is not None and self.journal.shared is not None:
            self.journal.shared.close()
        if self.tracing is not None:
            self.tracing.shutdown()


__all__ = ["CURRENT", "Recorder", "UNRECORDED", "protocol_of"]
