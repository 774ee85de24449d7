"""A stored Responses turn keeps its input once.

A turn is stored as its Gemini contents (the history continued from) and its input items (GET
.../input_items, compaction): a 40 KB message was kept twice, once in each, and the store's budget
held half the turns it should. The items are stored with each long string that is also a text part
of the turn's contents left empty, and where to find it (`shared`: [path in the items, content
index, part index]); reading the turn puts the strings back, so every reader sees the items as sent.
"""

from typing import Any

MIN_SHARED = 256  # shorter strings are kept twice: a reference costs about 30 bytes

Path = list[str | int]


def strip_shared(items: Any, contents: list[dict[str, Any]]) -> tuple[Any, list[list[Any]]]:
    """`items` with every long string that is a text part of `contents` left empty (a copy where
    changed; `items` itself is not modified), and the references that put them back."""
    texts: dict[str, tuple[int, int]] = {}
    for ci, content in enumerate(contents):
        parts = content.get("parts") if isinstance(content, dict) else None
        for pi, part in enumerate(parts if isinstance(parts, list) else ()):
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str) and len(text) >= MIN_SHARED:
                texts.setdefault(text, (ci, pi))
    if not texts:
        return items, []
    shared: list[list[Any]] = []
    return _walk(items, [], texts, shared), shared


def _walk(value: Any, path: Path, texts: dict[str, tuple[int, int]], shared: list[list[Any]]) -> Any:
    """`value` with the strings `texts` holds left empty, each noted in `shared`. A function of its
    own, not a closure: a recursive closure is a reference cycle (the function, its cells) that kept
    the turn's whole input alive until the cyclic collector ran, which under gc_tuning's threshold
    was tens of turns later (a 150-turn chain of 40 KB turns held 6 MB of them)."""
    if isinstance(value, str):
        found = texts.get(value) if len(value) >= MIN_SHARED else None
        if found is None:
            return value
        shared.append([list(path), *found])
        return ""
    if isinstance(value, list):
        out = [_walk(v, [*path, i], texts, shared) for i, v in enumerate(value)]
        return out if any(a is not b for a, b in zip(out, value, strict=True)) else value
    if isinstance(value, dict):
        out_d = {k: _walk(v, [*path, k], texts, shared) for k, v in value.items()}
        return out_d if any(out_d[k] is not v for k, v in value.items()) else value
    return value


def restore_shared(items: Any, contents: list[dict[str, Any]], shared: list[list[Any]]) -> Any:
    """The items as sent: each reference's string taken back from the contents (in place)."""
    for path, ci, pi in shared:
        text = contents[ci]["parts"][pi]["text"]
        if not path:
            items = text
            continue
        at = items
        for step in path[:-1]:
            at = at[step]
        at[path[-1]] = text
    return items
