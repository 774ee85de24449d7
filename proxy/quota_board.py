"""Antigravity's quota, as its own account calls report it: what is left of each bucket and when it
resets, for `/metrics` (`gtp_quota_remaining_ratio`, `gtp_quota_reset_timestamp_seconds`), the journal
and `/inspect`.

The interceptor passes the app's account calls untouched and reads three answers on the way
(tests/recorded/antigravity/, SOURCES.md there):
- `v1internal:retrieveUserQuotaSummary`: `{groups: [{displayName, buckets: [{bucketId ("gemini-5h",
  "gemini-weekly", "3p-5h", "3p-weekly"), window, remainingFraction, resetTime}]}]}` (Antigravity-Manager,
  cursor-byok; some readers also see it under `response`, or the fraction under `remaining`);
- `v1internal:fetchAvailableModels`: `{models: {<id>: {quotaInfo: {remainingFraction, resetTime}}}}`;
- `v1internal:retrieveUserQuota` (Gemini CLI's pool): `{buckets: [{modelId, tokenType,
  remainingFraction, resetTime}]}`.

Buckets are kept per account — the Cloud Code project the call names (an access token changes every
hour and is never shown) — and the number of series is bounded: what the app's server sends cannot
grow the process without limit.
"""

import datetime
import time
from dataclasses import asdict, dataclass
from typing import Any

from prometheus_client import Gauge

from proxy.metrics import REGISTRY

PATHS = {"/v1internal:retrieveUserQuotaSummary": "summary", "/v1internal:fetchAvailableModels": "models",
         "/v1internal:retrieveUserQuota": "quota"}
MAX_BUCKETS = 256  # accounts x buckets: a summary has 4, a model list some 20
REMAINING = Gauge("gtp_quota_remaining_ratio", "What is left of an Antigravity / Code Assist quota bucket (1: all), as "
                  "the app's own account calls last reported it", ["account", "bucket"], registry=REGISTRY)
RESET = Gauge("gtp_quota_reset_timestamp_seconds", "When an Antigravity / Code Assist quota bucket resets (Unix time)",
              ["account", "bucket"], registry=REGISTRY)


@dataclass(frozen=True)
class Bucket:
    account: str
    bucket: str            # gemini-5h, 3p-weekly, model:claude-sonnet-4-6, gemini-2.5-pro/REQUESTS...
    group: str
    remaining: float
    reset: str | None      # as Google sent it (RFC 3339)
    seen: float            # when it was read (Unix time)


def _fraction(item: dict[str, Any]) -> float | None:
    value = item.get("remainingFraction")
    if value is None and isinstance(item.get("remaining"), dict):
        value = item["remaining"].get("remainingFraction")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return min(max(float(value), 0.0), 1.0)


def _reset(item: dict[str, Any]) -> str | None:
    value = item.get("resetTime")
    if isinstance(value, int | float) and not isinstance(value, bool):  # epoch seconds, as some readers see
        return datetime.datetime.fromtimestamp(value, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value if isinstance(value, str) else None


def buckets_of(kind: str, answer: Any, account: str, now: float | None = None) -> list[Bucket]:
    """The buckets an account call's answer reports (nothing for a shape it does not have)."""
    now = time.time() if now is None else now
    if isinstance(answer, dict) and isinstance(answer.get("response"), dict):
        answer = answer["response"]
    if not isinstance(answer, dict):
        return []
    found: list[tuple[str, str, dict[str, Any]]] = []
    if kind == "summary":
        for group in answer.get("groups") or []:
            if isinstance(group, dict):
                name = str(group.get("displayName") or "")
                found += [(str(b.get("bucketId")), name, b) for b in group.get("buckets") or []
                          if isinstance(b, dict) and b.get("bucketId")]
    elif kind == "models" and isinstance(answer.get("models"), dict):
        found = [(f"model:{mid}", "models", m["quotaInfo"]) for mid, m in answer["models"].items()
                 if isinstance(m, dict) and isinstance(m.get("quotaInfo"), dict)]
    elif kind == "quota":
        found = [(f"{b.get('modelId')}/{b.get('tokenType') or 'REQUESTS'}", "code assist", b)
                 for b in answer.get("buckets") or [] if isinstance(b, dict) and b.get("modelId")]
    out = []
    for bucket, group, item in found:
        fraction = _fraction(item)
        if fraction is not None:
            out.append(Bucket(account, bucket[:120], group[:120], fraction, _reset(item), now))
    return out


class QuotaBoard:
    """The latest report of each (account, bucket), and the gauges that show it."""

    def __init__(self) -> None:
        self._buckets: dict[tuple[str, str], Bucket] = {}

    def update(self, buckets: list[Bucket]) -> list[Bucket]:
        """Keep what the answer reported; returns what was kept (not past MAX_BUCKETS series)."""
        kept = []
        for b in buckets:
            key = (b.account, b.bucket)
            if key not in self._buckets and len(self._buckets) >= MAX_BUCKETS:
                continue
            self._buckets[key] = b
            REMAINING.labels(b.account, b.bucket).set(b.remaining)
            if b.reset:
                try:
                    at = datetime.datetime.fromisoformat(b.reset.replace("Z", "+00:00")).timestamp()
                except ValueError:
                    at = None
                if at is not None:
                    RESET.labels(b.account, b.bucket).set(at)
            kept.append(b)
        return kept

    def snapshot(self) -> list[dict[str, Any]]:
        return [asdict(b) for b in sorted(self._buckets.values(), key=lambda b: (b.account, b.group, b.bucket))]


BOARD = QuotaBoard()  # one per process, like the metrics it sets


def describe(buckets: list[Bucket]) -> str:
    """One line for the journal: `gemini-5h 82% (resets 2026-...)`, ..."""
    return "; ".join(f"{b.bucket} {round(b.remaining * 100)}%" + (f" (resets {b.reset})" if b.reset else "")
                     for b in buckets[:12]) + (f"; and {len(buckets) - 12} more" if len(buckets) > 12 else "")
