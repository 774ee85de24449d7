"""Collect a model turn from streamed Gemini parts, for replay in later requests' history.

Signatures must go back exactly as received, on the same part (reference/protocols.md §B7), so
only unsigned text parts of the same kind are joined; everything else is kept as sent.
"""

import copy
from typing import Any


def add_part(parts: list[dict[str, Any]], part: dict[str, Any]) -> None:
    prev = parts[-1] if parts else None
    plain = {"text", "thought"}
    if (prev is not None and "text" in part and set(part) <= plain and "text" in prev and set(prev) <= plain
            and bool(prev.get("thought")) == bool(part.get("thought"))):
        prev["text"] += part["text"]
        return
    if part.get("text") == "" and "thoughtSignature" not in part:
        return
    parts.append(copy.deepcopy(part))
