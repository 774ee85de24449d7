"""normalize_arguments' fast path (`_surely_valid`): whenever it calls arguments valid, jsonschema (the
proxy's validator, argument_validator.py) finds no error either; when it is not sure, jsonschema
decides and words the errors as before."""

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.schema import normalize_arguments as na
from proxy.schema.argument_validator import validator_for

TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array", "strng"])
NAMES = st.sampled_from(["a", "b", "c"])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([1.0, 2.5, float("nan")])
    | st.sampled_from(["", "x", "X", "true", "1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3), max_leaves=8)


def _schemas() -> st.SearchStrategy[Any]:
    leaf = st.fixed_dictionaries({}, optional={
        "type": TYPES | st.lists(TYPES, max_size=3) | st.just(5), "description": st.text(max_size=3),
        "enum": st.lists(st.sampled_from(["x", "X", 1, True, None, 1.0]), max_size=3) | st.just("x"),
        "default": VALUES, "minLength": st.just(2), "$ref": st.just("#/$defs/a"), "format": st.just("date"),
        "$schema": st.sampled_from(["http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema#",
                                    "https://json-schema.org/draft/2020-12/schema"])})
    return st.recursive(leaf, lambda inner: st.fixed_dictionaries({}, optional={
        "type": TYPES | st.lists(TYPES, max_size=2),
        "properties": st.dictionaries(NAMES, inner | st.booleans(), max_size=3) | st.just([]),
        "required": st.lists(NAMES | st.just(3), max_size=3) | st.just("a"),
        "additionalProperties": st.booleans() | inner | st.just("no"),
        "items": inner | st.booleans() | st.lists(inner, max_size=2),
        "enum": st.lists(st.sampled_from(["x", "a", 1]), max_size=2),
        "$defs": st.just({"a": {"type": "string"}}), "title": st.just("t")}), max_leaves=6)


@settings(max_examples=2000, deadline=None)
@given(VALUES, _schemas())
def test_surely_valid_only_when_jsonschema_finds_nothing(value: Any, schema: dict[str, Any]) -> None:
    if na._surely_valid(value, schema, top=True):
        assert list(validator_for(schema).iter_errors(value)) == []


def test_the_common_call_is_answered_without_jsonschema(monkeypatch) -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"path": {"type": "string", "description": "a file"},
                             "mode": {"type": "string", "enum": ["r", "w"]},
                             "lines": {"type": "array", "items": {"type": "integer"}}},
              "required": ["path"], "additionalProperties": False}
    monkeypatch.setattr(na, "validator_for", None)  # asked: a TypeError, not []
    assert na.normalize_arguments({"path": "p", "mode": "r", "lines": [1, 2]}, schema) == (
        {"path": "p", "mode": "r", "lines": [1, 2]}, [])


def test_what_it_is_not_sure_of_is_jsonschema_s_words() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n", "m"],
              "additionalProperties": False}
    assert na.normalize_arguments({"n": 1, "x": 2}, schema, fill_missing=False)[1] == [
        "(root): 'm' is a required property", "(root): Additional properties are not allowed ('x' was unexpected)"]
    floats = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert not na._surely_valid({"n": 1.0}, floats)  # 1.0: jsonschema's integer, not the fast path's
    assert na.normalize_arguments({"n": 1.0}, floats) == ({"n": 1}, [])
