"""to_camel_request hands back the body itself when no key would change (no copy of a long
history for nothing), and otherwise exactly what the copying walk gives (hypothesis)."""

from hypothesis import given
from hypothesis import strategies as st

from proxy.wire.gemini_keys import _walk, to_camel_request

KEY = st.sampled_from(["contents", "parts", "text", "function_call", "functionCall", "args", "inline_data", "x_y",
                       "_private", "system_instruction", "systemInstruction", "parameters"])
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEY, inner, max_size=3),
                    max_leaves=15)


@given(st.dictionaries(KEY, JSON, max_size=4))
def test_the_same_value_as_the_walk(body: dict) -> None:
    assert to_camel_request(body) == _walk(body)


def test_camel_bodies_are_not_copied_and_snake_ones_are() -> None:
    camel = {"contents": [{"role": "user", "parts": [{"functionCall": {"name": "f", "args": {"a_b": 1}}}]}]}
    assert to_camel_request(camel) is camel, "args are data: their snake keys do not count"
    snake = {"contents": [{"role": "user", "parts": [{"function_call": {"name": "f", "args": {"a_b": 1}}}]}]}
    out = to_camel_request(snake)
    assert out is not snake and out["contents"][0]["parts"][0] == {"functionCall": {"name": "f", "args": {"a_b": 1}}}


def test_bodies_deeper_than_the_recursion_budget() -> None:
    """Past 64 levels the check goes on without recursion; what it finds there still counts."""
    def deep(key: str, levels: int) -> dict:
        node: object = {key: 1}
        for _ in range(levels):
            node = [{"parts": node}]
        return {"contents": node}

    camel = deep("thoughtSignature", 3000)  # deeper than Python's recursion limit
    assert to_camel_request(camel) is camel
    assert to_camel_request(deep("thought_signature", 80)) == _walk(deep("thought_signature", 80))
    assert to_camel_request(deep("thought_signature", 80)) != deep("thought_signature", 80)


# Values json_body._plain refuses too: floats beyond 2**63 (orjson's reading of a big integer), ints past 64 bits.
NUMBERS = st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([2**63, -(2**64), 1e19])
JSON_NUMBERS = st.recursive(st.none() | st.booleans() | NUMBERS | st.text(max_size=3),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEY, inner, max_size=3),
                            max_leaves=15)


def _either(parse: object, raw: bytes) -> object:
    from proxy.errors import ProxyError
    try:
        return parse(raw)
    except ProxyError as e:
        return ("refused", e.message)


@given(JSON_NUMBERS)
def test_parse_camel_is_parse_json_then_to_camel_request(value: object) -> None:
    """The one walk gives what the two did, spelling and limits alike (issue 62)."""
    import json

    from proxy.wire.gemini_keys import parse_camel
    from proxy.wire.json_body import parse_json

    raw = json.dumps({"contents": value}).encode()
    got = _either(parse_camel, raw)
    assert got == _either(lambda r: to_camel_request(parse_json(r)), raw)
    assert json.dumps(got) == json.dumps(_either(lambda r: to_camel_request(parse_json(r)), raw)), "int stays int"


def test_parse_camel_keeps_the_depth_limit_and_big_integers() -> None:
    from proxy.wire.gemini_keys import parse_camel
    from proxy.wire.json_body import MAX_JSON_DEPTH

    def nested(depth: int, key: str) -> bytes:
        return (b'{"' + key.encode() + b'":') * (depth - 1) + b"{}" + b"}" * (depth - 1)
    assert parse_camel(nested(MAX_JSON_DEPTH, "a_b")) == to_camel_request(orjson_loads(nested(MAX_JSON_DEPTH, "a_b")))
    assert _either(parse_camel, nested(MAX_JSON_DEPTH + 1, "a"))[0] == "refused"
    big = parse_camel(b'{"contents": [{"args": {"n": 18446744073709551617}}], "system_instruction": {}}')
    assert big == {"contents": [{"args": {"n": 18446744073709551617}}], "systemInstruction": {}}
    assert type(big["contents"][0]["args"]["n"]) is int


def orjson_loads(raw: bytes) -> object:
    import orjson
    return orjson.loads(raw)
