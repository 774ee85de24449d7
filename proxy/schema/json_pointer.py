"""Resolve a local JSON Schema reference (`#`, `#/$defs/Name`, RFC 6901 escapes)."""

from typing import Any


def resolve_ref(root: Any, ref: str) -> Any:
    """The node `ref` points at inside `root`, or None for remote or dangling references."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None  # remote refs cannot be fetched from inside a proxy
    node = root
    for raw in ref[2:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return None
    return node
