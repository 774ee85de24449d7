"""`--store`: where session state lives. `memory` (the default: this process only) or a Redis URL
(`redis://HOST:PORT/DB`, `rediss://` for TLS, `unix:///path`) shared by several instances."""

from urllib.parse import urlsplit

from proxy.store.entry_store import DEFAULT_MAX_ROUNDS, EntryStore
from proxy.store.memory import DEFAULT_MAX_BYTES, DEFAULT_SESSION_BYTES, DEFAULT_TTL_SECONDS, MemoryStore

SCHEMES = ("redis", "rediss", "unix")


def check_store_url(url: str) -> str:
    """`url` when it names a store we can open; ValueError naming what is wrong otherwise."""
    if url == "memory":
        return url
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"store must be 'memory' or a redis://, rediss:// or unix:// URL, not {url!r}")
    if parts.scheme != "unix" and not parts.hostname:
        raise ValueError(f"store URL {url!r} names no host")
    return url


def open_store(url: str = "memory", max_bytes: int = DEFAULT_MAX_BYTES, session_bytes: int = DEFAULT_SESSION_BYTES,
               ttl: float = DEFAULT_TTL_SECONDS, max_rounds: int = DEFAULT_MAX_ROUNDS) -> EntryStore:
    check_store_url(url)
    if session_bytes > max_bytes:
        raise ValueError(f"a session's limit ({session_bytes} bytes) exceeds the store's ({max_bytes} bytes)")
    if url == "memory":
        return MemoryStore(max_bytes, session_bytes, ttl, max_rounds)
    from proxy.store.redis_entries import RedisEntries  # redis is imported only when used

    return EntryStore(RedisEntries(url, max_bytes, session_bytes, ttl), max_rounds)
