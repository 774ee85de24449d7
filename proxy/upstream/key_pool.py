"""Several Gemini API keys used in turn (`--gemini-key`, repeatable, or $GEMINI_API_KEYS).

A key Gemini answers 429 (quota, rate limit) for is cooled down for as long as Gemini asked
(RetryInfo / Retry-After), else DEFAULT_COOLDOWN, and the request goes on at once with the next key.
When every key is cooling, the client gets Gemini's 429 with a Retry-After saying when the first
key is back. Counters per key feed /metrics (by label: a hash, never the key).
"""

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from proxy import metrics

DEFAULT_COOLDOWN = 60.0  # Gemini's per-minute quotas refill within a minute


@dataclass
class PooledKey:
    key: str
    label: str
    cooling_until: float = 0.0


class KeyPool:
    def __init__(self, keys: Iterable[str], clock: Callable[[], float] = time.monotonic) -> None:
        unique = list(dict.fromkeys(k for k in keys if k))
        self.keys = [PooledKey(k, metrics.key_label(k)) for k in unique]
        self.clock = clock
        self._next = 0
        metrics.SCRAPE_HOOKS.add(self)

    def __len__(self) -> int:
        return len(self.keys)

    def pick(self) -> str | None:
        """The next key that is not cooling down (round robin), or None when all are."""
        now = self.clock()
        for i in range(len(self.keys)):
            k = self.keys[(self._next + i) % len(self.keys)]
            if k.cooling_until <= now:
                self._next = (self._next + i + 1) % len(self.keys)
                return k.key
        return None

    def ready(self) -> bool:
        """Some key is not cooling down."""
        now = self.clock()
        return any(k.cooling_until <= now for k in self.keys)

    def owns(self, key: str | None) -> bool:
        return any(k.key == key for k in self.keys)

    def cool(self, key: str, seconds: float | None) -> None:
        for k in self.keys:
            if k.key == key:
                k.cooling_until = self.clock() + (seconds if seconds is not None else DEFAULT_COOLDOWN)
                metrics.KEY_REQUESTS.labels(k.label, "rate_limited").inc()

    def used(self, key: str, outcome: str) -> None:
        metrics.KEY_REQUESTS.labels(metrics.key_label(key), outcome).inc()

    def soonest(self) -> float:
        """Seconds until the first cooling key is back."""
        return max(0.0, min(k.cooling_until for k in self.keys) - self.clock()) if self.keys else 0.0

    def export(self) -> None:
        now = self.clock()
        for k in self.keys:
            metrics.KEY_COOLING.labels(k.label).set(max(0.0, k.cooling_until - now))


def keys_from_env(env: dict[str, str]) -> list[str]:
    """$GEMINI_API_KEYS (comma or whitespace separated), then $GEMINI_API_KEY."""
    keys = env.get("GEMINI_API_KEYS", "").replace(",", " ").split()
    single = env.get("GEMINI_API_KEY")
    return keys + ([single] if single and single not in keys else [])
