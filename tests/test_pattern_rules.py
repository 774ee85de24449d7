"""pattern_rules.first_match: the per-model and per-host shell patterns, compiled once per collection,
answer exactly as fnmatch (the reference) would, first match first."""

import fnmatch

from hypothesis import given
from hypothesis import strategies as st

from proxy.pattern_rules import first_match, matches, rule_for

# Glob metacharacters and regex metacharacters both: the translation must keep each as fnmatch does.
ALPHABET = "ab-.3*?[]!^\\()+|{}$"
names = st.text(ALPHABET, max_size=10)
patterns = st.lists(st.text(ALPHABET, max_size=6), max_size=6)


def reference(name: str, pats: list[str]) -> int | None:
    return next((i for i, p in enumerate(pats) if fnmatch.fnmatch(name, p)), None)


@given(names, patterns)
def test_the_first_match_is_fnmatch_s(name: str, pats: list[str]) -> None:
    assert first_match(name, pats) == reference(name, pats)
    assert matches(name, pats) == (reference(name, pats) is not None)
    rules = [(p, f"mode{i}") for i, p in enumerate(pats)]
    want = reference(name, pats)
    assert rule_for(name, rules) == (None if want is None else f"mode{want}")


def test_the_tool_modes_rules_as_written() -> None:
    rules = [("gemma-4*", "gemma4"), ("gemma-3*", "gemma3"), ("*functiongemma*", "functiongemma")]
    assert rule_for("gemma-3-27b-it", rules) == "gemma3"
    assert rule_for("models/functiongemma-270m", rules) == "functiongemma"
    assert rule_for("gemini-2.5-flash", rules) is None
    assert rule_for("Gemma-3-27b", rules) is None  # case as written, as fnmatch on POSIX
    assert not matches("anything", ()) and matches("anything", ["*"])


def test_a_collection_is_never_answered_for_another() -> None:
    """Compiled by the collection's id, which a new collection may reuse once the old one is gone:
    the cache keeps the collection it compiled, so that cannot happen, and it checks identity."""
    for _ in range(300):  # past the cache's bound, too
        first = ["gemini-3*"]
        assert matches("gemini-3-pro", first)
        del first
        second = ["gemma-*"]
        assert not matches("gemini-3-pro", second) and matches("gemma-3", second)
