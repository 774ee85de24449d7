"""A journal entry as the shared journal keeps it in Redis (shared.py): scrubbed of secrets, packed
into one JSON document, and made an entry again by whichever instance reads it.

Publishing the entry itself, not its rendered document, keeps the journal's rule on Redis too: an
exchange is made into a document only when someone reads it (ring.py). Rendering every exchange as
it was published (its summary, its details, the document's scrub) cost 170 us per small exchange,
about a fifth of the proxy's CPU per request; packing and scrubbing an entry costs a fraction.

Nothing leaves the process before it is scrubbed, by the same three nets as a document (redact.py):
credential headers lose their values by name, the path its query key, and the whole packed entry is
scrubbed of the known secrets (the proxy's and the key the request presented) and credential shapes.
The exchange's own list of secrets is blanked. Bytes that are UTF-8 (nearly every body) are packed as
text, so a secret in them is found by its own bytes; others are scrubbed before they are packed.
"""

from typing import Any

import orjson

from proxy import ids
from proxy.journal import redact
from proxy.journal.exchange import identity
from proxy.journal.kept import _FROZEN, FILTERS, FROZEN
from proxy.journal.redact import Redactor

# Where the fields pack() changes are in an entry (FROZEN's start, then _FROZEN's order).
_AT = {name: FROZEN.start + i for i, name in enumerate(_FROZEN)}
_ID, _PATH, _SECRETS, _IDENTIFIED, _TRACE = (_AT["id"], _AT["path"], _AT["secrets"], _AT["identified"],
                                             _AT["traceparent"])
_HEADERS = (_AT["request_headers"], _AT["answer_headers"])
_REDACTED = redact.REDACTED


class Unpackable(ValueError):
    """What Redis held is not an entry this version packed."""


def pack(kept: tuple, redactor: Redactor) -> tuple[str, bytes, bytes]:
    """An entry (kept.seal) as the shared journal keeps it: its exchange's id, its brief (what the list
    filters on) and the whole entry, both scrubbed of secrets."""
    values = list(kept)
    number = values[_ID]
    values[_ID] = name = ids.exchange_id(number) if type(number) is int else number  # another instance reads it
    secrets = list(values[_SECRETS] or ())
    if not values[_IDENTIFIED]:  # what identify() would learn, learnt now: the key and the trace
        key, values[_PATH], values[_TRACE] = identity(values[_HEADERS[0]], values[_PATH])
        if key:
            secrets.append(key)
        values[_IDENTIFIED] = True
    values[_SECRETS] = ()
    for at in _HEADERS:
        values[at] = _without_credentials(values[at])
    kinds = []
    for i, value in enumerate(values):
        kind = type(value)
        if kind is bytes:
            kinds.append("b")
            values[i] = _text(value, redactor, secrets)
        elif kind is tuple and len(value) == 2 and type(value[1]) is bytes:  # (whole size, head): a cut body
            kinds.append("h")
            values[i] = [value[0], _text(value[1], redactor, secrets)]
        else:
            kinds.append("v")
    brief = redactor.scrub(orjson.dumps(values[FILTERS]), secrets)
    return name, brief, redactor.scrub(orjson.dumps(["".join(kinds), *values]), secrets)


def unpack(packed: bytes) -> tuple:
    """The entry pack() was given, scrubbed (raises Unpackable for anything else)."""
    try:
        kinds, *values = orjson.loads(packed)
        if type(kinds) is not str or len(kinds) != len(values):
            raise Unpackable("not a packed entry")
        for i, kind in enumerate(kinds):
            if kind == "b":
                values[i] = _bytes(values[i])
            elif kind == "h":
                size, head = values[i]
                values[i] = (size, _bytes(head))
            elif kind != "v":
                raise Unpackable(f"unknown kind {kind!r}")
    except (orjson.JSONDecodeError, TypeError, ValueError) as e:
        raise Unpackable(str(e)) from e
    return tuple(values)


def _text(data: bytes, redactor: Redactor, secrets: list[str]) -> str:
    """Bytes as packed: UTF-8 as its text ("u" in front), anything else scrubbed now and as latin-1
    ("l"), each byte one character."""
    try:
        return "u" + data.decode()
    except UnicodeDecodeError:
        return "l" + redactor.scrub(data, secrets).decode("latin-1")


def _bytes(text: str) -> bytes:
    if text[:1] == "u":
        return text[1:].encode()
    if text[:1] == "l":
        return text[1:].encode("latin-1")
    raise Unpackable("bytes packed neither as UTF-8 nor latin-1")


def _without_credentials(block: Any) -> Any:
    """A kept block of headers (kept.kept_headers) with the values of credential headers replaced."""
    if not block:
        return block
    text = block.decode("utf-8", "replace") if type(block) is bytes else block
    lines = text.split("\n")
    for i in range(0, len(lines) - 1, 2):
        if lines[i].lower() in redact.SECRET_HEADERS:
            lines[i + 1] = _REDACTED
    return "\n".join(lines)


__all__ = ["Unpackable", "pack", "unpack"]
