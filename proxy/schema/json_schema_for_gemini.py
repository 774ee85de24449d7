"""JSON Schema -> Gemini `parametersJsonSchema` (the JSON Schema mode, docs/wire.md#gemini-schema).

Gemini takes real JSON Schema here (additionalProperties, anyOf, const ... are fine), but still
rejects a few things: `$ref` with siblings other than description/default, references it cannot
resolve, and recursive references ("Request contains an invalid argument.", gemini-cli#14945).
So local refs are inlined (siblings win), cycles are cut with a described object, `$defs` and
meta keywords go, and nothing else changes. Like the other converter it sees one schema, never
arguments or other data in history.
"""

import copy
from typing import Any

from proxy.schema.json_pointer import resolve_ref
from proxy.schema.json_schema_to_gemini import MAX_DEPTH

# Keywords whose value is one schema / a map of schemas / a list of schemas (JSON Schema 2020-12).
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
        "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_MAP = ("properties", "patternProperties", "dependentSchemas")
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
# `encrypted`: the Responses API's mark on a parameter OpenAI encrypts (not JSON Schema; Gemini would
# take it for an unknown keyword). The calls of such a tool go back marked plain text (translator.py).
_DROP = ("$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$defs", "definitions", "encrypted")


def json_schema_for_gemini(schema: Any) -> dict[str, Any] | None:
    """The schema Gemini gets as parametersJsonSchema; None = declare the function without parameters."""
    if not isinstance(schema, dict):
        return None
    out = _Inliner(schema).node(schema, 0, ())
    if not isinstance(out, dict) or (out.get("type") == "object" and not out.get("properties")
                                     and not isinstance(out.get("additionalProperties"), dict)):
        return None
    return out


class _Inliner:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def resolve(self, ref: str) -> Any:
        return resolve_ref(self.root, ref)

    def node(self, s: Any, depth: int, refs: tuple[str, ...]) -> Any:
        if not isinstance(s, dict):
            return s  # booleans are valid schemas
        if depth > MAX_DEPTH:
            return {"description": "(nested too deeply to describe)"}
        s = dict(s)
        ref = s.pop("$ref", None)
        if isinstance(ref, str):
            if ref in refs:
                desc = s.get("description") or ""
                return {"type": "object", "description": f"{desc} (recursive structure: "
                                                         f"{ref.rsplit('/', 1)[-1]})".strip()}
            target = self.resolve(ref)
            if isinstance(target, dict):
                s = {**target, **s}
                refs = (*refs, ref)
                return self.node(s, depth + 1, refs)
            # an unresolvable ref: keep the node, minus the ref Gemini would reject
        out: dict[str, Any] = {}
        for key, value in s.items():
            if key in _DROP or key.startswith("x-"):
                continue
            if key in _ONE and isinstance(value, dict):
                out[key] = self.node(value, depth + 1, refs)
            elif key in _MAP and isinstance(value, dict):
                out[key] = {k: self.node(v, depth + 1, refs) for k, v in value.items()}
            elif key in _LIST and isinstance(value, list):
                out[key] = [self.node(v, depth + 1, refs) for v in value]
            elif key in ("required", "type") and isinstance(value, list):
                # Both must hold unique strings; clients send duplicates (hypothesis found it).
                out[key] = list(dict.fromkeys(v for v in value if isinstance(v, str)))
            else:
                out[key] = copy.deepcopy(value)
        return out
