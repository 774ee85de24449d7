"""JSON on hot paths: orjson (several times faster than the standard library), with the standard
library as the fallback for what orjson refuses (integers beyond 64 bits, which clients may send)."""

import json
from typing import Any

import orjson


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON bytes."""
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # raises the standard library's error when it is really not JSON


def clone(value: Any) -> Any:
    """A deep copy of a JSON value, by a round trip (several times faster than copy.deepcopy)."""
    return loads(dumps(value))
