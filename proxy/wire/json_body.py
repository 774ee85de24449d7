"""Parse a request body as JSON with named limits, so nothing past the edge meets a shape that
breaks it: nesting depth, lone UTF-16 surrogates (they cannot be encoded for the upstream body).

A violation is a ProxyError (400) naming the field; the shell renders it in the caller's protocol.
"""

import json
import re
from typing import Any

from proxy.errors import ProxyError

# Nesting depth of a request body. Gemini parses JSON into protobuf, whose default recursion limit
# is 100 (google.protobuf: kDefaultRecursionLimit); anything deeper could never reach the model.
# Python's own json parser fails with RecursionError near 1,000 levels, which used to be a 500.
MAX_JSON_DEPTH = 100

BAD_JSON = ("We could not parse the JSON body of your request. The proxy expects a JSON payload, but what was "
            "sent was not valid JSON.")
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_json(raw: bytes) -> Any:
    """The body's JSON value, checked against the limits above."""
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ProxyError(BAD_JSON) from None
    except RecursionError:
        raise ProxyError(f"The JSON body is nested deeper than {MAX_JSON_DEPTH} levels.", code="invalid_value"
                         ) from None
    check_json(value, strings=bool(_ESCAPED_SURROGATE.search(raw)))
    return value


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
