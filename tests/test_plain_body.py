"""parse_json's walk of a whole body (`plain_body`, a level of containers at a time) says what the
recursive walk (`_plain`) says: no container 100 deep, no float that may have been a big integer."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.wire.json_body import MAX_JSON_DEPTH, _plain, parse_json, plain_body

SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=3) | st.sampled_from(
    [1.5, 2.0**63, -(2.0**63), 2.0**63 - 1024, 1e300, -1e19, 0.0])
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner,
                                                                                           max_size=3), max_leaves=20)


def nested(depth: int, leaf: Any = "x", kind: str = "list") -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if kind == "list" or i % 2 else {"k": value, "s": "t"}
    return value


@settings(max_examples=1000, deadline=None)
@given(VALUES)
def test_the_level_walk_is_the_recursive_one(value: Any) -> None:
    assert plain_body(value) == _plain(value)


@pytest.mark.parametrize("depth", [1, 98, 99, 100, 101, 150])
@pytest.mark.parametrize("kind", ["list", "mixed"])
@pytest.mark.parametrize("leaf", ["x", [], {}, 2.0**64])
def test_the_depth_limit_is_the_same(depth: int, kind: str, leaf: Any) -> None:
    value = nested(depth, leaf, kind)
    assert plain_body(value) == _plain(value)
    assert plain_body({"a": [1, "b"], "deep": value}) == _plain({"a": [1, "b"], "deep": value})


def test_a_body_just_too_deep_is_refused_by_name() -> None:
    assert parse_json(b"[" * (MAX_JSON_DEPTH - 1) + b"]" * (MAX_JSON_DEPTH - 1)) is not None
    with pytest.raises(Exception, match="nested deeper than 100 levels"):
        parse_json(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
