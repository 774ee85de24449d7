"""JSON Schema -> Gemini Schema rules (docs/wire.md#gemini-schema)."""

import copy

from proxy.mock.validate import validate_request
from proxy.schema.json_schema_to_gemini import json_schema_to_gemini as convert


def accepted(schema: dict) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "x"}]}],
            "tools": [{"functionDeclarations": [{"name": "f", "parameters": schema}]}]}
    validate_request(body, "gemini-3-pro-preview")


def test_types_are_uppercase_and_rejected_keywords_dropped() -> None:
    out = convert({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                   "additionalProperties": False, "properties": {"n": {"type": "integer", "exclusiveMinimum": 0,
                                                                       "uniqueItems": True, "x-vendor": 1}},
                   "required": ["n", "ghost"]})
    assert out == {"type": "OBJECT", "properties": {"n": {"type": "INTEGER", "description":
                                                          "(exclusiveMinimum: 0; uniqueItems: true)"}},
                   "required": ["n"]}
    accepted(out)


def test_type_arrays_and_null_branches_become_nullable() -> None:
    out = convert({"type": "object", "properties": {
        "a": {"type": ["string", "null"]},
        "b": {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "count"},
        "c": {"type": ["string", "integer"], "description": "id"}}})
    props = out["properties"]
    assert props["a"] == {"type": "STRING", "nullable": True}
    assert props["b"] == {"type": "INTEGER", "description": "count", "nullable": True}
    assert props["c"] == {"anyOf": [{"type": "STRING", "description": "id"}, {"type": "INTEGER", "description": "id"}]}
    accepted(out)


def test_refs_are_inlined_and_cycles_cut() -> None:
    schema = {"type": "object", "$defs": {"Node": {"type": "object", "properties": {
        "value": {"type": "string"}, "next": {"$ref": "#/$defs/Node"}}}},
        "properties": {"head": {"$ref": "#/$defs/Node", "description": "first"}}}
    original = copy.deepcopy(schema)
    out = convert(schema)
    head = out["properties"]["head"]
    assert head["description"] == "first" and head["properties"]["value"] == {"type": "STRING"}
    assert head["properties"]["next"]["type"] == "OBJECT"
    assert "recursive" in head["properties"]["next"]["description"]
    assert schema == original, "the input schema is never mutated"
    accepted(out)


def test_const_enums_and_allof() -> None:
    out = convert({"type": "object", "properties": {
        "kind": {"const": "json"},
        "level": {"type": "integer", "enum": [1, 2, 3]},
        "mixed": {"enum": ["a", 1, None]},
        "flag": {"enum": [True, False]},
        "both": {"allOf": [{"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
                           {"properties": {"y": {"type": "number"}}}]}}})
    p = out["properties"]
    assert p["kind"] == {"type": "STRING", "enum": ["json"]}
    assert p["level"] == {"type": "INTEGER", "description": "(one of: 1, 2, 3)"}
    assert p["mixed"] == {"type": "STRING", "format": "enum", "enum": ["a", "1"], "nullable": True}
    assert p["flag"] == {"type": "BOOLEAN"}
    assert p["both"]["required"] == ["x"] and set(p["both"]["properties"]) == {"x", "y"}
    accepted(out)


def test_arrays_get_items_and_empty_roots_are_omitted() -> None:
    out = convert({"type": "object", "properties": {
        "tags": {"type": "array"}, "pairs": {"type": "array", "items": [{"type": "integer"}]}}})
    assert out["properties"]["tags"]["items"] == {"type": "STRING"}
    assert out["properties"]["pairs"]["items"] == {"type": "INTEGER"}
    accepted(out)
    assert convert({"type": "object", "properties": {}}) is None
    assert convert({"type": "object", "additionalProperties": False}) is None
    assert convert(None) is None


def test_property_names_that_look_like_keywords_survive() -> None:
    out = convert({"type": "object", "properties": {"type": {"type": "string"}, "properties": {"type": "integer"},
                                                    "format": {"type": "string", "format": "uri"}},
                   "required": ["type", "properties"]})
    assert set(out["properties"]) == {"type", "properties", "format"}
    assert out["properties"]["format"] == {"type": "STRING", "description": "(format: uri)"}
    assert out["required"] == ["type", "properties"]
    accepted(out)


def test_deep_nesting_is_capped() -> None:
    schema: dict = {"type": "string"}
    for _ in range(80):
        schema = {"type": "object", "properties": {"x": schema}}
    accepted(convert(schema))
