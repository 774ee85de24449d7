"""One line per request at INFO on the `gtp.access` logger: method, route, status, the proxy's own
milliseconds and the upstream's, client model -> Gemini model, tokens, request id and session. With
`--log-format json` the same fields are the line's JSON object (logs.JsonFormatter adds them).

The models and the path are what the client sent: they pass the process's redactor (redact.process)
here, with the request's own secrets (a key refused as its model name), as every exporter's do, and
the log handlers' scrubber passes over the whole line again."""

import logging
import time
from typing import Any

from proxy import redact

log = logging.getLogger("gtp.access")
LINE = "%s %s %s proxy %.1fms upstream %.1fms %s tokens %s%s"


def enabled() -> bool:
    return log.isEnabledFor(logging.INFO)


def write(fields: dict[str, Any], run: str | None = None) -> None:
    """Log one request; `fields` as made by `access_fields`. `run`: a background run's id, for the line
    written when the run ends (the request that started it had its own when it was answered): the
    request's fields with the run's status, times and tokens."""
    f = fields
    models = f"{f.get('client_model') or '-'} -> {f.get('gemini_model') or '-'}"
    tokens = f"{f.get('input_tokens') if f.get('input_tokens') is not None else '-'}/" \
             f"{f.get('output_tokens') if f.get('output_tokens') is not None else '-'}"
    log.info(LINE, f["method"], f["route"], f["status"], f["proxy_ms"], f["upstream_ms"], models, tokens,
             "" if run is None else f" (background run {run})",
             extra={"access": f if run is None else {**f, "run": run}})


def access_fields(method: str, path: str, status: int, record: Any, request_id: str | None,
                  session: str | None) -> dict[str, Any]:
    """The line's fields, from the request's metrics record (metrics.RequestRecord: its route, start,
    upstream seconds, models and tokens)."""
    total_s, upstream_s = time.perf_counter() - record.start, record.upstream
    redactor, secrets = redact.process(), record.secrets
    path = redactor.scrub(path.encode("utf-8", "surrogatepass"), secrets).decode("utf-8", "replace")
    return {"method": method, "route": record.route, "path": path, "status": status,
            "proxy_ms": round(max(0.0, total_s - upstream_s) * 1000, 2), "upstream_ms": round(upstream_s * 1000, 2),
            "client_model": redactor.name(record.client_model, secrets) or None,
            "gemini_model": redactor.name(record.model, secrets) or None,
            "input_tokens": record.input_tokens, "output_tokens": record.output_tokens, "request_id": request_id,
            "session": session}
