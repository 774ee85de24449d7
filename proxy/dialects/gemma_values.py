"""The value grammar Gemma 4 and FunctionGemma write calls in: `{key:value,...}` with bare keys,
strings between a delimiter token (`<|"|>` or `<escape>`) and nothing escaped inside, bare numbers,
`true`/`false`/`null`, arrays `[v,...]` (docs/wire.md#dialects).

A recursive-descent parser (regex and flat splits broke on nesting and on braces inside strings in
vLLM, mlx-lm and mlx-vlm), tolerant of what models really write — JSON, single-quoted or backtick
strings, `key=value`, missing commas, `(key: v)` argument lists — and aware of the declared schema,
so a bare `02134` for a string parameter stays "02134" (vLLM #47906 turned it into 2134).
"""

import json
import re
from typing import Any

from proxy.dialects.base import MAX_DEPTH, ParseFailure

# A bare number; a trailing dot (`108.`, which Gemma 4 writes) is a float, as vLLM reads it.
NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d*)?(?:[eE][+-]?\d+)?")
_BARE_END = ",}])\n"


def _types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    t = schema.get("type")
    types = {t.lower()} if isinstance(t, str) else {x.lower() for x in t if isinstance(x, str)} \
        if isinstance(t, list) else set()
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            types |= _types(branch)
    return types


def _sub(schema: Any, key: str | None) -> Any:
    """The schema of a property (key given) or of an array's items."""
    if not isinstance(schema, dict):
        return None
    if key is None:
        return schema.get("items")
    props = schema.get("properties")
    return props.get(key) if isinstance(props, dict) else None


class ValueParser:
    """One parse over `text`; `repaired` says whether a tolerated form or a repair was needed."""

    def __init__(self, text: str, quote: str) -> None:
        self.text, self.quote, self.pos, self.repaired = text, quote, 0, False

    def fail(self, what: str) -> ParseFailure:
        return ParseFailure(f"{what} at offset {self.pos}")

    def ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
            self.pos += 1

    def peek(self, s: str) -> bool:
        return self.text.startswith(s, self.pos)

    def value(self, schema: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail("nested too deeply")
        self.ws()
        if self.peek(self.quote):
            return self.delimited(self.quote)
        if self.peek("{"):
            return self.mapping("{", "}", schema, depth)
        if self.peek("["):
            return self.sequence(schema, depth)
        if self.peek('"'):
            return self.json_string()
        if self.peek("'") or self.peek("`"):
            self.repaired = True
            return self.delimited(self.text[self.pos])
        return self.bare(schema)

    def delimited(self, quote: str) -> str:
        start = self.pos + len(quote)
        end = self.text.find(quote, start)
        if end < 0:
            raise self.fail("unterminated string")
        self.pos = end + len(quote)
        return self.text[start:end]

    def json_string(self) -> str:
        try:
            value, end = json.JSONDecoder().raw_decode(self.text, self.pos)
        except ValueError:
            self.repaired = True
            start = self.pos
            raw = self.delimited('"')  # a raw "..." with unescaped contents
            if "\\" in raw:  # an escape JSON does not know ("C:\users"): Ollama refuses it too
                self.pos = start
                raise self.fail("an invalid escape in a JSON string") from None
            return raw
        self.pos = end
        self.repaired = True
        return value

    def bare(self, schema: Any) -> Any:
        start = self.pos
        depth = 0
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c in "([":
                depth += 1
            elif c in ")]" and depth:
                depth -= 1
            elif c in _BARE_END and not depth or self.peek(self.quote):
                break
            self.pos += 1
        raw = self.text[start:self.pos].strip()
        if not raw:
            raise self.fail("missing value")
        types = _types(schema)
        if "string" in types and not types & {"number", "integer", "boolean", "null"}:
            return raw  # the raw source text: "02134" and "1e5" survive as written
        if raw in ("true", "false"):
            return raw == "true"
        if raw == "null":
            return None
        if NUMBER.fullmatch(raw):
            number = float(raw)
            return int(raw) if re.fullmatch(r"-?\d+", raw) else number
        self.repaired = True  # an unquoted string
        return raw

    def key(self, closer: str) -> str:
        self.ws()
        if self.peek(self.quote):
            return self.delimited(self.quote)
        if self.peek('"'):
            return self.json_string()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ":=" + closer:
            self.pos += 1
        key = self.text[start:self.pos].strip()
        if not key or self.pos >= len(self.text) or self.text[self.pos] == closer:
            raise self.fail("expected key:value")
        return key

    def mapping(self, opener: str, closer: str, schema: Any, depth: int) -> dict[str, Any]:
        self.pos += len(opener)
        out: dict[str, Any] = {}
        while True:
            self.ws()
            if self.peek(closer):
                self.pos += 1
                return out
            if self.pos >= len(self.text):
                raise self.fail(f"unterminated object (missing {closer!r})")
            key = self.key(closer)
            if self.text[self.pos] == "=":
                self.repaired = True
            self.pos += 1
            out[key] = self.value(_sub(schema, key), depth + 1)
            self.ws()
            if self.peek(","):
                self.pos += 1
            elif not self.peek(closer):
                self.repaired = True  # a missing comma: `a:<|"|>x<|"|>b:1`

    def sequence(self, schema: Any, depth: int) -> list[Any]:
        self.pos += 1
        out: list[Any] = []
        while True:
            self.ws()
            if self.peek("]"):
                self.pos += 1
                return out
            if self.pos >= len(self.text):
                raise self.fail("unterminated array (missing ']')")
            out.append(self.value(_sub(schema, None), depth + 1))
            self.ws()
            if self.peek(","):
                self.pos += 1
            elif not self.peek("]"):
                raise self.fail("expected ',' or ']'")


def parse_arguments(text: str, quote: str, schema: Any) -> tuple[dict[str, Any], bool]:
    """`{k:v,...}` or `(k: v, ...)` -> (arguments, repaired); the whole text must be used."""
    p = ValueParser(text.strip(), quote)
    if p.peek("("):
        args, p.repaired = p.mapping("(", ")", schema, 0), True
    elif p.peek("{"):
        args = p.mapping("{", "}", schema, 0)
    else:
        raise p.fail("expected '{' after the function name")
    p.ws()
    if p.pos != len(p.text):
        raise p.fail("text after the arguments")
    return args, p.repaired


def write_value(value: Any, quote: str) -> str:
    """A value in the Gemma grammar: keys sorted (the templates dictsort), integral floats as ints."""
    if isinstance(value, str):
        return f"{quote}{value}{quote}"
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{write_value(v, quote)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(write_value(v, quote) for v in value) + "]"
    return f"{quote}{value}{quote}"


# Keys of a schema the Gemma templates render, in their order (`type` last, upper-cased).
SCHEMA_KEYS = ("description", "enum", "items", "nullable", "properties", "required", "type")


def write_schema(schema: Any, quote: str) -> str:
    """A parameter schema as Google's Gemma 4 template renders it (docs/wire.md#dialects)."""
    if not isinstance(schema, dict):
        return "{}"
    items = []
    for key in SCHEMA_KEYS:
        if key not in schema:
            continue
        v = schema[key]
        if key == "properties" and isinstance(v, dict):
            body = ",".join(f"{k}:{write_schema(s, quote)}" for k, s in sorted(v.items()))
            items.append(f"properties:{{{body}}}")
        elif key == "items":
            items.append(f"items:{write_schema(v, quote)}")
        elif key == "nullable":
            if v:
                items.append("nullable:true")
        elif key == "type":
            t = v if isinstance(v, str) else next((x for x in v if x != "null"), "string")
            items.append(f"type:{quote}{str(t).upper()}{quote}")
        else:
            items.append(f"{key}:{write_value(v, quote)}")
    return "{" + ",".join(items) + "}"
