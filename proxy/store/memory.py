"""In-memory session store for one proxy process: bounded by bytes, least recently used first out.

Everything a session keeps (stored responses, call records, conversations, its tool context) is
kept in entries of a ByteLRU, as compact JSON: the limits below are exact, per session and in total.
An evicted conversation or response is reported as evicted, never continued as if it were new.
"""

# Defaults sized for a machine of 2 GB: the budget counts what the process holds for the store
# (byte_lru.py), so its RSS stays within about 1.3x of it.
from proxy.defaults import STORE_MAX_BYTES as DEFAULT_MAX_BYTES  # noqa: E402 (the options' defaults)
from proxy.defaults import STORE_SESSION_BYTES as DEFAULT_SESSION_BYTES  # noqa: E402
from proxy.defaults import STORE_TTL_SECONDS as DEFAULT_TTL_SECONDS  # noqa: E402
from proxy.store.byte_lru import ByteLRU
from proxy.store.entries import MemoryEntries
from proxy.store.entry_store import DEFAULT_MAX_ROUNDS, EntryStore
from proxy.store.history_cache import cache_bytes

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_ROUNDS", "DEFAULT_SESSION_BYTES", "DEFAULT_TTL_SECONDS", "MemoryStore"]


class MemoryStore(EntryStore):
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, session_bytes: int = DEFAULT_SESSION_BYTES,
                 ttl: float = DEFAULT_TTL_SECONDS, max_rounds: int = DEFAULT_MAX_ROUNDS) -> None:
        if session_bytes > max_bytes:
            raise ValueError(f"a session's limit ({session_bytes} bytes) exceeds the store's ({max_bytes} bytes)")
        self.entries = ByteLRU(max_bytes, session_bytes, ttl)
        super().__init__(MemoryEntries(self.entries), max_rounds, cache_bytes(max_bytes))
