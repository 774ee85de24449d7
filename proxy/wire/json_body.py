"""Parse a request body as JSON with named limits, so nothing past the edge meets a shape that
breaks it: nesting depth, lone UTF-16 surrogates (they cannot be encoded for the upstream body).

A violation is a ProxyError (400) naming the field; the shell renders it in the caller's protocol.
"""

import json
import math
import re
from collections.abc import Callable
from typing import Any

import orjson

from proxy.errors import ProxyError

# Nesting depth of a request body. Gemini parses JSON into protobuf, whose default recursion limit
# is 100 (google.protobuf: kDefaultRecursionLimit); anything deeper could never reach the model.
# Python's own json parser fails with RecursionError near 1,000 levels, which used to be a 500.
MAX_JSON_DEPTH = 100

BAD_JSON = ("We could not parse the JSON body of your request. The proxy expects a JSON payload, but what was "
            "sent was not valid JSON.")
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
# A surrogate written raw, as its (invalid) UTF-8 bytes ED A0..BF xx: json.loads on bytes decodes
# with "surrogatepass" and lets it through, and it would fail only later, when written out.
_RAW_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")


# orjson turns an integer beyond 64 bits into a float; a float this large in its result may have
# been such an integer, so the body is parsed again by the standard library, which keeps it exact.
_BIG = 2.0**63


def parse_json(raw: bytes) -> Any:
    """The body's JSON value, checked against the limits above. The fast path (orjson and one walk
    over the containers) gives exactly what the standard library would; anything it is not sure of
    (a number beyond 64 bits, what orjson refuses) takes the standard path. orjson refuses a lone
    escaped surrogate ("\\ud800") and decodes a valid pair, so no search for them is needed here:
    the standard path finds the refused one and names its field."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass  # NaN, 1e400, a lone surrogate, nesting past orjson's limit, bad JSON...: the standard path says which
    else:
        if _plain(value):
            return value
    return _parse_standard(raw)


def _not_a_number(token: str) -> float:
    raise ProxyError(f"The JSON body holds '{token[:20]}', a number JSON cannot carry (NaN or infinity); "
                     "Gemini would never receive it.", code="invalid_value")


def _finite_or(refuse: Callable[[str], float]) -> Callable[[str], float]:
    """json's parse_float that hands a number too big for a float (1e400) to `refuse`."""
    def finite(token: str) -> float:
        value = float(token)
        return value if math.isfinite(value) else refuse(token)
    return finite


_finite = _finite_or(_not_a_number)


def parse_arguments(text: str, param: str) -> Any:
    """A call's `arguments` string from a client: JSON, so NaN and infinity (which Python's json would
    accept, and which one path would keep and another write as null) are a 400 naming `param`."""
    def refuse(token: str) -> float:
        raise ProxyError(f"Invalid '{param}': it holds '{token[:20]}', a number JSON cannot carry (NaN or "
                         "infinity); Gemini would never receive it.", param=param, code="invalid_value")

    return json.loads(text, parse_constant=refuse, parse_float=_finite_or(refuse))


def _parse_standard(raw: bytes) -> Any:
    try:
        value = json.loads(raw, parse_constant=_not_a_number, parse_float=_finite)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ProxyError(BAD_JSON) from None
    except RecursionError:
        raise ProxyError(f"The JSON body is nested deeper than {MAX_JSON_DEPTH} levels.", code="invalid_value"
                         ) from None
    check_json(value, strings=bool(_ESCAPED_SURROGATE.search(raw) or _RAW_SURROGATE.search(raw)))
    return value


def _plain(node: Any, budget: int = MAX_JSON_DEPTH) -> bool:
    """No nesting past MAX_JSON_DEPTH and no float that may have been a big integer. No paths are
    built (check_json does that when something is wrong); recursion is bounded by the budget."""
    if budget == 0:
        return False
    for v in node.values() if type(node) is dict else node if type(node) is list else (node,):
        t = type(v)
        if t is dict or t is list:
            if not _plain(v, budget - 1):
                return False
        elif t is float and not -_BIG < v < _BIG:
            return False
    return True


def check_json(value: Any, strings: bool = True) -> None:
    """Raise for nesting past MAX_JSON_DEPTH or (when `strings`) a lone surrogate in a key or string."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 0, ())]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict):
            if depth >= MAX_JSON_DEPTH:
                raise ProxyError(f"The JSON body is nested deeper than {MAX_JSON_DEPTH} levels (at "
                                 f"'{field_path(path)}').", param=field_path(path), code="invalid_value")
            for k, v in node.items():
                if strings and _SURROGATE.search(k):
                    _surrogate((*path, k))
                stack.append((v, depth + 1, (*path, k)))
        elif isinstance(node, list):
            if depth >= MAX_JSON_DEPTH:
                raise ProxyError(f"The JSON body is nested deeper than {MAX_JSON_DEPTH} levels (at "
                                 f"'{field_path(path)}').", param=field_path(path), code="invalid_value")
            stack.extend((v, depth + 1, (*path, i)) for i, v in enumerate(node))
        elif strings and isinstance(node, str) and _SURROGATE.search(node):
            _surrogate(path)


def _surrogate(path: tuple[str | int, ...]) -> None:
    where = field_path(path)
    raise ProxyError(f"Invalid value for '{where}': the text holds a lone UTF-16 surrogate, which is not valid "
                     "Unicode.", param=where, code="invalid_value")


def field_path(path: tuple[str | int, ...] | list[str | int]) -> str:
    """`("input", 0, "content")` -> `input[0].content` (the OpenAI `param` spelling)."""
    out = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return out or "body"
