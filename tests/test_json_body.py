"""The edge's JSON parser (wire/json_body.py): its orjson fast path must give exactly what the
standard library gives, and the same limits, whatever the text."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.errors import ProxyError
from proxy.wire.json_body import MAX_JSON_DEPTH, _parse_standard, parse_json

scalars = (st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
           | st.sampled_from(["\ud800", "\udfff", "😀", "\x00"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=4) | st.just("\ud800"), inner, max_size=4), max_leaves=30)


def outcome(parse, raw: bytes):
    try:
        return "ok", repr(parse(raw))  # repr: nan == nan and 1 vs 1.0 told apart
    except ProxyError as e:
        return "error", e.message, e.param


@given(values)
@settings(max_examples=400)
def test_fast_path_equals_the_standard_path(value):
    raw = json.dumps(value).encode()  # ensure_ascii: surrogates become escapes, NaN a bare token
    assert outcome(parse_json, raw) == outcome(_parse_standard, raw)


surrogate_texts = st.lists(st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "😀", "a"]),
                           max_size=4).map("".join)


@given(surrogate_texts, st.booleans(), st.booleans())
def test_surrogates_in_any_order_and_case_are_read_as_the_standard_library_reads_them(text, as_key, upper):
    """The fast path relies on orjson refusing a lone surrogate (high without low, low first)."""
    raw = json.dumps({text: 1} if as_key else {"t": [text]}).encode()
    if upper:
        raw = raw.replace(b"\\u", b"\\U").upper().replace(b"\\U", b"\\u")
    assert outcome(parse_json, raw) == outcome(_parse_standard, raw)
    decoded = json.dumps(json.loads(raw), ensure_ascii=False)  # a valid pair is one character here
    lone = any("\ud800" <= c <= "\udfff" for c in decoded)
    assert outcome(parse_json, raw)[0] == ("error" if lone else "ok")


@given(st.integers(min_value=1, max_value=MAX_JSON_DEPTH + 3), st.sampled_from(["list", "dict"]))
def test_depth_limit_is_the_same(depth, kind):
    raw = (b"[" * depth + b"]" * depth) if kind == "list" else (b'{"a":' * depth + b"1" + b"}" * depth)
    assert outcome(parse_json, raw) == outcome(_parse_standard, raw)
    assert (outcome(parse_json, raw)[0] == "ok") == (depth <= MAX_JSON_DEPTH)


@pytest.mark.parametrize("raw, expected", [
    (b"123456789012345678901234567890", 123456789012345678901234567890),  # orjson would give a float
    (b'{"n": -98765432109876543210}', {"n": -98765432109876543210}),
])
def test_exact_numbers(raw, expected):
    assert parse_json(raw) == expected
    assert type(parse_json(raw)) is type(expected)


@pytest.mark.parametrize("raw", [b"[1e400]", b'{"x": NaN}', b"-Infinity", b'{"t": -1e999}'])
def test_numbers_json_cannot_carry_are_a_400(raw):
    """The standard library would read these; they could only reach Gemini as null or not at all."""
    with pytest.raises(ProxyError, match="a number JSON cannot carry") as e:
        parse_json(raw)
    assert e.value.status == 400


@given(st.binary(max_size=40))
def test_garbage_is_a_clear_400(raw):
    assert outcome(parse_json, raw) == outcome(_parse_standard, raw)


clean_scalars = (st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
                 | st.floats(allow_nan=False, allow_infinity=False)
                 | st.text(st.characters(exclude_categories=["Cs"]), max_size=8))
clean = st.recursive(clean_scalars, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=30)


@given(clean)
@settings(max_examples=200)
def test_fast_json_round_trip_keeps_every_digit(value):
    """What the store and the translators copy comes back exactly (big integers included)."""
    from proxy import fast_json
    assert repr(fast_json.clone(value)) == repr(value)


@given(clean)
@settings(max_examples=200)
def test_fast_json_copied_is_a_deep_copy(value):
    """copied (the translators' copy of an answer's parts) gives what copy.deepcopy gives, and shares no
    dict or list with the original: changing every container of the copy leaves the original as it was."""
    import copy

    from proxy import fast_json
    before = copy.deepcopy(value)
    out = fast_json.copied(value)
    assert repr(out) == repr(value)

    def spoil(v):
        if type(v) is dict:
            for k in list(v):
                spoil(v[k])
            v["spoiled"] = True
        elif type(v) is list:
            for x in v:
                spoil(x)
            v.append("spoiled")
    spoil(out)
    assert repr(value) == repr(before)


@given(values, st.booleans())
@settings(max_examples=400)
def test_call_arguments_fast_path_equals_the_standard_path(value, ascii_only):
    """parse_arguments (a call's `arguments` string) reads orjson first: the same value or the same
    400 as the standard library, for NaN, infinities, big integers, lone surrogates, deep nesting."""
    from proxy.wire.json_body import _parse_arguments_standard, parse_arguments
    text = json.dumps(value, ensure_ascii=ascii_only)

    def outcome_of(parse):
        try:
            return "ok", repr(parse(text, "input[3].arguments"))
        except ProxyError as e:
            return "error", e.message, e.param
        except (ValueError, RecursionError) as e:  # the standard path's own errors, unchanged
            return "raised", type(e).__name__
    assert outcome_of(parse_arguments) == outcome_of(_parse_arguments_standard)


@pytest.mark.parametrize("text", ['{"a": 1e400}', '{"a": NaN}', "-Infinity", "[" * 150 + "]" * 150,
                                  '{"n": 123456789012345678901234567890}', '{"s": "\\ud800"}', "{bad", "",
                                  '{"a": 1, "a": 2}'])
def test_call_arguments_edge_cases_match_the_standard_path(text):
    from proxy.wire.json_body import _parse_arguments_standard, parse_arguments

    def outcome_of(parse):
        try:
            return "ok", repr(parse(text, "p"))
        except ProxyError as e:
            return "error", e.message, e.param
        except ValueError as e:
            return "raised", type(e).__name__, str(e)
    assert outcome_of(parse_arguments) == outcome_of(_parse_arguments_standard)
