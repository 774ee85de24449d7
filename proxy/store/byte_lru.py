"""A least-recently-used map bounded by bytes, per session and in total, with expiry.

Entries are serialized JSON (bytes), each held in an object of its own size and counted with what
holding it costs (ENTRY_OVERHEAD, DOC_OVERHEAD): the process holds about what the budget says. A
reader always gets its own copy, and nothing is kept twice as Python objects (which take 2-3x their
JSON size). Over a budget, the
least recently used entries go — first the session's own, then anyone's. Every eviction leaves a
tombstone (bounded in count), so the store can say "was evicted" instead of "never existed".
"""

import time
from collections import OrderedDict
from collections.abc import Callable

from proxy.fast_json import held

Key = tuple[str, str, str]  # (session, kind, key)
# Tombstones of evicted entries ("was evicted" instead of "never existed"), about 300 bytes each:
# at most one per 4 KiB of budget (so they stay a small part of what the process holds), and never
# more than this many.
MAX_TOMBSTONES = 100_000
# What an entry holds besides its documents' bytes, counted against the budgets so that the process
# holds about what the budget says: the entry, its key tuple and strings, its slots in the LRU maps
# and its list (measured: about 400 bytes), and each document's bytes-object header.
ENTRY_OVERHEAD = 400
DOC_OVERHEAD = 40


def _size(key: Key, value: tuple[bytes, ...]) -> int:
    return ENTRY_OVERHEAD + sum(map(len, key)) + sum(len(v) + DOC_OVERHEAD for v in value)


class TooLarge(Exception):
    """One entry larger than a session's whole budget. Raised before anything changes: what the
    entry held stays as it was (a turn too large to keep never costs the conversation before it)."""


# An entry: (its documents, the bytes it is counted for, when it expires). One JSON document or more
# (a conversation grows by appending turns). A tuple of bytes, numbers and a tuple of bytes: the
# garbage collector stops tracking it after one pass; as a dataclass and a list, every entry of every
# session was two more objects each of its collections walked (one per stored response). A change
# makes a new tuple.
_Entry = tuple[tuple[bytes, ...], int, float]
VALUE, SIZE, EXPIRES = 0, 1, 2


class ByteLRU:
    def __init__(self, max_bytes: int, session_bytes: int, ttl: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_bytes, self.session_bytes, self.ttl, self.clock = max_bytes, session_bytes, ttl, clock
        self.max_tombstones = min(MAX_TOMBSTONES, max(1024, max_bytes // 4096))
        self._all: OrderedDict[Key, _Entry] = OrderedDict()
        self._sessions: dict[str, OrderedDict[Key, None]] = {}
        self._session_size: dict[str, int] = {}
        self.total = 0
        self._tombstones: OrderedDict[Key, None] = OrderedDict()

    def get(self, key: Key) -> list[bytes] | None:
        """The entry's documents (a list of its own), or None; its time to live starts again."""
        entry = self._all.get(key)
        if entry is None:
            return None
        now = self.clock()
        if entry[EXPIRES] <= now:
            self._drop(key, tombstone=False)
            return None
        self._all[key] = (entry[VALUE], entry[SIZE], now + self.ttl)
        self._all.move_to_end(key)
        self._sessions[key[0]].move_to_end(key)
        return list(entry[VALUE])

    def put(self, key: Key, value: list[bytes]) -> None:
        value = tuple(held(v) for v in value)
        size = _size(key, value)
        if size > self.session_bytes:
            raise TooLarge(f"{size} bytes is more than a session may keep ({self.session_bytes} bytes)")
        self._drop(key, tombstone=False)
        self._tombstones.pop(key, None)
        self._expire()
        session = key[0]
        self._all[key] = (value, size, self.clock() + self.ttl)
        self._sessions.setdefault(session, OrderedDict())[key] = None
        self._session_size[session] = self._session_size.get(session, 0) + size
        self.total += size
        self._evict(key)

    def append(self, key: Key, doc: bytes, keep: int = 0) -> None:
        """Add a document to an entry (a new entry if there is none); with keep > 0 only the last
        `keep` documents stay; refused (TooLarge) with the entry untouched. Costs the new document,
        not the entry's size (the entry's tuple of documents is copied, not their bytes)."""
        entry = self._all.get(key)
        if entry is None or entry[EXPIRES] <= self.clock():
            self.put(key, [doc])
            return
        value = (*entry[VALUE], held(doc))
        grown = len(doc) + DOC_OVERHEAD
        if 0 < keep < len(value):
            grown -= sum(len(d) + DOC_OVERHEAD for d in value[:-keep])
            value = value[-keep:]
        size = entry[SIZE] + grown
        if size > self.session_bytes:
            raise TooLarge(f"{size} bytes is more than a session may keep ({self.session_bytes} bytes)")
        self._all[key] = (value, size, self.clock() + self.ttl)
        self._session_size[key[0]] += grown
        self.total += grown
        self._all.move_to_end(key)
        self._sessions[key[0]].move_to_end(key)
        self._evict(key)

    def __len__(self) -> int:
        return len(self._all)

    def evicted(self, key: Key) -> bool:
        return key in self._tombstones

    def pop(self, key: Key) -> None:
        self._drop(key, tombstone=False)

    def session_size(self, session: str) -> int:
        return self._session_size.get(session, 0)

    def _expire(self) -> None:
        """Drop expired entries: the least recently used come first, so they are at the front."""
        now = self.clock()
        while self._all:
            key, entry = next(iter(self._all.items()))
            if entry[EXPIRES] > now:
                break
            self._drop(key, tombstone=False)

    def _evict(self, keep: Key) -> None:
        session = keep[0]
        mine = self._sessions[session]
        while self._session_size[session] > self.session_bytes:
            oldest = next(k for k in mine if k != keep)
            self._drop(oldest, tombstone=True)
        while self.total > self.max_bytes:
            oldest = next(k for k in self._all if k != keep)
            self._drop(oldest, tombstone=True)

    def _drop(self, key: Key, tombstone: bool) -> None:
        entry = self._all.pop(key, None)
        if entry is None:
            return
        session = key[0]
        del self._sessions[session][key]
        self._session_size[session] -= entry[SIZE]
        self.total -= entry[SIZE]
        if not self._sessions[session]:
            del self._sessions[session], self._session_size[session]
        if tombstone:
            self._tombstones[key] = None
            while len(self._tombstones) > self.max_tombstones:
                self._tombstones.popitem(last=False)
