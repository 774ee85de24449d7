"""Several Gemini API keys (`--gemini-key`, repeatable, or $GEMINI_API_KEYS) or Google credentials
files (`--vertex-credentials`, repeatable) used in turn.

A key Gemini answers 429 (quota, rate limit) for is cooled down for as long as Gemini asked
(RetryInfo / Retry-After), else DEFAULT_COOLDOWN, and the request goes on at once with the next key.
Gemini's quotas are per model: a 429 for one model rests the key for that model only (a fallback
model, upstream/fallback.py, is asked with the same keys); a key refused a token rests for all.
When every key is cooling, the client gets Gemini's 429 with a Retry-After saying when the first
key is back. Counters per key feed /metrics (by label: a hash, never the key).
"""

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from proxy import metrics
from proxy.upstream.gemini.credentials import ApiKey, Credential

DEFAULT_COOLDOWN = 60.0  # Gemini's per-minute quotas refill within a minute


@dataclass
class PooledKey:
    credential: Credential
    cooling_until: float = 0.0
    reason: str = "rate_limited"  # or "refused": the token endpoint gave it no token
    # Rate-limited for one model (Gemini's quotas are per model): model -> until when.
    by_model: dict[str, float] = field(default_factory=dict)

    def until(self, model: str) -> float:
        return max(self.cooling_until, self.by_model.get(model, 0.0)) if model else self.cooling_until

    @property
    def label(self) -> str:
        return self.credential.label


class KeyPool:
    def __init__(self, keys: Iterable[str | Credential], clock: Callable[[], float] = time.monotonic) -> None:
        credentials = [ApiKey(k) if isinstance(k, str) else k for k in keys if k]
        unique: dict[str, Credential] = {}
        for c in credentials:
            unique.setdefault(c.label, c)  # a key given twice is one key
        self.keys = [PooledKey(c) for c in unique.values()]
        self.clock = clock
        self._next = 0
        metrics.SCRAPE_HOOKS.add(self)
        metrics.KEYS.declare(k.label for k in self.keys)  # the operator's keys: labels of their own

    def __len__(self) -> int:
        return len(self.keys)

    def pick(self, model: str = "") -> Credential | None:
        """The next key that is not cooling down (for `model`; round robin), or None when all are."""
        now = self.clock()
        for i in range(len(self.keys)):
            k = self.keys[(self._next + i) % len(self.keys)]
            if k.until(model) <= now:
                self._next = (self._next + i + 1) % len(self.keys)
                return k.credential
        return None

    def ready(self, model: str = "") -> bool:
        """Some key is not cooling down (for `model`)."""
        now = self.clock()
        return any(k.until(model) <= now for k in self.keys)

    def owns(self, key: Credential | None) -> bool:
        return bool(self.keys) and any(k.credential is key for k in self.keys)  # (no pool: no generator made)

    def cool(self, key: Credential, seconds: float | None, reason: str = "rate_limited", model: str = "") -> None:
        """Rest `key`: for `model` when a model's quota is what ran out, else for every model."""
        for k in self.keys:
            if k.credential is key:
                until = self.clock() + (seconds if seconds is not None else DEFAULT_COOLDOWN)
                if model and reason == "rate_limited":
                    if len(k.by_model) >= 64:  # model names come from clients: a bounded few
                        k.by_model = {m: t for m, t in k.by_model.items() if t > self.clock()}
                    k.by_model[model] = until
                else:  # every model: this rest replaces the models' own
                    k.cooling_until, k.by_model = until, {}
                k.reason = reason
                metrics.child(metrics.KEY_REQUESTS, k.label, reason).inc()

    def refused_all(self) -> bool:
        """Every key rests because its token endpoint refused it (not a quota: a broken credential)."""
        return bool(self.keys) and all(k.reason == "refused" for k in self.keys)

    def used(self, key: Credential, outcome: str) -> None:
        metrics.child(metrics.KEY_REQUESTS, key.label, outcome).inc()

    def soonest(self, model: str = "") -> float:
        """Seconds until the first cooling key is back (for `model`)."""
        return max(0.0, min(k.until(model) for k in self.keys) - self.clock()) if self.keys else 0.0

    def export(self) -> None:
        now = self.clock()
        for k in self.keys:
            longest = max([k.cooling_until, *k.by_model.values()])
            metrics.child(metrics.KEY_COOLING, k.label).set(max(0.0, longest - now))


def keys_from_env(env: dict[str, str]) -> list[str]:
    """$GEMINI_API_KEYS (comma or whitespace separated), then $GEMINI_API_KEY."""
    keys = env.get("GEMINI_API_KEYS", "").replace(",", " ").split()
    single = env.get("GEMINI_API_KEY")
    return keys + ([single] if single and single not in keys else [])
