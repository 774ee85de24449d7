"""Large bodies kept as what they add to the body before them (the journal's memory, not its work).

An agent sends its whole conversation and tool list on every turn, so a turn's body is the one before
it with a turn added: the same bytes up to the end of the old history, then the new items, then the
same tools and settings. Keeping each body whole wrote some 110 KB per large exchange to memory the
cache no longer held, which cost more CPU than all the journal's work (scripts/bench_journal.py, the
keep-one row). So the journal keeps a body that shares most of its bytes with the last one it kept
whole on the same route (its base: the same client key, session and path) as a splice: the base
itself, how many of its first and last bytes the body begins and ends with, and the bytes between.
A body that shares too little is kept whole and becomes the base of the next ones.

A splice refers to its base, so it keeps the base alive: the journal counts the base in every
exchange whose body refers to it, and holds fewer bytes than it counts, never more. A base is
forgotten with the exchange that kept it whole (`Bases.evicted`).
"""

from typing import Any

from proxy.fast_json import held

# Bodies shorter than this are kept whole (finding what they share would cost more than it saves).
SPLICE_MIN = 8 * 1024
# A body is spliced when the bytes it adds to its base are at most this fraction of it; else it is
# kept whole and becomes the new base (an agent's history grows from its base turn after turn).
NEW_AT_MOST = 0.25
# Bases kept (routes, sessions and keys seen lately); the oldest route is forgotten first.
MAX_BASES = 256
# Common ends are found to this many bytes (the bytes between may hold up to twice this many more).
GRAIN = 64
# A splice: (base, how many first bytes, the bytes between, how many last bytes). A tuple of plain
# values, which the collector stops tracking (kept.py); a cut body's tuple has two items.
SPLICED = 4


def common_ends(new: bytes, base: bytes) -> tuple[int, int]:
    """How many first bytes `new` and `base` share, then how many last bytes they share besides
    those (the two never overlap in either), each to GRAIN bytes or exactly. A binary search in which
    each comparison is one memcmp of the bytes not compared yet (no copy)."""
    most, view = min(len(new), len(base)), memoryview(base)
    low, high = 0, most // GRAIN  # grains known alike, and at most alike
    while low < high:
        mid = (low + high + 1) // 2
        if new.startswith(view[low * GRAIN:mid * GRAIN], low * GRAIN):
            low = mid
        else:
            high = mid - 1
    head = low * GRAIN
    n, b, most = len(new), len(base), most - head
    low, high = 0, most // GRAIN
    while low < high:
        mid = (low + high + 1) // 2
        if new.endswith(view[b - mid * GRAIN:b - low * GRAIN], 0, n - low * GRAIN):
            low = mid
        else:
            high = mid - 1
    return head, low * GRAIN


def joined(spliced: tuple[bytes, int, bytes, int]) -> bytes:
    """The body a splice stands for."""
    base, head, between, tail = spliced
    return b"".join((base[:head], between, base[len(base) - tail:]))


def whole(body: Any) -> Any:
    """A kept body as it was: a splice joined, anything else as it is."""
    return joined(body) if type(body) is tuple and len(body) == SPLICED else body


class Bases:
    """The body last kept whole per route (client key, session, path, which body), which exchange kept
    it (it is forgotten with that exchange), and the common ends the last body on the route had with
    it: an agent's next body shares them too (history grows at its end, before the tools and
    settings), and checking them costs two comparisons where finding them costs some thirty."""

    __slots__ = ("_by_route", "_owner")

    def __init__(self) -> None:
        self._by_route: dict[Any, list[Any]] = {}  # route -> [base, its owner, a view of it, head, tail]
        self._owner: dict[Any, list[Any]] = {}  # exchange id -> the routes whose base it kept

    def __len__(self) -> int:
        return len(self._by_route)

    def kept(self, route: Any, body: bytes, owner: Any, copy: bool) -> tuple[Any, int]:
        """A body of SPLICE_MIN bytes or more as the journal keeps it, and the bytes it is counted for:
        a splice of the route's base (the base's bytes and its own), or the body itself (`copy`: in an
        object of its own size, byte_lru.held), which becomes the route's base."""
        size = len(body)
        by_route = self._by_route
        known = by_route.get(route)
        if known is not None:
            base, _, view, head, tail = known
            b = len(base)
            if not (size - head - tail <= size * NEW_AT_MOST and body.startswith(view[:head])
                    and body.endswith(view[b - tail:], 0, size)):
                head, tail = known[3], known[4] = common_ends(body, base)
            if size - head - tail <= size * NEW_AT_MOST:
                between = body[head:size - tail]  # (a slice is an object of its own size)
                return (base, head, between, tail), b + len(between)
            del by_route[route]  # (set again below, as the newest: MAX_BASES forgets the oldest route)
        elif len(by_route) >= MAX_BASES:
            del by_route[next(iter(by_route))]
        if copy:
            body = held(body)
        by_route[route] = [body, owner, memoryview(body), 0, 0]
        self._owner.setdefault(owner, []).append(route)
        return body, size

    def evicted(self, owner: Any) -> None:
        """The journal let go of exchange `owner`: the bases it kept whole are forgotten."""
        for route in self._owner.pop(owner, ()):
            known = self._by_route.get(route)
            if known is not None and known[1] == owner:
                del self._by_route[route]

    def clear(self) -> None:
        self._by_route.clear()
        self._owner.clear()
