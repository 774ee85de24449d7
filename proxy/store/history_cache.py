"""Whole histories of recently continued responses, kept as the JSON bytes they serialize to.

A `previous_response_id` chain is stored a turn per entry (linear memory). Rebuilding turn 500's
history meant reading and parsing 500 entries, each with its response object and input items: the
proxy's own cost grew with the chain (21 ms at turn 500 for 2 KB turns). Here a history is kept
whole, so the next turn parses one document of contents instead of walking the chain.

A cached history is trusted only while every response of its chain is still stored (one batched
check against the store: a deleted or evicted turn, here or on another instance, sends the caller
back to the walk, which reports it by name). Entries are bytes in a ByteLRU of their own, bounded
by HISTORY_CACHE_BYTES: a reader gets fresh objects (the repairs on the way to Gemini modify
contents in place), and nothing competes with the store's own budget.

One entry per chain head: a linear chain's turn replaces its parent's entry (the parent's history is
a prefix of the child's; keeping both filled the cache with near-copies of one conversation, 150
turns of 40 KB held 150 histories). A parent continued a second time (branched from, or a turn asked
again) is walked once, then kept beside its children: it is marked (BRANCH_MARKS of them) and its
entry no longer replaced.
"""

from collections import OrderedDict
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from proxy import fast_json, malloc_tuning
from proxy.store.byte_lru import ByteLRU, TooLarge
from proxy.to_gemini.conversation import Conversation

# What the cache may hold in all, at most; one history may take at most half of it. The newest heads
# of the longest chains fit (a 1 MB history 32 times), and older heads fall back to the walk. A store
# gives it a quarter of its own budget when that is less (cache_bytes): the process's memory is its
# budgets', store, journal and caches, summed (gtp_cache_bytes in /metrics).
HISTORY_CACHE_BYTES = 64 * 1024 * 1024


def cache_bytes(store_bytes: int) -> int:
    """The history cache's budget beside a store of `store_bytes`."""
    return min(HISTORY_CACHE_BYTES, store_bytes // 4)
KIND = "history"
# Parents whose entry a child replaced, remembered (an id each, about 150 bytes) so that a second
# child shows the parent is branched from; the oldest marks go first.
BRANCH_MARKS = 4096


@dataclass
class CachedHistory:
    chain: list[str]  # the response ids of the history, oldest first; the last is the one asked for
    _docs: list[bytes]

    @property
    def model(self) -> str | None:
        """The Gemini model the history was made ready for (its signatures are bound to it)."""
        return fast_json.loads(self._docs[4]) if len(self._docs) > 4 else None

    def conversation(self) -> Conversation:
        """The history as fresh objects (each call parses again: callers modify what they get)."""
        contents, system, pending = (fast_json.loads(d) for d in self._docs[1:4])
        malloc_tuning.transient(len(self._docs[1]) + len(self._docs[2]))  # freed as the request ends
        return Conversation(contents, system, pending)


class HistoryCache:
    def __init__(self, max_bytes: int = HISTORY_CACHE_BYTES, ttl: float = 3600.0,
                 clock: Callable[[], float] | None = None) -> None:
        extra = {"clock": clock} if clock is not None else {}
        self.lru = ByteLRU(max_bytes, max_bytes // 2, ttl, **extra)
        self._continued: OrderedDict[tuple[str, str], None] = OrderedDict()  # parents a child replaced
        self._branched: OrderedDict[tuple[str, str], None] = OrderedDict()  # parents continued twice

    @property
    def max_bytes(self) -> int:
        return self.lru.max_bytes

    @property
    def bytes(self) -> int:
        """What the cache holds, counted as its budget counts (for /metrics)."""
        return self.lru.total

    def _mark(self, marks: "OrderedDict[tuple[str, str], None]", key: tuple[str, str]) -> None:
        marks[key] = None
        marks.move_to_end(key)
        while len(marks) > BRANCH_MARKS:
            marks.popitem(last=False)

    def get(self, session: str, response_id: str) -> CachedHistory | None:
        found = self.lru.get((session, KIND, response_id))
        if found is None:
            return None
        return CachedHistory(fast_json.loads(found[0]), found)

    def put(self, session: str, response_id: str, chain: list[str], conv: Conversation,
            model: str | None = None) -> None:
        """Keep a history as made ready for `model`."""
        docs = [fast_json.dumps(chain), fast_json.dumps(conv.contents), fast_json.dumps(conv.system),
                fast_json.dumps(conv.pending), fast_json.dumps(model)]
        if (session, response_id) in self._continued:  # walked again after a child replaced it: a branch
            self._mark(self._branched, (session, response_id))
        self._keep(session, response_id, docs)

    def extend(self, session: str, parent: str | None, response_id: str, pending: list[str], added: list,
               system_added: list, model: str | None = None) -> None:
        """Cache the history of a new response in a chain: its parent's cached bytes with this turn's
        contents appended as bytes (the parent's history is neither parsed nor serialized again). A
        response without a cached parent, or whose parent's history was made ready for another
        model than this turn's, is left to the walk, which caches it when it is continued."""
        self.forget(session, response_id)
        before = self.lru.get((session, KIND, parent)) if parent is not None else None
        if before is None or (fast_json.loads(before[4]) if len(before) > 4 else None) != model:
            return
        added_doc, system_doc = fast_json.dumps(added), fast_json.dumps(system_added)
        if added_doc[:1] == b" " or system_doc[:1] == b" ":
            return  # written by the standard library (an integer beyond 64 bits): not spliced
        chain = [*fast_json.loads(before[0]), response_id]
        docs = [fast_json.dumps(chain), fast_json.concat_arrays(before[1], added_doc),
                fast_json.concat_arrays(before[2], system_doc), fast_json.dumps(pending), fast_json.dumps(model)]
        del before
        assert parent is not None
        if (session, parent) not in self._branched:  # a chain's head moves on: its old head goes
            self.lru.pop((session, KIND, parent))
            self._mark(self._continued, (session, parent))
        self._keep(session, response_id, docs)

    def forget(self, session: str, response_id: str) -> None:
        self.lru.pop((session, KIND, response_id))

    def _keep(self, session: str, response_id: str, docs: list[bytes]) -> None:
        if any(d[:1] == b" " for d in docs):
            return  # written by the standard library (an integer beyond 64 bits): not spliced, not kept
        with suppress(TooLarge):  # larger than the cache keeps: the chain is walked instead
            self.lru.put((session, KIND, response_id), docs)
