"""ConversionCache (tools/conversion_cache.py): a hit gives what converting again would give, never
an object the cache keeps; a conversion that changed nothing hands the caller back its own value."""

from proxy.tools.conversion_cache import ConversionCache


def test_an_unchanged_conversion_hands_back_the_callers_own_value() -> None:
    cache, calls = ConversionCache(), []

    def same(value: dict) -> dict:
        calls.append(1)
        return {"type": value["type"], "properties": dict(value["properties"])}

    first = {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}}
    assert cache.get(first, (), lambda: same(first)) == first
    second = {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}}  # the next request's own parse
    assert cache.get(second, (), lambda: same(second)) is second
    assert len(calls) == 1


def test_equal_in_python_but_not_in_json_is_a_change() -> None:
    """1 == 1.0 == True in Python; the bytes sent upstream differ, so the converted value is kept."""
    cache = ConversionCache()
    value = {"minimum": 1, "flag": 1}
    converted = {"minimum": 1.0, "flag": True}
    assert cache.get(value, (), lambda: converted) is converted
    again = {"minimum": 1, "flag": 1}
    hit = cache.get(again, (), lambda: {"never": "called"})
    assert hit is not again and type(hit["minimum"]) is float and hit["flag"] is True


def test_each_hit_of_a_changed_conversion_is_a_fresh_copy() -> None:
    cache = ConversionCache()
    value = {"type": "object"}
    cache.get(value, ("x",), lambda: {"type": "OBJECT"})
    one = cache.get({"type": "object"}, ("x",), lambda: {"never": "called"})
    one["type"] = "changed by a caller"
    assert cache.get({"type": "object"}, ("x",), lambda: {"never": "called"}) == {"type": "OBJECT"}
    assert cache.get({"type": "object"}, ("y",), lambda: {"other": "options"}) == {"other": "options"}
