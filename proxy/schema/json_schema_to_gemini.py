"""JSON Schema -> Gemini `Schema` (the `parameters` field: an OpenAPI 3.0 subset with uppercase types).

Applied to one tool's argument schema at a time, never to a whole request: `title`, `format`,
`default` and friends are also ordinary data keys, and tool-call arguments in history must pass
through untouched (docs/wire.md#gemini-schema; a CLIProxyAPI regression).

Rules follow docs/wire.md#gemini-schema: local `$ref` inlined with a cycle
guard and a depth cap, type arrays and null branches become `nullable`, `const` becomes a one-value
enum, enums become strings, `allOf` is merged, keywords Gemini rejects are dropped and the
constraints they carried survive as description hints.
"""

import json
from typing import Any

from proxy.schema.json_pointer import resolve_ref

# Fields of Gemini's Schema message (GEM-DOC caching#Schema); anything else is a 400 "Unknown name".
GEMINI_SCHEMA_FIELDS = frozenset({
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
})
GEMINI_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})
# Formats the Developer API documents per type; others are moved into the description
# (Firebase: "other formats fail on the Gemini Developer API").
GEMINI_FORMATS = {"NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}, "STRING": {"enum", "date-time"}}
# Depth cap for nested/inlined schemas: gemini-cli#5030 saw generic 400s on very deep schemas, and
# new-api caps at 64; recursive `$ref`s stop earlier through the cycle guard.
MAX_DEPTH = 32

_COPY_NUMBERS = ("minimum", "maximum")
_COPY_COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")
# Keywords with a constraint worth telling the model about when they must be dropped.
_HINTED = ("exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems", "minContains",
           "maxContains", "contentEncoding", "contentMediaType")


def marks_encrypted(schema: Any) -> bool:
    """Whether a tool's schema marks a parameter `encrypted` (the Responses API's extension on a
    property, `{"type": "string", "encrypted": true}`: codex-rs `JsonSchema::with_encrypted`). It is
    not JSON Schema: both converters leave it out of what Gemini gets."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(props, dict) and any(isinstance(p, dict) and "encrypted" in p for p in props.values())


def json_schema_to_gemini(schema: Any) -> dict[str, Any] | None:
    """Convert a tool's argument schema; None means "declare the function without parameters"."""
    if not isinstance(schema, dict):
        return None
    out = _Converter(schema).convert(schema, depth=0, refs=())
    if out.get("type") == "OBJECT" and not out.get("properties"):
        # A function without arguments: omit `parameters` (vercel/ai#3371, LiteLLM#9289).
        return None
    return out


class _Converter:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def resolve(self, ref: str) -> Any:
        return resolve_ref(self.root, ref)

    def convert(self, node: Any, depth: int, refs: tuple[str, ...]) -> dict[str, Any]:
        if node is True or not isinstance(node, dict):
            return {}
        if depth > MAX_DEPTH:
            return {"type": "STRING", "description": "(nested too deeply to describe; pass JSON text)"}
        node = self._expand(node, refs)
        if isinstance(node, _Cycle):
            return {"type": "OBJECT", "description": node.description}
        refs = node.pop("\x00refs", refs)
        hints: list[str] = []
        out: dict[str, Any] = {}
        nullable = node.get("nullable") is True  # already Gemini-shaped (repairing an app's own schema)

        branches = node.get("anyOf") or node.get("oneOf")
        types = self._types(node)
        if "null" in types:
            nullable = True
            types = [t for t in types if t != "null"]

        if isinstance(branches, list) and branches:
            real = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
            nullable = nullable or len(real) < len(branches)
            if len(real) == 1:
                # Flatten a single alternative into its parent, parent keywords winning.
                merged = dict(real[0]) if isinstance(real[0], dict) else {}
                for k, v in node.items():
                    if k not in ("anyOf", "oneOf"):
                        merged[k] = v
                inner = self.convert(merged, depth + 1, refs)
                if nullable:
                    _make_nullable(inner)
                return inner
            if real:
                return _alone([self.convert(b, depth + 1, refs) for b in real], node, nullable)
        if len(types) > 1:
            variants = [{**node, "type": t} for t in types]
            for v in variants:
                v.pop("anyOf", None), v.pop("oneOf", None)
            return _alone([self.convert(v, depth + 1, refs) for v in variants], node, nullable)

        gtype = types[0].upper() if types else self._infer_type(node)
        if gtype and gtype.upper() in GEMINI_TYPES:
            out["type"] = gtype.upper()
        for k in ("title", "description"):
            if isinstance(node.get(k), str):
                out[k] = node[k]

        enum = node.get("enum")
        if "const" in node:
            enum = [node["const"]]
        if isinstance(enum, list):
            self._enum(enum, out, hints)
            nullable = nullable or None in enum

        fmt = node.get("format")
        if isinstance(fmt, str):
            if fmt in GEMINI_FORMATS.get(out.get("type", ""), ()):
                out["format"] = fmt
            elif out.get("format") != "enum":
                hints.append(f"format: {fmt}")

        for k in _COPY_NUMBERS:
            if _is_number(node.get(k)):
                out[k] = node[k]
        for k in _COPY_COUNTS:
            if _is_number(node.get(k)) and node[k] >= 0:
                out[k] = int(node[k])
        if isinstance(node.get("pattern"), str) and out.get("type") == "STRING":
            out["pattern"] = node["pattern"]
        for k in _HINTED:
            if k in node and node[k] is not False:
                hints.append(f"{k}: {json.dumps(node[k])}")
        if "default" in node and node["default"] is not None:
            hints.append(f"default: {json.dumps(node['default'])}")
        if "example" in node:
            out["example"] = node["example"]
        elif isinstance(node.get("examples"), list) and node["examples"]:
            out["example"] = node["examples"][0]

        if out.get("type") == "OBJECT":
            self._object(node, out, hints, depth, refs)
        elif out.get("type") == "ARRAY":
            self._array(node, out, depth, refs)

        if nullable:
            _make_nullable(out)
        if hints:
            text = "; ".join(hints)
            out["description"] = f"{out['description']} ({text})" if out.get("description") else f"({text})"
        return out

    # -- helpers ---------------------------------------------------------------------------------

    def _expand(self, node: dict[str, Any], refs: tuple[str, ...]) -> "dict[str, Any] | _Cycle":
        """Inline `$ref` (siblings win over the target) and merge `allOf` into the node."""
        node = dict(node)
        for _ in range(MAX_DEPTH):
            ref = node.get("$ref")
            if not isinstance(ref, str):
                break
            if ref in refs:
                name = ref.rsplit("/", 1)[-1]
                desc = node.get("description") or ""
                return _Cycle(f"{desc} (recursive structure: {name}; pass a JSON object)".strip())
            target = self.resolve(ref)
            del node["$ref"]
            refs = (*refs, ref)
            if isinstance(target, dict):
                node = {**target, **node}
        all_of = node.pop("allOf", None)
        if isinstance(all_of, list):
            for part in all_of:
                if not isinstance(part, dict):
                    continue
                part = self._expand(part, refs)
                if isinstance(part, _Cycle):
                    continue
                part.pop("\x00refs", None)
                for k, v in part.items():
                    if k == "properties" and isinstance(v, dict):
                        node["properties"] = {**v, **(node.get("properties") or {})}
                    elif k == "required" and isinstance(v, list):
                        node["required"] = list(dict.fromkeys(r for r in [*(node.get("required") or []), *v]
                                                              if isinstance(r, str)))
                    else:
                        node.setdefault(k, v)
        node["\x00refs"] = refs
        return node

    @staticmethod
    def _types(node: dict[str, Any]) -> list[str]:
        t = node.get("type")
        if isinstance(t, str):
            return [t.lower()]
        if isinstance(t, list):
            return list(dict.fromkeys(x.lower() for x in t if isinstance(x, str)))
        return []

    @staticmethod
    def _infer_type(node: dict[str, Any]) -> str | None:
        if "properties" in node or "additionalProperties" in node or "propertyNames" in node:
            return "OBJECT"
        if "items" in node or "prefixItems" in node:
            return "ARRAY"
        if "enum" in node or "const" in node:
            values = node.get("enum") or [node.get("const")]
            if values and all(isinstance(v, bool) for v in values if v is not None):
                return "BOOLEAN"
            return "STRING"
        return None

    @staticmethod
    def _enum(values: list[Any], out: dict[str, Any], hints: list[str]) -> None:
        real = [v for v in values if v is not None]
        if not real:
            return
        if all(isinstance(v, bool) for v in real):
            out["type"] = "BOOLEAN"
            if len(real) == 1:
                hints.append(f"must be {json.dumps(real[0])}")
            return
        if all(isinstance(v, str) for v in real):
            out["type"] = "STRING"
            out["enum"] = list(dict.fromkeys(real))
            return
        # Gemini enums are strings only ("Invalid value at '…enum[0]' (TYPE_STRING)", CLIProxyAPI#129).
        if all(_is_number(v) for v in real) and out.get("type") in ("INTEGER", "NUMBER"):
            hints.append("one of: " + ", ".join(json.dumps(v) for v in real))
            return
        out["type"] = "STRING"
        out["format"] = "enum"
        out["enum"] = list(dict.fromkeys(v if isinstance(v, str) else json.dumps(v) for v in real))

    def _object(self, node: dict[str, Any], out: dict[str, Any], hints: list[str], depth: int,
                refs: tuple[str, ...]) -> None:
        props = node.get("properties")
        if isinstance(props, dict) and props:
            out["properties"] = {
                name: self.convert(sub, depth + 1, refs) for name, sub in props.items() if isinstance(name, str)
            }
            required = node.get("required")
            if isinstance(required, list):
                kept = [r for r in dict.fromkeys(r for r in required if isinstance(r, str)) if r in out["properties"]]
                if kept:
                    out["required"] = kept
        extra = node.get("additionalProperties")
        if not out.get("properties") and isinstance(extra, dict) and extra:
            value = self.convert(extra, depth + 1, refs)
            hints.append(f"a map of names to {value.get('type', 'any').lower()} values")

    def _array(self, node: dict[str, Any], out: dict[str, Any], depth: int, refs: tuple[str, ...]) -> None:
        items = node.get("items")
        if isinstance(items, list):  # draft-4 tuple form
            items = items[0] if items else None
        if items is None and isinstance(node.get("prefixItems"), list) and node["prefixItems"]:
            items = node["prefixItems"][0]
        converted = self.convert(items, depth + 1, refs) if isinstance(items, dict) else {}
        # Gemini rejects arrays without a typed `items` ("….items: missing field", cline#7339).
        out["items"] = converted if converted.get("type") or converted.get("anyOf") else {
            **converted, "type": "STRING"}


def _alone(branches: list[dict[str, Any]], node: dict[str, Any], nullable: bool) -> dict[str, Any]:
    """`anyOf` must be the only field of its node ("When using any_of, it must be the only field set."),
    so the parent's description and nullability move into every branch; a branch that is itself a
    bare anyOf is spliced in (a union of unions is one union)."""
    flat: list[dict[str, Any]] = []
    for b in branches:
        flat.extend(b["anyOf"] if set(b) == {"anyOf"} else [b])
    for b in flat:
        for k in ("title", "description"):
            if isinstance(node.get(k), str) and k not in b:
                b[k] = node[k]
        if nullable:
            b["nullable"] = True
    return {"anyOf": flat}


def _make_nullable(node: dict[str, Any]) -> None:
    """`nullable` on the node, or on each branch of a bare anyOf node (which must stand alone)."""
    for target in node.get("anyOf", [node]):
        if "anyOf" in target:
            _make_nullable(target)
        else:
            target["nullable"] = True


class _Cycle:
    def __init__(self, description: str) -> None:
        self.description = description


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)
