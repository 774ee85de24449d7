"""What converting a tool's JSON Schema for Gemini changes, as a list a person can read (the
journal's decisions): each keyword Gemini's schema subset does not take, where it was, and what the
conversion (json_schema_to_gemini.py) does with it. Computed only when an exchange is recorded."""

from typing import Any

# Keywords Gemini's OpenAPI-subset schema takes as they are.
KEPT = frozenset({"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
                  "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example",
                  "anyOf", "propertyOrdering", "items", "minimum", "maximum"})
ACTIONS = {
    "$ref": "inlined", "$defs": "inlined where referenced", "definitions": "inlined where referenced",
    "allOf": "merged into one schema", "oneOf": "turned into anyOf", "const": "turned into a one-value enum",
    "examples": "first one kept as example", "default": "moved into the description",
    "exclusiveMinimum": "moved into the description", "exclusiveMaximum": "moved into the description",
    "multipleOf": "moved into the description", "uniqueItems": "moved into the description",
    "minContains": "moved into the description", "maxContains": "moved into the description",
    "contentEncoding": "moved into the description", "contentMediaType": "moved into the description",
    "encrypted": "left out (the Responses API's encryption mark): the value is sent in plain text and its calls "
                 "say so (encrypted_function_args: [])",
}
MAX_REPAIRS = 50  # per tool


def schema_repairs(schema: Any, path: str = "") -> list[dict[str, str]]:
    """[{path, keyword, action}] for every keyword of `schema` the conversion repairs."""
    out: list[dict[str, str]] = []
    _walk(schema, path, out)
    return out[:MAX_REPAIRS]


def repair_note(tool: Any, repair: dict[str, str]) -> dict[str, Any]:
    """One repair of `tool`'s schema as the journal notes it (a client's tools, an app's; `repair` may
    name the tool too)."""
    return {"kind": "schema", "message": f"tool {tool!r}: {repair['keyword']} at {repair['path']} {repair['action']}",
            "tool": tool, **repair}


def _walk(node: Any, path: str, out: list[dict[str, str]]) -> None:
    if not isinstance(node, dict) or len(out) >= MAX_REPAIRS:
        return
    for key, value in node.items():
        if key == "type" and isinstance(value, list):
            out.append({"path": path or "/", "keyword": "type", "action": "a list of types: nullable or anyOf"})
        elif key not in KEPT:
            out.append({"path": path or "/", "keyword": key, "action": ACTIONS.get(key, "dropped")})
    for key in ("properties", "$defs", "definitions", "patternProperties"):
        children = node.get(key)
        if isinstance(children, dict):
            for name, child in children.items():
                _walk(child, f"{path}/{key}/{name}", out)
    for key in ("items", "additionalProperties", "not", "contains", "propertyNames"):
        if isinstance(node.get(key), dict):
            _walk(node[key], f"{path}/{key}", out)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(node.get(key), list):
            for i, child in enumerate(node[key]):
                _walk(child, f"{path}/{key}/{i}", out)
