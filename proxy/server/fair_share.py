"""No client takes more than its share: per client key, a cap on requests in flight
(--max-in-flight-per-key) and on background runs (--max-background-per-key). One client's 1,000
background runs or 100 slow streams once held every upstream connection, and everyone else waited.
Over its cap a client gets a 429 with Retry-After in its own protocol; others are served.

A client is its key's scope under --api-key, else the key it presents (each Gemini key its own
client), else the one anonymous client."""

import functools
import hashlib
from collections import Counter
from collections.abc import Callable

from aiohttp import web

from proxy import metrics
from proxy.errors import ProxyError
from proxy.server.auth import SCOPE, presented_key


def client_of(request: web.Request) -> str:
    record = metrics.CURRENT.get()
    if record is not None and record.client:  # the front middleware worked it out for this request
        return record.client
    scope = request.get(SCOPE)
    if scope:
        return scope
    key = presented_key(request)
    return _key_id(key) if key else "anonymous"


@functools.lru_cache(maxsize=1024)  # a client's key is hashed once, not on every request
def _key_id(key: str) -> str:
    return "k-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def _refusal(what: str, cap: int, option: str) -> ProxyError:
    return ProxyError(f"This client already has {cap} {what}, the most one client key may have at once ({option}); "
                      "retry when one has ended.", status=429, type="rate_limit_error", code="rate_limit_exceeded",
                      headers={"Retry-After": "1"})


class FairShare:
    """The counts (pure bookkeeping: the middleware and background.py hold and release)."""

    def __init__(self, requests: int = 0, runs: int = 0) -> None:
        self.request_cap, self.run_cap = requests, runs  # 0: no cap
        self.requests: Counter[str] = Counter()
        self.runs: Counter[str] = Counter()

    def hold(self, who: str) -> None:
        """One of `who`'s places for a request, or its 429 when all are taken; `release` gives it back
        (the front middleware's try/finally: a context manager was a generator per request)."""
        if self.request_cap and self.requests[who] >= self.request_cap:
            raise _refusal("requests in flight", self.request_cap, "--max-in-flight-per-key")
        self.requests[who] += 1

    def release(self, who: str) -> None:
        self._drop(self.requests, who)

    def run(self, who: str) -> Callable[[], None]:
        """Hold a background run's place; the returned function gives it back (once)."""
        if self.run_cap and self.runs[who] >= self.run_cap:
            raise _refusal("background runs in flight", self.run_cap, "--max-background-per-key")
        self.runs[who] += 1
        held = [True]

        def release() -> None:
            if held and held.pop():
                self._drop(self.runs, who)
        return release

    @staticmethod
    def _drop(counts: Counter[str], who: str) -> None:
        counts[who] -= 1
        if counts[who] <= 0:
            del counts[who]


FAIR = web.AppKey("fair_share", FairShare)
