"""When and how long to wait before asking Gemini again (only while nothing reached the client).

Exponential backoff with full jitter (the AWS architecture blog's recommendation, as Google's own
client libraries do), capped per wait; a hint from Gemini — `google.rpc.RetryInfo.retryDelay` in
the error, or a `Retry-After` header — is honoured instead. A hint longer than MAX_HINT is not
waited out: the client gets the 429 with the hint as its `Retry-After`, and decides.

Along a fallback chain (fallback.py) the retries are counted across its models: RETRIES_SPENT says
how many the models before spent, and while another model is there to ask (FALLING_BACK) a 429 or
503 goes to it at once rather than being waited out.
"""

import contextvars
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RETRYABLE_STATUS = frozenset({429, 500, 503})
DEFAULT_MAX_RETRIES = 3
BASE_DELAY = 0.5  # seconds before the first retry (times a random factor in [0, 1))
MAX_DELAY = 8.0   # cap of one backoff wait
MAX_HINT = 60.0   # a longer "retry in N s" from Gemini is passed to the client rather than waited out
# Retries the models tried before spent on this request (fallback.py); counted against max_retries.
RETRIES_SPENT: contextvars.ContextVar[int] = contextvars.ContextVar("gtp_retries_spent", default=0)
# A fallback model follows: a 429/503 (or every pooled key resting) is raised at once, not waited out.
FALLING_BACK: contextvars.ContextVar[bool] = contextvars.ContextVar("gtp_falling_back", default=False)
# The deadline a fallback chain's models share (the loop's clock), or None: each call's own.
CHAIN_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("gtp_chain_deadline", default=None)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")  # google.protobuf.Duration in JSON: "13s", "1.5s"


def retry_hint(error: Mapping[str, Any] | None, headers: Mapping[str, str] | None = None) -> float | None:
    """Seconds Gemini asked to wait: RetryInfo.retryDelay in the error's details, else Retry-After."""
    for detail in (error or {}).get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            m = _DURATION.match(str(detail.get("retryDelay", "")))
            if m:
                return float(m.group(1))
    value = (headers or {}).get("retry-after", "")
    return float(value) if value.strip().isdigit() else None  # the HTTP-date form is not used by Google


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = DEFAULT_MAX_RETRIES

    def wait(self, attempt: int, hint: float | None) -> float | None:
        """Seconds to wait before retry number `attempt + 1`, or None: give up."""
        if attempt + RETRIES_SPENT.get() >= self.max_retries:
            return None
        if hint is not None:
            return hint if hint <= MAX_HINT else None
        return random.random() * min(MAX_DELAY, BASE_DELAY * 2 ** attempt)
