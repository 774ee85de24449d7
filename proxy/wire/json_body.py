"""Parse a request body as JSON with named limits, so nothing past the edge meets a shape that
breaks it: nesting depth, lone UTF-16 surrogates (they cannot be encoded for the upstream body).

A violation is a ProxyError (400) naming the field; the shell renders it in the caller's protocol.
"""

import json
import math
import re
from collections.abc import Callable
from typing import Any

import msgspec
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


# Tools a request may declare. Gemini's own limit: "At most 512 function declarations can be
# specified" (a 400, google-gemini/gemini-cli issue 19083). Counted at the edge, before any schema is
# converted: 100,000 tools once held the event loop for two minutes.
MAX_TOOLS = 512
# The tools' JSON, all together: 512 tools of 16 KiB each (ours: Gemini documents no such limit, but
# converting more schema than this costs more than a request should).
MAX_TOOLS_BYTES = 8 * 1024 * 1024


# orjson turns an integer beyond 64 bits into a float; a float this large in its result may have
# been such an integer, so the body is parsed again by the standard library, which keeps it exact.
BIG_FLOAT = 2.0**63


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
        if plain_body(value):
            return value
    return _parse_standard(raw)


_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])


def split_member(raw: bytes, key: str) -> tuple[list[str], bytes, bytes] | None:
    """An object's text split at its top level, none of it parsed (msgspec reads the members as raw
    spans, one pass, no object per key): (its keys in order, the object without `key` as a JSON
    object, `key`'s value as sent), or None when `raw` is not a JSON object holding `key` (the
    caller parses it whole, which says why)."""
    split = split_members(raw, {key: 0})
    if split is None or key not in split[2]:
        return None
    return split[0], split[1], split[2][key]


def split_members(raw: bytes, keys: dict[str, int]) -> tuple[list[str], bytes, dict[str, bytes]] | None:
    """split_member for several keys, each with the least length of a value worth splitting out
    (shorter ones stay in the rest): (the keys in order, the object without the values split out,
    those values as sent), or None when `raw` is not a JSON object msgspec can split."""
    try:
        top = _TOP.decode(raw)
        order = list(top)
        values = {}
        for key, least in keys.items():
            value = top.get(key)
            if value is not None and len(value) >= least:
                values[key] = bytes(value)
                del top[key]
        pieces = [b"{"]  # the rest made in one join: each member's text is copied once (msgspec's Raw is a buffer)
        for k, v in top.items():
            pieces += (orjson.dumps(k), b":", v, b",")
        pieces[-1] = b"}" if len(pieces) > 1 else b"{}"
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, orjson.JSONEncodeError):
        return None
    return order, b"".join(pieces), values


def count_tools(body: Any) -> int:
    """Function declarations in a request body: a namespace's members and a Gemini tool's
    functionDeclarations each count, any other tool counts one."""
    tools = body.get("tools") if isinstance(body, dict) else None
    count = 0
    for tool in tools if isinstance(tools, list) else ():
        members = None
        if isinstance(tool, dict):
            members = tool.get("functionDeclarations", tool.get("function_declarations"))
            if members is None and tool.get("type") == "namespace":
                members = tool.get("tools")
        count += len(members) if isinstance(members, list) else 1
    return count


def count_tools_in(raw: bytes) -> int:
    """count_tools of a raw body (for a worker process: the parse never touches the server's GIL);
    0 when it is not JSON (the server's own parse then says why)."""
    try:
        return count_tools(orjson.loads(raw))
    except orjson.JSONDecodeError:
        return 0


def refuse_too_many_tools(count: int) -> None:
    if count > MAX_TOOLS:
        raise ProxyError(f"Invalid 'tools': {count} function declarations; at most {MAX_TOOLS} can be given "
                         "(Gemini's own limit).", param="tools", code="invalid_value")


def may_hold_too_many_tools(raw: bytes) -> bool:
    """False when the body cannot declare more than MAX_TOOLS (every declaration has a "name" key);
    one pass of bytes.count, so a body is only parsed elsewhere when it might."""
    return raw.count(b'"name"') > MAX_TOOLS


def check_tools(body: Any, size: int) -> None:
    """The request's tools within MAX_TOOLS declarations and MAX_TOOLS_BYTES; `size` is the whole
    body's length, so the bytes are only measured when they could be too many."""
    refuse_too_many_tools(count_tools(body))
    tools = body.get("tools") if isinstance(body, dict) else None
    if isinstance(tools, list) and size > MAX_TOOLS_BYTES:
        from proxy import fast_json

        tools_size = len(fast_json.dumps(tools))
        if tools_size > MAX_TOOLS_BYTES:
            raise ProxyError(f"Invalid 'tools': {tools_size} bytes of declarations; at most {MAX_TOOLS_BYTES} "
                             "bytes can be given.", param="tools", code="invalid_value")


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


NOT_PLAIN = object()  # plain_arguments: the standard path must decide


def plain_arguments(text: str) -> Any:
    """parse_arguments' fast path alone: the value, or NOT_PLAIN when only parse_arguments can say
    (the caller then writes the field's name, which a long history would otherwise write for every call)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return NOT_PLAIN
    return value if _plain(value) else NOT_PLAIN


def parse_arguments(text: str, param: str) -> Any:
    """A call's `arguments` string from a client: JSON, so NaN and infinity (which Python's json would
    accept, and which one path would keep and another write as null) are a 400 naming `param`.
    orjson first, as parse_json does, with the same test of its result; anything else (what orjson
    refuses: NaN, 1e400, a lone surrogate, bad JSON; a float that may have been a big integer) takes
    the standard path, which alone decides errors. 7 us -> 1 us a call: an agent's history holds
    dozens of calls, each parsed twice on Chat (bench_tails.py, profile_serve.py --agent)."""
    value = plain_arguments(text)
    return value if value is not NOT_PLAIN else _parse_arguments_standard(text, param)


def _parse_arguments_standard(text: str, param: str) -> Any:
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


def plain_body(value: Any, budget: int = MAX_JSON_DEPTH) -> bool:
    """_plain of a whole body: the same test, one level of containers at a time, without a call per
    container (a long history holds hundreds: the walk took a fifth of the body's parse). `budget`:
    the levels left (a value found inside a body has fewer than the body)."""
    if type(value) is not dict and type(value) is not list:
        return _plain(value, budget)
    level = [value]
    while level:
        if budget == 0:  # containers this deep
            return False
        budget -= 1
        deeper = []
        for node in level:
            for v in node.values() if type(node) is dict else node:
                t = type(v)
                if t is str:
                    continue
                if t is dict or t is list:
                    deeper.append(v)
                elif t is float and not -BIG_FLOAT < v < BIG_FLOAT:
                    return False
        level = deeper
    return True


def _plain(node: Any, budget: int = MAX_JSON_DEPTH) -> bool:
    """No nesting past MAX_JSON_DEPTH and no float that may have been a big integer. No paths are
    built (check_json does that when something is wrong); recursion is bounded by the budget."""
    if budget == 0:
        return False
    for v in node.values() if type(node) is dict else node if type(node) is list else (node,):
        t = type(v)
        if t is str:  # most values: one test (a fifth of the walk's time)
            continue
        if t is dict or t is list:
            if not _plain(v, budget - 1):
                return False
        elif t is float and not -BIG_FLOAT < v < BIG_FLOAT:
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


def param_path(body: Any, loc: tuple[Any, ...]) -> str:
    """The request field an error is about; pydantic adds union-member tags to `loc` that are not fields."""
    path, node = [], body
    for i, p in enumerate(loc):
        if isinstance(node, dict) and p in node or isinstance(node, list) and isinstance(p, int) and p < len(node):
            node = node[p]
        elif i == 0 or (isinstance(node, dict) and isinstance(p, str) and "[" not in p and i == len(loc) - 1):
            pass  # a missing field: still name it
        else:
            continue  # a union member's tag (`str`, `ToolChoiceObject`, ...): not a field
        path.append(p)
    return field_path(path)
