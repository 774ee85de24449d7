"""One camelCase spelling for Gemini request bodies, applied where a body enters.

Gemini's JSON is proto JSON: every field may be sent as `function_call` or `functionCall` (Google's
own curl samples use snake_case). The core only ever sees camelCase. Values that are data, not
structure — call arguments, function results, schemas, labels — pass through byte for byte.
"""

import re
from typing import Any

import orjson

from proxy.wire.json_body import BIG_FLOAT, MAX_JSON_DEPTH, parse_json
from proxy.wire.shared_tools import SharedTools

# Fields whose value is the caller's data (or a schema in its own dialect): never renamed inside.
OPAQUE = frozenset({"args", "response", "parameters", "parametersJsonSchema", "responseSchema",
                    "responseJsonSchema", "labels", "metadata"})
_SNAKE = re.compile(r"_([a-z0-9])")


def camel(key: str) -> str:
    return _SNAKE.sub(lambda m: m.group(1).upper(), key) if "_" in key and key[:1].isalpha() else key


def to_camel_request(body: dict[str, Any]) -> dict[str, Any]:
    """A Gemini request (or any part of one) with structural keys in camelCase: the body itself
    when it holds none in snake_case (most clients send camelCase; copying a long history for
    nothing cost a tenth of the addon's time), else a copy.

    Where both spellings of a field are sent, the camelCase one wins (proto JSON would refuse the
    duplicate; keeping one is the lenient choice a proxy can make)."""
    tools = body.get("tools") if type(body) is dict else None
    if type(tools) is SharedTools and not _shared_snake_free(tools):
        body = {**body, "tools": list(tools)}  # spelt in snake_case: walked (so copied) as any list is
    # A SharedTools left in the body is not a `list` to _snake_free: its spelling was learnt above.
    return body if _snake_free(body) else _walk(body)  # type: ignore[return-value]


def _shared_snake_free(tools: SharedTools) -> bool:
    """_snake_free of tools shared by their text (wire/shared_tools.py), walked once per text."""
    free = tools.facts.get("snake_free")
    if free is None:
        free = tools.facts["snake_free"] = _snake_free(list(tools))
    return free


def _snake_free(node: Any, budget: int = 64) -> bool:
    """No structural key holds an underscore (so the walk below would change nothing). Recursive
    (half the time of a loop over an explicit stack); past `budget` levels the rest is walked by
    _snake_free_deep, so no body is too deep for it."""
    if budget == 0:
        return _snake_free_deep(node)
    kind = type(node)
    if kind is dict:
        for key, value in node.items():
            if "_" in key:
                return False
            kind = type(value)
            if (kind is dict or kind is list) and key not in OPAQUE and not _snake_free(value, budget - 1):
                return False
    elif kind is list:
        for value in node:
            kind = type(value)
            if (kind is dict or kind is list) and not _snake_free(value, budget - 1):
                return False
    return True


def _snake_free_deep(node: Any) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is dict:
            for key, value in n.items():
                if "_" in key:
                    return False
                if (type(value) is dict or type(value) is list) and key not in OPAQUE:
                    stack.append(value)
        elif type(n) is list:
            stack.extend(v for v in n if type(v) is dict or type(v) is list)
    return True


def parse_camel(raw: bytes) -> Any:
    """`to_camel_request(parse_json(raw))`, with the one walk over the parsed value doing both the
    limits' check (json_body._plain) and the spelling's (_snake_free): an agent's history of calls
    was walked twice, once for each (about 35 us each on a 50-turn history). Whatever either check
    refuses takes their own path, which says why."""
    try:
        value = orjson.loads(raw)
        free = _plain_snake_free(value, MAX_JSON_DEPTH, True)
    except (orjson.JSONDecodeError, _NotPlain):
        return to_camel_request(parse_json(raw))
    return value if free else _walk(value)


class _NotPlain(Exception):
    """A value json_body._plain refuses (nested past MAX_JSON_DEPTH, a float that may have been a
    big integer): parse_json's standard path reads it."""


def _plain_snake_free(node: Any, budget: int, keys: bool) -> bool:
    """json_body._plain (raising _NotPlain where it answers False) and, while `keys`, _snake_free:
    every value is walked (for the limits), keys only outside OPAQUE values (for the spelling)."""
    if budget == 0:
        raise _NotPlain
    free = True
    if type(node) is dict:
        for key, value in node.items():
            if keys and "_" in key:
                free = keys = False
            kind = type(value)
            if kind is str:
                continue
            if kind is dict or kind is list:
                if not _plain_snake_free(value, budget - 1, keys and key not in OPAQUE):
                    free = keys = False
            elif kind is float and not -BIG_FLOAT < value < BIG_FLOAT:
                raise _NotPlain
        return free
    for value in node if type(node) is list else (node,):
        kind = type(value)
        if kind is str:
            continue
        if kind is dict or kind is list:
            if not _plain_snake_free(value, budget - 1, keys):
                free = keys = False
        elif kind is float and not -BIG_FLOAT < value < BIG_FLOAT:
            raise _NotPlain
    return free


def _walk(node: Any) -> Any:
    if isinstance(node, list):
        return [_walk(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        name = camel(key)
        if name in out and name != key:
            continue  # the camelCase spelling was already there: it wins
        out[name] = value if name in OPAQUE else _walk(value)
    return out
