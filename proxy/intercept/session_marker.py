"""The `<session:ID>` prompt marker that binds an intercepted request to a session.

Removed from every user text part before the request leaves (the app's history repeats it).
"""

import re
from typing import Any

MARKER = re.compile(r"\s*<session:([A-Za-z0-9_.:\-]{1,160})>\s*")


def marker_text(session: str) -> str:
    return f"<session:{session}>"


def take_marker(contents: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """Return (the last marker's session id, contents without markers). Input is not modified."""
    found: str | None = None
    out: list[dict[str, Any]] = []
    for content in contents:
        if not isinstance(content, dict) or content.get("role", "user") != "user":
            out.append(content)
            continue
        if content.get("parts") and not _may_hold_marker(content["parts"]):
            out.append(content)  # nothing to take: the same object (the regex costs on long histories)
            continue
        parts = []
        for part in content.get("parts") or []:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str) and MARKER.search(text):
                found = MARKER.findall(text)[-1]
                text = MARKER.sub(" ", text).strip()
                if not text:
                    continue
                part = {**part, "text": text}
            parts.append(part)
        out.append({**content, "parts": parts or [{"text": "."}]})
    return found, out


def _may_hold_marker(parts: list[Any]) -> bool:
    """Whether a text part may hold a marker (a loop, not any() over a generator: every user turn of
    every request is asked)."""
    for part in parts:
        if isinstance(part, dict):
            text = part.get("text")
            if isinstance(text, str) and "<session:" in text:
                return True
    return False
