"""JSON on hot paths: orjson (several times faster than the standard library), with the standard
library for what orjson cannot do exactly.

orjson refuses to write integers beyond 64 bits, and reads them back as floats. `dumps` then
writes with the standard library and marks the text with a leading space (still JSON), so `loads`
reads it back with the standard library and every digit survives. Text from elsewhere (Gemini's
answers: its numbers are protobuf doubles anyway) is read by orjson.
"""

import asyncio
import json
from typing import Any

import orjson

# An answer at least this large is parsed a slice at a time, the event loop serving other requests
# between slices (orjson, like every JSON parser, holds the GIL for a whole parse: a 100 MB answer
# stopped everything for over a second, in a thread as on the loop).
LARGE = 8 << 20
SLICE = 256 << 10


def held(doc: bytes | memoryview) -> bytes:
    """The document in an object of its own size: orjson's output keeps its whole 8 KiB working
    buffer (a 1.7 KB answer held 8 KB), which made the process hold several times the budget.
    A join of two parts always makes a new object (of one, it may hand back the part itself); it
    takes half the instructions memoryview.tobytes() did."""
    return b"".join((doc, b""))


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON bytes."""
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        return b" " + json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    if data[:1] in (b" ", " "):
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # raises the standard library's error when it is really not JSON


async def loads_cooperatively(data: bytes) -> Any:
    """`loads` for an answer read whole; a large one is parsed by ijson's C backend a slice at a time,
    yielding to the loop after each (several times slower than orjson, but no request waits on it)."""
    if len(data) < LARGE or data[:1] == b" ":
        return loads(data)
    import ijson  # here, not at start-up (about 30 ms): only answers this large need it

    values: list[Any] = []

    def sink() -> Any:
        while True:
            values.append((yield))

    target = sink()
    next(target)
    parser = ijson.items_coro(target, "", use_float=True)
    view = memoryview(data)
    try:
        for start in range(0, len(data), SLICE):
            parser.send(bytes(view[start:start + SLICE]))
            await asyncio.sleep(0)
        parser.close()
    except ijson.JSONError:
        return loads(data)  # what ijson cannot read (an integer past 64 bits): parsed whole, or the error
    if len(values) != 1:
        return loads(data)  # not one JSON value: the standard error
    return values[0]


def concat_arrays(a: bytes, b: bytes) -> bytes:
    """Two JSON arrays' texts as one array's (neither parsed). Text the standard library wrote (a
    leading space) is the caller's to keep out: spliced into orjson's, it would be read back by orjson."""
    pieces = array_pieces(a, b)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def array_pieces(a: bytes, b: bytes) -> tuple[bytes | memoryview, ...]:
    """concat_arrays' result as pieces for a join (nothing copied yet)."""
    if a == b"[]":
        return (b,)
    return (a,) if b == b"[]" else (memoryview(a)[:-1], b",", memoryview(b)[1:])


def clone(value: Any) -> Any:
    """A deep copy of a JSON value, by a round trip (several times faster than copy.deepcopy)."""
    return loads(dumps(value))


def copied(value: Any) -> Any:
    """A deep copy of a parsed JSON value: its dicts and lists copied, its leaves (strings, numbers, an
    integer of any size) shared, as they cannot change. copy.deepcopy's memo and per-type dispatch took
    7.6 us for an answer's one text part, on every answer; this takes a tenth of that. (clone's round
    trip builds every string again; this shares them.)"""
    if type(value) is dict:
        return {k: copied(v) if type(v) in _CONTAINERS else v for k, v in value.items()}
    if type(value) is list:
        return [copied(v) if type(v) in _CONTAINERS else v for v in value]
    return value


_CONTAINERS = (dict, list)
