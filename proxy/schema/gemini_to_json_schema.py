"""Gemini `Schema` (the `parameters` field: OpenAPI 3.0 subset, upper-case types, `nullable`) -> JSON
Schema: what a text-dialect model's template renders (dialects/render_request.py) and what the
Interactions API takes (proxy/upstream/interactions/request.py, intercept/interactions.py). One walker, so
both read a declaration alike.

- `type` lower-cased; `nullable: true` becomes a `"null"` type (JSON Schema has no `nullable`);
- every keyword holding schemas is walked: `properties`, `$defs`/`definitions`, `items`,
  `additionalProperties`, `not`, `anyOf`/`oneOf`/`allOf`/`prefixItems` (and the snake_case
  `any_of` google-genai's models may leave in a body);
- `propertyOrdering` (Gemini's own: the order is the `properties` map's) goes;
- the int64 limits proto3 JSON spells as strings (`"maxItems": "5"`) become numbers;
- everything else (`description`, `enum`, `format`, `minimum`, `default`...) is kept as it is.
Applied to one declaration's schema, never to arguments or other data."""

from typing import Any

_LISTS = {"anyOf": "anyOf", "any_of": "anyOf", "oneOf": "oneOf", "allOf": "allOf", "prefixItems": "prefixItems"}
_MAPS = ("properties", "$defs", "definitions")
_ONE = ("items", "additionalProperties", "not")
_INT64 = frozenset({"minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"})
_DROPPED = frozenset({"nullable", "propertyOrdering"})


def gemini_to_json_schema(schema: Any) -> Any:
    if isinstance(schema, list):
        return [gemini_to_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key in _MAPS and isinstance(value, dict):
            out[key] = {k: gemini_to_json_schema(v) for k, v in value.items()}
        elif key in _LISTS and isinstance(value, list):
            out[_LISTS[key]] = [gemini_to_json_schema(v) for v in value]
        elif key in _ONE and isinstance(value, (dict, list)):
            out[key] = gemini_to_json_schema(value)
        elif key in _INT64 and isinstance(value, str) and value.isdigit():
            out[key] = int(value)
        elif key not in _DROPPED:
            out[key] = value
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out
