"""Finding where a JSON or Python literal ends in streamed text, strings skipped (SGLang's
raw_decode approach: a literal `</tool_call>` or `}` inside an argument never ends the block)."""

import ast
import json
import keyword
from typing import Any

from proxy.dialects.base import MAX_DEPTH, Call, ParseFailure, ToolSpec, resolve_name

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
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            raise ParseFailure("call arguments are a string that is not JSON") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ParseFailure("call arguments must be an object")
    return Call(resolve_name(obj["name"], tools), args)


def loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise ParseFailure("not valid JSON") from None


# Bare names models write in Python calls that mean JSON literals.
_JSON_NAMES = {"true": True, "false": False, "null": None}


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("** inside a dict literal")
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}
    return ast.literal_eval(node)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise ParseFailure("a call needs a plain (dotted) function name")


def python_calls(text: str, tools: dict[str, ToolSpec]) -> list[Call]:
    """`[f(a=1), g(b="x")]` or `f(a=1)` (one per line) -> calls, read by Python's own parser (never
    evaluated: only literals are accepted as values)."""
    try:
        tree = ast.parse(text.strip(), mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ParseFailure("not a Python call list") from None
    nodes: list[ast.AST] = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            raise ParseFailure("not a Python call list")
        value = stmt.value
        nodes += value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
    calls = []
    for node in nodes:
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
        except (ValueError, TypeError, SyntaxError, RecursionError):
            raise ParseFailure(f"arguments of {name} are not literals") from None
        calls.append(Call(resolve_name(name, tools), args))
    if not calls:
        raise ParseFailure("no call")
    return calls


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
