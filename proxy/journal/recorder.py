"""What the front-end and the addon hold to record exchanges: the journal (unless `--journal off`),
the tracer (when an OTLP endpoint is set) and the redactor both use. With neither, nothing is
recorded and `note()` calls cost a context-variable lookup."""

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any

from proxy import ids, metrics, redact
from proxy.journal.exchange import CURRENT, Exchange
from proxy.journal.ring import DEFAULT_MAX_BYTES, Journal, summarize
from proxy.journal.tracing import Tracing

log = logging.getLogger(__name__)
# Paths never recorded: the inspector's own, the operational ones (they would drown the rest) and the
# browser's favicon request (a person opening the inspector is not an exchange).
UNRECORDED = ("/inspect", "/metrics", "/healthz", "/readyz", "/favicon.ico")
# finish_later(): exchanges are finished together within this long, or once this many wait.
LATER_SECONDS = 0.2
LATER_MOST = 32


class Recorder:
    def __init__(self, journal: Journal | None = None, tracing: Tracing | None = None,
                 secrets: Iterable[str] = ()) -> None:
        self.redactor = journal.redactor if journal is not None else redact.Redactor()
        self.redactor.add(secrets)
        if tracing is not None:
            tracing.redactor = self.redactor
        self.journal, self.tracing = journal, tracing
        self.active = journal is not None or tracing is not None  # read on every request's path
        self._ending: list[Exchange] = []
        self._soon = False  # a finish_pending() is due in the next turn of the loop
        self._later: asyncio.TimerHandle | None = None  # one is due within LATER_SECONDS
        if journal is not None:
            journal.before_read = self.finish_pending
        redact.scrub_logs(self.redactor, metrics.CURRENT)
        redact.use(self.redactor)  # what the model-name check, the metrics' labels and the access log ask

    @classmethod
    def from_options(cls, journal: str = "on", max_bytes: int = DEFAULT_MAX_BYTES, otlp_endpoint: str | None = None,
                     env: dict[str, str] | None = None, secrets: Iterable[str] = (), store: Any = None
                     ) -> "Recorder":
        """`store`: the session store; while its backend is Redis, the journal is shared through it (the
        addon's store learns its backend after the journal is made: gtp_store is configured later)."""
        import os

        from proxy.journal.tracing import endpoint_from
        env = dict(os.environ) if env is None else env
        endpoint = endpoint_from(otlp_endpoint, env)

        seen: list[Any] = [None, None]  # the backend last looked at, and its client

        def redis_client() -> Any:
            # Asked for every exchange (Journal.add): a backend's client is looked up once per backend
            # (looking up an attribute the memory backend does not have cost more than the rest of add).
            backend = getattr(store, "backend", None)
            if backend is not seen[0]:
                seen[:] = backend, getattr(backend, "client", None)
            return seen[1]

        shared = redis_client if store is not None else None
        return cls(Journal(max_bytes, shared=shared) if journal != "off" else None,
                   Tracing(endpoint) if endpoint else None, [*secrets, *redact.known_secrets(env)])

    def begin(self, kind: str, method: str, path: str, headers: Any, protocol: str = "", session: str | None = None,
              request_id: str | None = None) -> Exchange:
        """A new exchange. `headers`: the pairs as the server read them (bytes), or a mapping; kept as they
        are (credential headers are replaced when the exchange is serialized, redact.headers); what is
        derived from them and from `path` (the presented key, the protocol, the traceparent) is worked
        out when the exchange is read (Exchange.identify), off the request's path."""
        return Exchange(ids.exchange_number(), kind, method, path, headers, request_id, session, protocol)

    def finish_soon(self, ex: Exchange) -> None:
        """finish() once the answer is on its way: the client never waits on the journal. Exchanges that
        end in one turn of the loop are finished together, by one callback, in the next. Not later: a
        batch held for 50 ms kept each request's objects alive that long, and the collector's young
        collections ran three times as often (it cost more than the batch saved)."""
        self._ending.append(ex)
        if not self._soon:
            self._soon = True
            asyncio.get_running_loop().call_soon(self._finish_soon)

    def finish_later(self, ex: Exchange) -> None:
        """finish() within LATER_SECONDS, with the exchanges that end meanwhile (at most LATER_MOST).
        The interceptor's: at an app's pace each flow finds the CPU's caches holding other work, and
        sealing one exchange then cost five times what it does in a batch (issue 62), in the response
        hook, before the app got its answer. A reader of this journal finishes them first (before_read);
        another instance's sees them once they are finished."""
        ending = self._ending
        ending.append(ex)
        if len(ending) >= LATER_MOST:
            self.finish_pending()
        elif self._later is None:
            self._later = asyncio.get_running_loop().call_later(LATER_SECONDS, self._finish_later)

    def _finish_soon(self) -> None:
        self._soon = False
        self.finish_pending()

    def _finish_later(self) -> None:
        self._later = None
        self.finish_pending()

    def finish_pending(self) -> None:
        ending, self._ending = self._ending, []
        for ex in ending:
            self.finish(ex)

    def finish(self, ex: Exchange) -> None:
        """Keep the exchange (journal) and export it (traces)."""
        ex.end = ex.end or time.perf_counter()
        try:
            complete = ex.complete
            if complete is not None:  # what the request's side left to read now (server/recording.py)
                ex.complete = None
                read, answer, record = complete
                read(ex, answer, record)
            if self.tracing is not None:  # before the journal keeps the bodies: spans read the live objects
                self.tracing.export(ex, summarize)
            if self.journal is not None:
                self.journal.add(ex)
        except Exception:  # what the proxy did is recorded on the side: a failure here never fails a request
            log.exception("could not record exchange %s", ex.name)
        # The journal keeps its own sealed copy: the exchange lets go of its bodies. It may outlive
        # the request: a connection to the upstream, or a timer, opened while it ran keeps a copy of
        # its context (exchange.CURRENT with it) for as long as it lives; 21 pooled connections held
        # their first requests' bodies, 4 MB past the journal's budget after a load.
        ex.request_body = ex.answer_body = ex.answer_stream = None
        ex.upstreams = []

    def start(self) -> None:
        """On the loop, at start-up: the shared journal listens to the other instances from now on."""
        if self.journal is not None and self.journal.shared is not None:
            self.journal.shared.start()

    def close(self) -> None:
        if self._later is not None:
            self._later.cancel()
            self._later = None
        self.finish_pending()
        if self.journal is not None and self.journal.shared is not None:
            self.journal.shared.close()
        if self.tracing is not None:
            self.tracing.shutdown()


__all__ = ["CURRENT", "Recorder", "UNRECORDED"]
