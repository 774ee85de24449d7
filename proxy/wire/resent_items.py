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


class _Cache:
    """Least recently used first out, by counted bytes; a dict's own order is the recency (a hit is
    popped and put back: two C calls, where cachetools' LRU costs a Python call per lookup)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes, self.bytes = max_bytes, 0
        self.entries: dict[tuple[str, bytes], Kept] = {}

    def get(self, key: tuple[str, bytes]) -> Kept | None:
        kept = self.entries.pop(key, None)
        if kept is not None:
            self.entries[key] = kept
        return kept

    def put(self, key: tuple[str, bytes], kept: Kept) -> None:
        old = self.entries.pop(key, None)
        if old is not None:
            self.bytes -= old.size
        self.entries[key] = kept
        self.bytes += kept.size
        while self.bytes > self.max_bytes:
            self.bytes -= self.entries.pop(next(iter(self.entries))).size

    def clear(self) -> None:
        self.entries.clear()
        self.bytes = 0


kept_items = _Cache(ITEMS_CACHE_BYTES)


def continues_stored(members: dict[str, Any]) -> bool:
    """Whether a body continues a conversation the proxy stores, whose next turn sends only what is
    new (Responses' previous_response_id, an Anthropic thread's continue): its items are not kept."""
    thread = members.get("thread")
    return bool(members.get("previous_response_id")) or (type(thread) is dict and thread.get("type") == "continue")
_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])


def parse_items(text: bytes, scope: str, keep: bool, depth: int) -> ResentItems | None:
    """The array `text` as ResentItems, each item's text the same client scope sent before taken
    from the cache; new ones are parsed and, with `keep`, kept. `depth`: the nesting levels the body
    leaves an item (the edge's MAX_JSON_DEPTH less the containers around it). None when `text` is not
    an array of objects that pass the edge's fast test: the caller parses the body whole, which says
    what is wrong."""
    try:
        spans = _ARRAY.decode(text)
    except msgspec.DecodeError:
        return None
    cache, out = kept_items, []
    for span in spans:
        item = bytes(span)
        key = (scope, item)
        kept = cache.get(key)
        if kept is None:
            try:
                value = orjson.loads(item)
            except orjson.JSONDecodeError:
                return None
            if type(value) is not dict or not plain_body(value, depth):
                return None
            kept = Kept(value, TEXT_FACTOR * len(item) + ENTRY_OVERHEAD)
            if keep and len(item) <= MAX_ITEM_BYTES:
                cache.put(key, kept)
        out.append(kept)
    return ResentItems(out)
