"""A request's history items, each parsed and checked once per client scope (issue 62).

A stateless agent (Codex with `store: false`, Claude Code, every Chat client) sends its whole history
on every turn: the turn before's items again, and a few new ones after them. In the bench's large
Responses request the history was 40 KB of 60 and most of the proxy's parse and check. So the
history's array is split into its items' texts (msgspec reads it as raw spans, building nothing),
and an item whose exact text the same client sent before gets the objects made of it then: the
parsed value, and what each route's check made of it (`checked`, by the route's own key). Only new
items are parsed, walked (the edge's depth and float test) and checked.

Kept per client scope (the client key's; one scope for a proxy without client keys): another
tenant's identical item is parsed again, and how long a request takes never tells one client what
another sent. Kept only from requests that will be sent again: not a stored chain's
(`previous_response_id`: its next turn sends only what is new). Bounded by ITEMS_CACHE_BYTES,
counted for the text and the objects made of it (gtp_cache_bytes{cache="items"}).

Nothing may change a kept item: later requests get the same objects (tests/shared_tools_check.py
checks after every test that each kept value still equals its text).
"""

from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from proxy.wire.json_body import plain_body

# The bytes the kept items are counted for, all scopes together. An agent's history of 50 turns is
# 40-100 KB of text: this keeps the histories of about fifty conversations in progress.
ITEMS_CACHE_BYTES = 8 * 1024 * 1024
# An item's count: its text twice (the bytes kept as its key, the strings parsed from it, which the
# checked copy shares), and about 700 bytes of objects per item (the entry, its key, the parsed dicts,
# a route's checked copy and typed item, its slot in the cache), measured by tests/test_resent_items.py.
TEXT_FACTOR = 2
ENTRY_OVERHEAD = 1024
# A history shorter than this is parsed with the body, as before: it costs less than its split.
RESENT_MIN_BYTES = 2048
MAX_ITEM_BYTES = 256 * 1024  # an item this large (a screenshot) is parsed every time: it would evict dozens
# Each scope's latest histories (_Recent), counted as holding their text and all their items' objects.
RECENT_BYTES = 4 * 1024 * 1024
RECENT_PER_SCOPE = 4


class Kept:
    """One item's text, parsed, and what each route's check made of it (`checked`, by the route's key)."""

    __slots__ = ("checked", "size", "value")

    def __init__(self, value: dict[str, Any], size: int) -> None:
        self.value, self.size = value, size
        self.checked: dict[Any, Any] = {}


class ResentItems(list):  # type: ignore[type-arg]
    """The history's items as parsed (a list, so every reader works as before), and each one's Kept
    (`kept`, in the same order): what a route checked of an item before is in its `checked`."""

    __slots__ = ("kept",)

    def __init__(self, kept: list[Kept]) -> None:
        super().__init__(k.value for k in kept)
        self.kept = kept


class SizedLRU:
    """Least recently used first out, by counted bytes (each value's `size`); a dict's own order is the
    recency (a hit is popped and put back: two C calls, where cachetools' LRU costs a Python call per
    lookup)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes, self.bytes = max_bytes, 0
        self.entries: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        value = self.entries.pop(key, None)
        if value is not None:
            self.entries[key] = value
        return value

    def put(self, key: Any, value: Any) -> None:
        old = self.entries.pop(key, None)
        if old is not None:
            self.bytes -= old.size
        self.entries[key] = value
        self.bytes += value.size
        while self.bytes > self.max_bytes:
            self.bytes -= self.entries.pop(next(iter(self.entries))).size

    def clear(self) -> None:
        self.entries.clear()
        self.bytes = 0


class _Recent:
    """A scope's recent history: its text, its items' Kept, where each item's text ends in it. The next
    turn's text begins with most of it (an agent appends to its history), so the items they share are
    found by comparing bytes, with no item's text copied, hashed or looked up."""

    __slots__ = ("ends", "kept", "size", "text")

    def __init__(self, text: bytes, kept: list[Kept], ends: list[int]) -> None:
        self.text, self.kept, self.ends = text, kept, ends
        # Counted as if it alone held its items' objects (the item cache counts them too: an overcount).
        self.size = (1 + TEXT_FACTOR) * len(text) + ENTRY_OVERHEAD * (len(kept) + 1)

    def shared(self, text: bytes) -> int:
        """How many leading items `text` has of this history's, exactly as written: the largest k
        whose text up to item k's end is this one's, an item's end there too (a comma or the array's
        end follows). Past the whole, item by item, each item's bytes compared once: a binary search
        compared the history's head again at each step, and a large request's 60 KB read six times
        was 8 k of its first-level data cache misses (issue 62). Within the same prefix, every item
        but the last that matched ends where this one's did, a comma after it."""
        ends, mine = self.ends, memoryview(self.text)
        if not ends or not text.startswith(mine[:ends[0]]):
            return 0
        if text.startswith(mine[:ends[-1]]) and _item_ends(text, ends[-1]):  # the whole of it, then more
            return len(ends)
        n = 1  # the items whose bytes are this history's
        while n < len(ends) and text.startswith(mine[ends[n - 1]:ends[n]], ends[n - 1]):
            n += 1
        return n if _item_ends(text, ends[n - 1]) else n - 1


class _Recents:
    """A scope's RECENT_PER_SCOPE latest histories, the latest first (an agent and its subagents
    under one client key interleave their turns)."""

    __slots__ = ("histories", "size")

    def __init__(self, histories: list[_Recent]) -> None:
        self.histories = histories
        self.size = sum(h.size for h in histories)


kept_items = SizedLRU(ITEMS_CACHE_BYTES)
recent_histories = SizedLRU(RECENT_BYTES)
_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])
_SPACE = b" \t\r\n"
_COMMA = b","[0]


def _past_blanks(text: bytes, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def _item_ends(text: bytes, end: int) -> bool:
    """Whether an item of the array `text` can end at `end`: what follows, past blanks, is `,` or `]`."""
    at = _past_blanks(text, end)
    return at < len(text) and text[at] in b",]"


def continues_stored(members: dict[str, Any]) -> bool:
    """Whether a body continues a conversation the proxy stores, whose next turn sends only what is
    new (Responses' previous_response_id, an Anthropic thread's continue): its items are not kept."""
    thread = members.get("thread")
    return bool(members.get("previous_response_id")) or (type(thread) is dict and thread.get("type") == "continue")


def parse_items(text: bytes, scope: str, keep: bool, depth: int) -> ResentItems | None:
    """The array `text` as ResentItems: the items it shares with one of the scope's recent histories
    taken from it, each other item whose text the scope sent before taken from the item cache, new
    ones parsed and, with `keep`, kept. `depth`: the nesting levels the body leaves an item (the edge's
    MAX_JSON_DEPTH less the containers around it). None when `text` is not an array of objects that
    pass the edge's fast test: the caller parses the body whole, which says what is wrong."""
    found_recents = recent_histories.get(scope)
    recents: list[_Recent] = found_recents.histories if found_recents is not None else []
    kept: list[Kept] = []
    ends: list[int] = []
    rest, at = text, 0  # the items still to read, as an array, and where they begin in `text`
    for recent in recents:
        n = recent.shared(text)
        if n:
            kept, ends = recent.kept[:n], recent.ends[:n]
            at = _past_blanks(text, ends[-1])  # the comma after the last shared item, or the array's end
            if text[at] == _COMMA:
                at += 1
                rest = b"[" + text[at:]
            else:
                rest = b"[]"
            break
    try:
        spans = _ARRAY.decode(rest)
    except msgspec.DecodeError:
        return None
    cache = kept_items
    for span in spans:
        item = bytes(span)
        key = (scope, item)
        found = cache.get(key)
        if found is None:
            try:
                value = orjson.loads(item)
            except orjson.JSONDecodeError:
                return None
            if type(value) is not dict or not plain_body(value, depth):
                return None
            found = Kept(value, TEXT_FACTOR * len(item) + ENTRY_OVERHEAD)
            if keep and len(item) <= MAX_ITEM_BYTES:
                cache.put(key, found)
        kept.append(found)
        at = _past_blanks(text, at)  # where it begins: past the blanks, the `[` or comma, the blanks
        if text[at] in b"[,":
            at = _past_blanks(text, at + 1)
        at += len(item)
        ends.append(at)
    if keep and ends:
        latest = _Recent(text, kept, ends)  # (it replaces the histories that begin with its first item)
        others = [h for h in recents if not h.text.startswith(memoryview(text)[:ends[0]])]
        if latest.size <= RECENT_BYTES // 4:
            recent_histories.put(scope, _Recents([latest, *others][:RECENT_PER_SCOPE]))
    return ResentItems(kept)


def converted[T](sent: Any, checked: list[Any], by: Any, key: str, convert: Callable[[int, Any], T]) -> list[T]:
    """`convert(i, message)` for each message the route checked (`checked`, by its check `by`), a
    resent one's made once per client scope and kept beside its check (its Kept's `checked[key]`):
    an agent's next turn sends the same messages, and their conversion to items was a tenth of a
    large Chat or Messages request's instructions. `sent`: the body's history as read (ResentItems
    when its items were split). A message is taken as kept only when it is the very object its Kept
    holds; the index only names a message in a 400, which a kept one never gives. What is kept is
    shared by the client's later requests: nothing may change it (tests/shared_tools_check.py)."""
    kept = sent.kept if type(sent) is ResentItems and len(sent.kept) == len(checked) else None
    if kept is None:
        return [convert(i, message) for i, message in enumerate(checked)]
    out = []
    for i, message in enumerate(checked):
        known = kept[i].checked
        if known.get(by) is not message:
            out.append(convert(i, message))
            continue
        done = known.get(key)
        if done is None:
            done = known[key] = convert(i, message)
        out.append(done)
    return out
