"""Finding where a JSON or Python literal ends in streamed text, strings skipped (SGLang's
raw_decode approach: a literal `</tool_call>` or `}` inside an argument never ends the block)."""

import ast
import json
import keyword
import math
import re
from typing import Any

from proxy.dialects.base import MAX_DEPTH, Call, ParseFailure, PartialBlock, ToolSpec, resolve_name

PAIRS = {"{": "}", "[": "]", "(": ")"}


def bracket_end(text: str, start: int, quotes: str = '"', memo: dict[Any, Any] | None = None) -> int | None:
    """Index after the bracket matching the one at `start`, or None if the text ends first.
    Raises ParseFailure on a mismatched closer. With `memo` (one per block), a later call on the
    same text grown longer resumes where this one stopped: streaming stays linear."""
    key = ("brackets", start, quotes)
    state = memo.get(key) if memo is not None else None
    if isinstance(state, int):
        return state  # found on an earlier call
    i, stack, quote = state if state is not None else (start, [], None)
    while i < len(text):
        c = text[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in quotes:
            quote = c
        elif c in PAIRS:
            stack.append(PAIRS[c])
            if len(stack) > MAX_DEPTH:
                raise ParseFailure("nested too deeply")
        elif c in ")]}":
            if not stack or stack.pop() != c:
                raise ParseFailure(f"mismatched {c!r}")
            if not stack:
                if memo is not None:
                    memo[key] = i + 1
                return i + 1
        i += 1
    if memo is not None:
        memo[key] = (i, stack, quote)
    return None


def left_open(text: str) -> str | None:
    """The closers a JSON object left open at its very end (`}}`), or None unless that is all it lacks:
    no open string, no dangling `,` or `:`, no mismatched bracket (Ollama's harmony repair)."""
    text = text.strip()
    memo: dict[Any, Any] = {}
    try:
        if not text.startswith("{") or bracket_end(text, 0, '"', memo) is not None:
            return None
    except ParseFailure:
        return None
    _, stack, quote = memo[("brackets", 0, '"')]
    return None if quote is not None or text[-1] in ",:" else "".join(reversed(stack))


def find_from(text: str, needle: str, start: int, memo: dict[Any, Any] | None = None) -> int:
    """`text.find(needle, start)`, resuming (with `memo`) after the part already searched."""
    key = ("find", needle, start)
    pos = memo.get(key, start) if memo is not None else start
    found = text.find(needle, pos)
    if found < 0 and memo is not None:
        memo[key] = max(start, len(text) - len(needle) + 1)
    return found


def skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def json_call(obj: Any, tools: dict[str, ToolSpec], keys: tuple[str, ...] = ("arguments", "parameters")) -> Call:
    """`{"name": ..., "arguments"|"parameters": {...}}` as a call (arguments given as a JSON string
    are decoded, as vLLM does for Hermes)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise ParseFailure("a call object needs a string 'name'")
    args = next((obj[k] for k in keys if k in obj), {})
    if isinstance(args, str):
        try:
            args = loads(args) if args.strip() else {}
        except ParseFailure:
            raise ParseFailure("call arguments are a string that is not JSON") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ParseFailure("call arguments must be an object")
    return Call(resolve_name(obj["name"], tools), args)


def _non_finite(token: str) -> Any:
    raise ParseFailure(f"{token[:20]} is not a JSON number")


def _finite(token: str) -> float:
    value = float(token)
    return value if math.isfinite(value) else _non_finite(token)


def loads(text: str) -> Any:
    """JSON as JSON is: NaN, Infinity and 1e999 (which Python's json would take) are not numbers."""
    try:
        return json.loads(text, parse_constant=_non_finite, parse_float=_finite)
    except (ValueError, RecursionError) as e:
        if isinstance(e, ParseFailure):
            raise
        raise ParseFailure("not valid JSON") from None


# Bare names models write in Python calls that mean JSON literals.
_JSON_NAMES = {"true": True, "false": False, "null": None}


def _literal(node: ast.AST) -> Any:
    """A Python literal as JSON data; anything JSON cannot carry (bytes, sets, complex numbers,
    NaN or infinity such as 1e999) is a ValueError: arguments are JSON."""
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("** inside a dict literal")
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            key = _literal(k)
            if not isinstance(key, str):
                raise ValueError("a key that is not a string")
            out[key] = _literal(v)
        return out
    value = ast.literal_eval(node)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("not a finite number")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ValueError(f"a {type(value).__name__} value, which JSON cannot carry")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise ParseFailure("a call needs a plain (dotted) function name")


# Where one call of a list ends and the next begins, for a list Python cannot read as a whole.
_NEXT_CALL = re.compile(r"\)\s*,\s*(?=[A-Za-z_][\w.\-]*\s*\()")


def python_calls(text: str, tools: dict[str, ToolSpec]) -> list[Call]:
    """`[f(a=1), g(b="x")]` or `f(a=1)` (one per line) -> calls, read by Python's own parser (never
    evaluated: only literals are accepted as values). One call that cannot be read does not lose its
    siblings: they come back in a PartialBlock with that call's text (vLLM salvages them the same way)."""
    source = text.strip()
    try:
        tree = ast.parse(source, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _segments(source, tools)
    nodes: list[ast.AST] = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            raise ParseFailure("not a Python call list")
        value = stmt.value
        nodes += value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
    calls, bad = [], []
    for node in nodes:
        try:
            calls.append(_call(node, tools))
        except ParseFailure as e:
            if len(nodes) == 1:
                raise
            bad.append((ast.get_source_segment(source, node) or "", str(e)))
    if not calls:
        raise ParseFailure(bad[0][1] if bad else "no call")
    if bad:
        raise PartialBlock(calls, ", ".join(b[0] for b in bad), "; ".join(b[1] for b in bad))
    return calls


def _call(node: ast.AST, tools: dict[str, ToolSpec]) -> Call:
    if not isinstance(node, ast.Call) or node.args:
        raise ParseFailure("each call must be NAME(key=value, ...)")
    name = _dotted(node.func)
    if name.endswith(".call"):  # Llama's built-in tools: brave_search.call(query="...")
        name = name[:-5]
    try:
        args: dict[str, Any] = {}
        for kw in node.keywords:
            value = _literal(kw.value)
            if kw.arg is None and not isinstance(value, dict):
                raise ValueError("** needs a dict")
            args.update(value if kw.arg is None else {kw.arg: value})
    except (ValueError, TypeError, SyntaxError, RecursionError) as e:
        raise ParseFailure(f"arguments of {name} are not JSON literals ({e})") from None
    return Call(resolve_name(name, tools), args)


def _segments(source: str, tools: dict[str, ToolSpec]) -> list[Call]:
    """A list Python cannot read as a whole: each call read on its own, where calls can be told apart."""
    inner = source[1:-1] if source.startswith("[") and source.endswith("]") else source
    pieces = _NEXT_CALL.split(inner)
    if len(pieces) < 2:
        raise ParseFailure("not a Python call list")
    calls, bad = [], []
    for i, piece in enumerate(pieces):
        piece = piece if i == len(pieces) - 1 else piece + ")"
        try:
            calls += python_calls(piece, tools)
        except (ParseFailure, PartialBlock):
            bad.append(piece.strip())
    if not calls:
        raise ParseFailure("not a Python call list")
    raise PartialBlock(calls, ", ".join(bad), "a call Python cannot read")


def python_arguments(args: dict[str, Any]) -> str:
    """`k=v, ...`; keys Python cannot name (keywords, non-identifiers) go in a `**{...}`."""
    plain = [f"{k}={python_value(v)}" for k, v in args.items() if k.isidentifier() and not keyword.iskeyword(k)]
    other = {k: v for k, v in args.items() if not (k.isidentifier() and not keyword.iskeyword(k))}
    return ", ".join(plain + ([f"**{python_value(other)}"] if other else []))


def python_value(value: Any) -> str:
    """A value as Python source (what the pythonic templates show in history)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{python_value(k)}: {python_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(python_value(v) for v in value) + "]"
    return repr(value)
