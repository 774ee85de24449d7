"""`--store`: where session state lives. `memory` (the default: this process only) or a Redis URL
(`redis://HOST:PORT/DB`, `rediss://` for TLS, `unix:///path`) shared by several instances."""

from urllib.parse import urlsplit

from proxy.store.entry_store import DEFAULT_MAX_ROUNDS, EntryStore
from proxy.store.memory import DEFAULT_MAX_BYTES, DEFAULT_SESSION_BYTES, DEFAULT_TTL_SECONDS, MemoryStore

SCHEMES = ("redis", "rediss", "unix")


def redacted(url: str) -> str:
    """The URL without its user and password, for messages and logs."""
    parts = urlsplit(url)
    if not parts.password and not parts.username:
        return url
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"***@{host}").geturl()


def check_store_url(url: str) -> str:
    """`url` when it names a store we can open; ValueError naming what is wrong otherwise."""
    if url == "memory":
        return url
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"store must be 'memory' or a redis://, rediss:// or unix:// URL, not {redacted(url)!r}")
    if parts.scheme != "unix" and not parts.hostname:
        raise ValueError(f"store URL {redacted(url)!r} names no host")
    if parts.scheme == "unix" and not parts.path.strip("/"):  # redis-py would try to connect to '' for ever
        raise ValueError(f"store URL {redacted(url)!r} names no socket path: unix:///path/to/redis.sock")
    db = parts.path.strip("/") if parts.scheme != "unix" else ""
    if db and not db.isdigit():
        raise ValueError(f"store URL {redacted(url)!r}: the database after the host must be a number such as /0, "
                         f"not {db!r}")
    try:
        parts.port  # noqa: B018 -- reading it validates it
    except ValueError:
        raise ValueError(f"store URL {redacted(url)!r} has an invalid port") from None
    return url


def open_store(url: str = "memory", max_bytes: int = DEFAULT_MAX_BYTES, session_bytes: int = DEFAULT_SESSION_BYTES,
               ttl: float = DEFAULT_TTL_SECONDS, max_rounds: int = DEFAULT_MAX_ROUNDS) -> EntryStore:
    check_store_url(url)
    if session_bytes > max_bytes:
        raise ValueError(f"a session's limit ({session_bytes} bytes) exceeds the store's ({max_bytes} bytes)")
    if url == "memory":
        return MemoryStore(max_bytes, session_bytes, ttl, max_rounds)
    from proxy.store.history_cache import cache_bytes
    from proxy.store.redis_entries import RedisEntries  # redis is imported only when used

    return EntryStore(RedisEntries(url, max_bytes, session_bytes, ttl), max_rounds, cache_bytes(max_bytes))
