"""What a session store keeps its data in: named entries of JSON documents, bounded by bytes.

An entry is a key (session, kind, name) holding one or more documents (a conversation grows by
appending turns). Two backends give the same guarantees: `MemoryEntries` (one process, ByteLRU)
and `RedisEntries` (shared by several processes, redis_entries.py). Each method is one atomic step.
"""

from typing import Protocol

from proxy.store.byte_lru import ByteLRU, Key, TooLarge

__all__ = ["Entries", "Evicted", "Key", "MemoryEntries", "TooLarge"]


class Evicted(Exception):
    """An entry that existed was evicted to stay within the limits (not one that never existed)."""


class Entries(Protocol):
    async def get(self, key: Key) -> list[bytes] | None:
        """All documents of an entry (None: none); raises Evicted when it was evicted."""
        ...

    async def tail(self, key: Key, count: int) -> list[bytes] | None:
        """The last `count` documents (all for count < 0); None when there is no entry."""
        ...

    async def firsts(self, keys: list[Key]) -> list[bytes | None]:
        """Each entry's first document, None where there is none (evicted or never kept), in one step;
        each found entry used (its time to live starts again). The keys are one session's."""
        ...

    async def put(self, key: Key, docs: list[bytes]) -> None:
        """Replace an entry; raises TooLarge when it exceeds a session's budget."""
        ...

    async def append(self, key: Key, doc: bytes, keep: int = 0, fresh: bool = True) -> None:
        """Add one document (keeping the last `keep` when keep > 0). With fresh=False an evicted entry
        raises Evicted instead of starting again (a conversation's later turn)."""
        ...

    async def pop(self, key: Key) -> bool:
        """Forget an entry; False when there was none."""
        ...

    async def alive(self, keys: list[Key]) -> bool:
        """Whether every entry is present (each used: its time to live starts again), in one step."""
        ...


class MemoryEntries:
    """Entries in this process's memory (the embedded default)."""

    def __init__(self, lru: ByteLRU) -> None:
        self.lru = lru

    @property
    def entry_limit(self) -> int:
        """The most bytes one entry (one session's whole budget) may hold."""
        return self.lru.session_bytes

    async def get(self, key: Key) -> list[bytes] | None:
        found = self.lru.get(key)
        if found is None and self.lru.evicted(key):
            raise Evicted(key)
        return found

    async def tail(self, key: Key, count: int) -> list[bytes] | None:
        found = self.lru.get(key)
        if found is None:
            return None
        return found[-count:] if count > 0 else (found if count < 0 else [])

    async def firsts(self, keys: list[Key]) -> list[bytes | None]:
        get = self.lru.get
        return [found[0] if found else None for found in map(get, keys)]

    async def put(self, key: Key, docs: list[bytes]) -> None:
        self.lru.put(key, docs)

    async def append(self, key: Key, doc: bytes, keep: int = 0, fresh: bool = True) -> None:
        if not fresh and self.lru.get(key) is None and self.lru.evicted(key):
            raise Evicted(key)
        self.lru.append(key, doc, keep)

    async def alive(self, keys: list[Key]) -> bool:
        get = self.lru.get
        return all(get(k) is not None for k in keys)

    async def usage(self) -> tuple[int, int]:
        """(bytes, entries) kept."""
        return self.lru.total, len(self.lru)

    async def pop(self, key: Key) -> bool:
        found = self.lru.get(key) is not None
        self.lru.pop(key)
        return found
