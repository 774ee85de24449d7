"""Exchanges as OpenTelemetry traces, with the GenAI semantic conventions.

One SERVER span per client request (continuing the client's W3C `traceparent`), one CLIENT span per
upstream attempt beneath it; the model's tool calls (`gen_ai.tool.call`) and the proxy's decisions
(`gtp.<kind>`) are span events. Spans are made when the exchange ends, from what the journal recorded,
and handed to a batch processor: exporting runs on its own thread, so a slow or dead collector costs
requests nothing (its failures are the exporter's log lines).

Enabled by `--otlp-endpoint URL` (the collector's OTLP/HTTP base, e.g. http://127.0.0.1:4318) or by
the standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` variables (with
`OTEL_EXPORTER_OTLP_HEADERS` and the rest, read by the exporter itself).
"""

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from proxy.journal.exchange import Exchange
from proxy.redact import Redactor

log = logging.getLogger(__name__)
SYSTEM = "gemini"
PROVIDER = "gcp.gemini"
OPERATION = "chat"
EXPORT_TIMEOUT = 2  # seconds an export (with the exporter's own retries) may take on its thread
MAX_EVENTS = 16    # tool-call events, and decision kinds, per span
MAX_MESSAGES = 50  # messages one decision event carries


def endpoint_from(option: str | None, env: Mapping[str, str]) -> str | None:
    """The traces URL to export to, or None when tracing is off."""
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true" or env.get("OTEL_TRACES_EXPORTER", "") == "none":
        return None
    if option:
        base = option.rstrip("/")
        return base if base.endswith("/v1/traces") else base + "/v1/traces"
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    if env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return env["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"
    return None


class Breaker:
    """Wraps the OTLP exporter: once the collector fails, spans are neither sent nor even made until a
    wait has passed (2 s, doubling to a minute), so a dead collector costs requests nothing and the
    log one line per outage, not one per dropped span."""

    def __init__(self, inner: Any, endpoint: str, clock: Any = None) -> None:
        import time
        self.inner, self.endpoint, self.clock = inner, endpoint, clock or time.monotonic
        self.failures, self.down_until, self.dropped = 0, 0.0, 0
        self.probing = False  # one exchange's spans are on their way to a collector that had failed

    @property
    def down(self) -> bool:
        return self.failures > 0 and self.clock() < self.down_until

    def admits(self) -> bool:
        """Whether an exchange's spans are made (the request's loop asks): always while the collector
        takes them; once it failed, none until its wait is over, then one exchange's, which probe it,
        and none again until the probe's batch was tried (spans made for every request between two
        failed exports cost a dead collector 5-15 % of the CPU in scripts/bench_journal.py)."""
        if self.failures == 0:
            return True
        if self.probing or self.clock() < self.down_until:
            return False
        self.probing = True
        return True

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult
        if self.down:
            self.dropped += len(spans)
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception as e:  # the exporter's own errors: the same as a failed export
            log.debug("OTLP export raised %r", e)
            result = SpanExportResult.FAILURE
        self.probing = False
        if result == SpanExportResult.SUCCESS:
            if self.failures:
                log.warning("the OTLP collector at %s answers again (%d spans were dropped meanwhile)",
                            self.endpoint, self.dropped)
            self.failures, self.dropped = 0, 0
            return result
        self.failures += 1
        wait = min(60.0, 2.0 ** min(self.failures, 6))
        self.down_until = self.clock() + wait
        if self.failures == 1:
            log.warning("the OTLP collector at %s does not take spans; traces are dropped until it does "
                        "(trying again in %gs, then less often)", self.endpoint, wait)
        self.dropped += len(spans)
        return result

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.inner.shutdown()


class Tracing:
    """The process's tracer provider and the conversion of an exchange into spans."""

    def __init__(self, endpoint: str, redactor: Redactor | None = None, exporter: Any = None) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        from proxy import __version__

        self.endpoint = endpoint
        self.redactor = redactor or Redactor()
        resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "gemini-tool-proxy"),
                                    "service.version": __version__})
        self.provider = TracerProvider(resource=resource)
        # The exporter retries within its timeout, logging each retry; the breaker reports outages, once.
        logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter").setLevel(logging.ERROR)
        self.breaker = Breaker(exporter or OTLPSpanExporter(endpoint=endpoint, timeout=EXPORT_TIMEOUT), endpoint)
        self.processor = BatchSpanProcessor(self.breaker)
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("gemini-tool-proxy")
        self.propagator = TraceContextTextMapPropagator()

    def _clean(self, value: Any, extra: tuple[str, ...] = ()) -> Any:
        if isinstance(value, str):
            return self.redactor.scrub(value.encode(), extra).decode("utf-8", "replace")
        return value

    def _model(self, name: str | None, ex: Exchange) -> str:
        """A model name as a span carries it (in its name too): the redactor's judgement of a short
        value, whole (a key sent as the model name is never exported, even if it was not refused)."""
        return self.redactor.name(name or "", ex.secrets)

    def _free_text(self, ex: Exchange) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
        """The exchange's free text, scrubbed in one pass: [request id, session, error], and the
        decisions as span events, one per kind (a long tool list repairs dozens of keywords)."""
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for n in ex.notes:
            by_kind.setdefault(n["kind"], []).append(n)
        kinds = list(by_kind)[:MAX_EVENTS]
        texts = [ex.request_id or "", ex.session or "", (ex.error or {}).get("message") or "",
                 *("\x00".join(n["message"] for n in by_kind[k][:MAX_MESSAGES]) for k in kinds)]
        clean = self._clean("\x01".join(texts), ex.secrets).split("\x01")
        events = [(f"gtp.{kind}", {"gtp.count": len(by_kind[kind]), "gtp.messages": text.split("\x00")})
                  for kind, text in zip(kinds, clean[3:], strict=False)]
        return clean[:3], events

    def export(self, ex: Exchange, summarize: Callable[[Exchange], dict[str, Any]]) -> None:
        """The exchange's spans, handed to the batch processor (never waits on the collector); none
        while the collector is down (Breaker.admits), when not even its summary is made (`summarize`, ring.summarize:
        it reads the exchange's headers and answer, a tenth of a small request's CPU)."""
        if not self.breaker.admits():
            self.breaker.dropped += 1 + sum(len(c.attempts) or 1 for c in ex.upstreams)
            return
        summary = summarize(ex)
        from opentelemetry.trace import SpanKind, Status, StatusCode

        def ns(perf: float) -> int:  # a perf_counter reading as wall-clock nanoseconds
            return int((ex.time + (perf - ex.start)) * 1e9)

        parent = self.propagator.extract({"traceparent": ex.traceparent}) if ex.traceparent else None
        client_model = self._model(summary.get("client_model") or summary.get("gemini_model"), ex)
        gemini_model = summary.get("gemini_model")
        response_model = self._model(summary.get("model_version") or gemini_model, ex)
        attrs = {
            "gen_ai.system": SYSTEM, "gen_ai.provider.name": PROVIDER, "gen_ai.operation.name": OPERATION,
            "gen_ai.request.model": client_model, "gen_ai.response.model": response_model,
            "http.request.method": ex.method, "url.path": self._clean(ex.path.split("?", 1)[0], ex.secrets),
            "http.response.status_code": ex.status, "gtp.protocol": ex.protocol, "gtp.exchange.id": ex.name,
            "gtp.kind": ex.kind,
        }
        (request_id, session, error), events = self._free_text(ex)
        for name, value in (("gen_ai.usage.input_tokens", summary.get("input_tokens")),
                            ("gen_ai.usage.output_tokens", summary.get("output_tokens")),
                            ("gtp.request_id", request_id or None), ("gtp.session", session or None)):
            if value is not None:
                attrs[name] = value
        if summary.get("finish_reasons"):
            attrs["gen_ai.response.finish_reasons"] = list(summary["finish_reasons"])
        end = ns(ex.end or ex.start)
        span = self.tracer.start_span(f"{OPERATION} {client_model}".strip(), context=parent, kind=SpanKind.SERVER,
                                      attributes=attrs, start_time=ns(ex.start))
        from opentelemetry import trace
        ctx = trace.set_span_in_context(span)
        for call in ex.upstreams:
            model = self._model(call.model, ex)
            attempts = call.attempts or [{"start": call.start, "end": call.last_byte or call.start,
                                          "status": None, "key": None}]
            for i, attempt in enumerate(attempts):
                a_attrs = {"gen_ai.system": SYSTEM, "gen_ai.provider.name": PROVIDER,
                           "gen_ai.operation.name": OPERATION, "gen_ai.request.model": model,
                           "gtp.attempt": i + 1}
                if attempt.get("status") is not None:
                    a_attrs["http.response.status_code"] = attempt["status"]
                if attempt.get("key"):
                    a_attrs["gtp.upstream.key"] = attempt["key"]
                last = i == len(attempts) - 1
                a_end = (call.last_byte or attempt.get("end") or call.start) if last else attempt.get("end")
                child = self.tracer.start_span(f"{OPERATION} {model}".strip(), context=ctx, kind=SpanKind.CLIENT,
                                               attributes=a_attrs, start_time=ns(attempt.get("start") or call.start))
                if attempt.get("error"):
                    child.set_status(Status(StatusCode.ERROR, self._clean(str(attempt["error"]), ex.secrets)[:500]))
                elif last and gemini_model == call.model:
                    child.set_attribute("gen_ai.response.model", response_model)
                child.end(end_time=ns(a_end or call.start))
        for c in (summary.get("calls") or [])[:MAX_EVENTS]:
            span.add_event("gen_ai.tool.call", {"gen_ai.tool.name": self._clean(c.get("name") or "", ex.secrets),
                                                "gen_ai.tool.call.id": self._clean(c.get("id") or "", ex.secrets)},
                           timestamp=end)
        for name, attributes in events:
            span.add_event(name, attributes, timestamp=end)
        if ex.status >= 500 or ex.error:
            span.set_status(Status(StatusCode.ERROR, error[:500]))
        span.end(end_time=end)

    def shutdown(self) -> None:
        self.provider.shutdown()


