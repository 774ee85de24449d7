"""One Gemini Schema -> JSON Schema walker (proxy/schema/gemini_to_json_schema.py) for the text dialects'
templates, the Interactions API upstream and the intercepted Interactions traffic. The cases are those on
which the two walkers it replaced disagreed (dialects/render_request.json_schema and
upstream.interactions.openapi_to_json_schema), each with the answer now given to both, and each
result checked against JSON Schema's own meta-schema."""

import jsonschema
import pytest

from proxy.dialects.render_request import tool_specs
from proxy.schema.gemini_to_json_schema import gemini_to_json_schema
from proxy.upstream.interactions.request import tools_of

CASES = [
    # nullable: the templates kept `nullable` (no JSON Schema keyword); Interactions made a "null" type
    ({"type": "STRING", "nullable": True}, {"type": ["string", "null"]}),
    # propertyOrdering: Interactions passed Gemini's own keyword on; the templates dropped it
    ({"type": "OBJECT", "properties": {"b": {"type": "STRING"}, "a": {"type": "INTEGER"}},
      "propertyOrdering": ["b", "a"]},
     {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}),
    # snake_case any_of: only the templates read it
    ({"any_of": [{"type": "STRING"}, {"type": "NUMBER"}]}, {"anyOf": [{"type": "string"}, {"type": "number"}]}),
    # allOf, prefixItems, $defs, additionalProperties, not: only Interactions walked them
    ({"allOf": [{"type": "OBJECT"}]}, {"allOf": [{"type": "object"}]}),
    ({"type": "ARRAY", "prefixItems": [{"type": "BOOLEAN"}]}, {"type": "array", "prefixItems": [{"type": "boolean"}]}),
    ({"$defs": {"x": {"type": "STRING"}}, "type": "OBJECT"}, {"$defs": {"x": {"type": "string"}}, "type": "object"}),
    ({"type": "OBJECT", "additionalProperties": {"type": "NUMBER"}},
     {"type": "object", "additionalProperties": {"type": "number"}}),
    ({"not": {"type": "NULL"}}, {"not": {"type": "null"}}),
    # proto3 JSON's int64 limits as strings: neither turned them into numbers (JSON Schema needs them)
    ({"type": "ARRAY", "items": {"type": "STRING", "maxLength": "8"}, "minItems": "1", "maxItems": "5"},
     {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 5}),
    # the rest is kept as it is
    ({"type": "STRING", "enum": ["a", "b"], "format": "enum", "description": "d", "default": "a"},
     {"type": "string", "enum": ["a", "b"], "format": "enum", "description": "d", "default": "a"}),
    ({"type": "NUMBER", "minimum": 0, "maximum": 1.5}, {"type": "number", "minimum": 0, "maximum": 1.5}),
]


@pytest.mark.parametrize(("gemini", "expected"), CASES)
def test_one_answer_for_every_case(gemini, expected) -> None:
    assert gemini_to_json_schema(gemini) == expected
    jsonschema.Draft202012Validator.check_schema(expected)


@pytest.mark.parametrize(("gemini", "expected"), CASES)
def test_the_templates_and_the_interactions_api_read_a_declaration_alike(gemini, expected) -> None:
    body = {"tools": [{"functionDeclarations": [{"name": "f", "description": "x", "parameters": gemini}]}]}
    assert tool_specs(body)[0].parameters == expected
    assert tools_of(body)[0]["parameters"] == expected


def test_arguments_named_like_keywords_are_data() -> None:
    """A property called `type` or `nullable` is a name, not a keyword."""
    schema = {"type": "OBJECT", "properties": {"type": {"type": "STRING"}, "nullable": {"type": "BOOLEAN"}}}
    assert gemini_to_json_schema(schema) == {"type": "object", "properties": {"type": {"type": "string"},
                                                                              "nullable": {"type": "boolean"}}}
