"""A request's `tools`, parsed and checked once per distinct text (issue 27).

An agent sends the same tool list on every turn. In the bench's large request, 20 tools were 9 KB
of 54 KB but most of its parse (34 of 55 us: thousands of small objects, against 19 us for 44 KB of
history), then a 35 us check against the wire model and a 16 us dump to find their prepared
declarations (prepare_tools). So a body is split at its top level (msgspec reads it as raw spans,
building no object per key): a tools text seen before comes from here, parsed and checked, and only
the rest of the body is parsed.

The value is shared by every request that sends the same text, whatever its client key: nothing may
change it (tests/conftest.py checks after every test that each kept value still equals its text).
Only routes that read their tools without changing them ask for it (Responses, Chat, Anthropic
Messages, and Gemini's REST generateContent).
"""

from collections.abc import Callable
from typing import Any

from proxy.errors import ProxyError
from proxy.wire import resent_items
from proxy.wire.json_body import MAX_JSON_DEPTH, split_members
from proxy.wire.resent_items import continues_stored, parse_items

# Tools texts kept, by their length (their objects take about ten times as much). A text longer
# than this is parsed every time.
CACHE_BYTES = 1024 * 1024


class SharedTools(list):  # type: ignore[type-arg]
    """The tools of a text seen before: a list, so every reader works as before, and what was
    worked out from it once -- the checked value per wire model (`checked`), and what a route learns
    of the text itself (`facts`: the key of its prepared declarations per preparation, prepare_tools;
    its conversion cache key and its spelling, Gemini-native)."""

    __slots__ = ("checked", "facts", "text")

    def __init__(self, value: list[Any], text: bytes) -> None:
        super().__init__(value)
        self.text = text
        self.checked: dict[type, Any] = {}
        self.facts: dict[Any, Any] = {}


_NONE = object()  # (pop without a default: a missing text is a KeyError)


class _KeptTools:
    """The tools texts kept, CACHE_BYTES of them at most (the least recently used length first out),
    found by their length and then compared: keyed by the text itself, every request hashed all of it
    (siphash: 8 us for Claude Code's 45 KB, before a lookup compared it too), where a length is an int
    and a comparison one memcmp that stops at the first byte apart. A mapping of text to SharedTools."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes, self.bytes = max_bytes, 0
        self._by_length: dict[int, list[SharedTools]] = {}  # least recently used first; each list too, last

    def get(self, text: bytes) -> "SharedTools | None":
        bucket = self._by_length.pop(len(text), None)
        if bucket is None:
            return None
        self._by_length[len(text)] = bucket
        i = _index(bucket, text)
        if i is None:
            return None
        if i:
            bucket.insert(0, bucket.pop(i))
        return bucket[0]

    def __setitem__(self, text: bytes, value: "SharedTools") -> None:
        self.pop(text, None)
        bucket = self._by_length.pop(len(text), [])  # (its length the most recently used now, as get makes it)
        bucket.insert(0, value)
        self._by_length[len(text)] = bucket
        self.bytes += len(text)
        while self.bytes > self.max_bytes:
            length = next(iter(self._by_length))
            bucket = self._by_length[length]
            bucket.pop()
            self.bytes -= length
            if not bucket:
                del self._by_length[length]

    def __getitem__(self, text: bytes) -> "SharedTools":
        kept = self.get(text)
        if kept is None:
            raise KeyError(text[:100])
        return kept

    def __contains__(self, text: object) -> bool:
        return type(text) is bytes and self.get(text) is not None

    def pop(self, text: bytes, default: Any = _NONE) -> Any:
        bucket = self._by_length.get(len(text)) or []
        i = _index(bucket, text)
        if i is not None:
            kept = bucket.pop(i)
            self.bytes -= len(text)
            if not bucket:
                del self._by_length[len(text)]
            return kept
        if default is _NONE:
            raise KeyError(text[:100])
        return default

    def items(self) -> list[tuple[bytes, "SharedTools"]]:
        return [(kept.text, kept) for bucket in self._by_length.values() for kept in bucket]

    def clear(self) -> None:
        self._by_length.clear()
        self.bytes = 0


def _index(bucket: list["SharedTools"], text: bytes) -> int | None:
    """Where `text`'s SharedTools is in a bucket of texts of its length, or None."""
    return next((i for i, kept in enumerate(bucket) if kept.text == text), None)


_kept = _KeptTools(CACHE_BYTES)


def parse_with_tools(raw: bytes, parse: Callable[[bytes], Any], items: tuple[str, str] | None = None) -> Any:
    """The body as `parse` gives it, its `tools` (when a list) a SharedTools: the kept one when this
    text was seen before (then only the rest of the body is parsed), else a new one kept from now on.
    `parse` refuses what it must for the whole body; a tools text is kept only once it passed.
    `items`: (the member holding the history, the client's scope): its items are ResentItems
    (wire/resent_items.py), each text this scope sent before parsed no more."""
    # (a search for '"tools"' first would take as long: 20 us)
    split = split_members(raw, {"tools": 0} if items is None else {"tools": 0, items[0]: resent_items.RESENT_MIN_BYTES})
    if split is None:
        return parse(raw)
    order, rest, values = split
    text = values.get("tools")
    kept = _kept.get(text) if text is not None else None
    if text is not None and kept is None:  # new tools: the whole body is parsed, and they are kept
        body = parse(raw)
        tools = body.get("tools") if isinstance(body, dict) else None
        if type(tools) is list and len(text) <= CACHE_BYTES:
            body["tools"] = _kept[text] = SharedTools(tools, text)
        return body
    history = values.get(items[0]) if items is not None else None
    if history is None:
        if kept is None:
            return parse(raw)
        members = parse(rest)  # an object (it was one member short of the body's)
        return {key: kept if key == "tools" else members[key] for key in order}  # the body's order
    try:
        members = parse(rest)
    except ProxyError:
        return parse(raw)  # the whole body's first error, as a body parsed whole names it
    member, scope = items  # type: ignore[misc]
    resent = parse_items(history, scope, not continues_stored(members), MAX_JSON_DEPTH - 2)
    if resent is None:
        return parse(raw)
    return {key: kept if key == "tools" else resent if key == member else members[key] for key in order}
