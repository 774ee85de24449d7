"""Per-model options written `[PATTERN=]MODE`: shell patterns on the Gemini model name, first match
wins, a bare mode applies to every model (`--schema-mode`, `--tool-result-media`)."""

import fnmatch
import re
from collections.abc import Sequence
from typing import Any

# Pattern collections compiled so far, by id, each with the collection itself (kept alive, so its id
# is never another's): options are parsed once, so a handful of entries; cleared past the bound.
_COMPILED: dict[int, tuple[Any, re.Pattern[str]]] = {}
_COMPILED_MAX = 256


def parse_rules(specs: list[str] | tuple[str, ...], modes: tuple[str, ...], what: str) -> list[tuple[str, str]]:
    """`["gemini-3*=json", "parameters"]` -> [(pattern, mode)]; a bad entry is a ValueError naming it."""
    rules = []
    for spec in specs:
        pattern, _, mode = spec.rpartition("=") if "=" in spec else ("*", "=", spec)
        if mode not in modes or not pattern:
            choices = " or ".join(repr(m) for m in modes)
            raise ValueError(f"{what} must be {choices} (optionally PATTERN=MODE), not {spec!r}")
        rules.append((pattern, mode))
    return rules


def rule_for[T](model: str, rules: Sequence[tuple[str, T]]) -> T | None:
    """The value (a mode, an upstream, a budget...) of the first rule whose pattern matches `model`, or None."""
    i = first_match(model, rules)
    return None if i is None else rules[i][1]


def matches(name: str, patterns: Sequence[str]) -> bool:
    """Whether any shell pattern matches `name` (fnmatch's rules)."""
    return first_match(name, patterns) is not None


def first_match(name: str, patterns: Sequence[str] | Sequence[tuple[str, Any]]) -> int | None:
    """The index of the first pattern (or (pattern, value) rule) matching `name` as fnmatch would on
    POSIX (case as written), or None. A collection is compiled into one expression the first time:
    asked per request and per flow, the tool modes, media rules and hosts cost one fnmatch call
    (a normcase and a cache lookup) per pattern otherwise."""
    hit = _COMPILED.get(id(patterns))
    if hit is None or hit[0] is not patterns:
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        texts = [p if isinstance(p, str) else p[0] for p in patterns]
        expr = "|".join(f"({fnmatch.translate(p)})" for p in texts) or "(?!)"
        hit = _COMPILED[id(patterns)] = (patterns, re.compile(expr))
    m = hit[1].match(name)
    return None if m is None else m.lastindex - 1
