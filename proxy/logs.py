"""Logging set-up: text lines, or JSON objects (`--log-format json`) carrying the request and
session ids of the request being served (context variables set by the front-end's middleware)."""

import contextvars
import json
import logging
import sys
import time

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
SESSION_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("session_id", default=None)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, session_id (when known);
    an access-log line (journal/access_log.py) has its fields at the top level too."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
                "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        access = getattr(record, "access", None)  # an access-log line: its fields, not only its text
        if isinstance(access, dict):
            line.update({k: v for k, v in access.items() if v is not None})
        for name, var in (("request_id", REQUEST_ID), ("session_id", SESSION_ID)):
            value = getattr(record, name, None) or var.get()
            if value:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def setup_logging(level: str = "INFO", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
