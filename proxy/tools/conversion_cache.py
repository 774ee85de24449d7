"""Converted tool declarations cached by content: agents send the same tools on every turn, and
converting their schemas again (JSON Schema -> Gemini's subset, repairs) was an eighth of a large
request's time. Keyed by a hash of the tools' JSON and the options; a hit hands out a fresh copy
(orjson round trip), so no caller can change what the next request gets. A conversion that changed
nothing (the same JSON bytes: apps that speak Gemini send tools it takes as they are) is kept as
such, and a hit hands the caller back its own value: no copy to make, and none shared."""

import hashlib
from collections.abc import Callable
from typing import Any

from cachetools import LRUCache

from proxy import fast_json

MAX_ENTRIES = 512  # distinct tool sets per process: many agents, each with a few sets
_UNCHANGED = b""  # kept for a conversion whose result serializes as its input did


def content_digest(value: Any, digests: dict | None = None, key: Any = None) -> bytes | None:
    """A cache key for `value`'s content (None when it is not JSON). `digests`: where the value it is
    worked out from keeps it under `key`, so that it is worked out once (a list shared by every
    request that sends the same text: wire/shared_tools.py)."""
    digest = digests.get(key) if digests is not None else None
    if digest is None:
        try:
            digest = hashlib.blake2b(fast_json.dumps(value), digest_size=16).digest()
        except TypeError:
            return None
        if digests is not None:
            digests[key] = digest
    return digest


class ConversionCache:
    def __init__(self, size: int = MAX_ENTRIES) -> None:
        self._entries: LRUCache[bytes, bytes] = LRUCache(size)

    def get(self, value: Any, options: tuple, convert: Callable[[], Any], digests: dict | None = None) -> Any:
        """`convert()`'s JSON-able result for `value` and `options`, converted once per content.
        `digests`: where `value` itself keeps its key per options, worked out once (a SharedTools's
        facts: the same text is the same content)."""
        digest = content_digest([value, list(options)], digests, ("conversion", options))
        if digest is None:
            return convert()
        kept = self._entries.get(digest)
        if kept is None:
            result = convert()
            kept = fast_json.dumps(result)
            self._entries[digest] = _UNCHANGED if kept == fast_json.dumps(value) else kept
            return result
        return value if kept == _UNCHANGED else fast_json.loads(kept)
