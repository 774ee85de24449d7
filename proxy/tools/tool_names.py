"""Client tool names <-> names Gemini accepts, with a reverse map so clients see their own names.

Gemini: start with a letter or underscore, then letters, digits, `_ . : -`, at most 64 characters
("Invalid function name. Must start with a letter or an underscore…", gemini-cli#6704).
"""

import hashlib
import re
from dataclasses import dataclass
from typing import Literal

GEMINI_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:\-]{0,63}$")
MAX_NAME_LEN = 64
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_.:\-]")


def _sanitize(name: str) -> str:
    clean = _BAD_CHARS.sub("_", name)
    if not clean or not (clean[0].isalpha() or clean[0] == "_") or not clean[0].isascii():
        clean = "_" + clean
    return clean[:MAX_NAME_LEN]


def loose_name(name: str) -> str:
    """A tool name compared loosely, as models misspell them: case and `-`/`_`/`.` ignored."""
    return name.lower().replace("-", "").replace("_", "").replace(".", "")


@dataclass(frozen=True)
class ToolRef:
    """What a Gemini function name stands for on the client's side."""

    name: str
    namespace: str | None = None
    kind: Literal["function", "custom", "search"] = "function"  # search: a tool-search tool (deferral.py)


def qualified(name: str, namespace: str | None) -> str:
    """The flat name of a namespace member (`ns__name`, CLIProxyAPI's convention)."""
    return f"{namespace}__{name}" if namespace else name


class ToolNames:
    """Bidirectional map built once per request from the client's tool names."""

    def __init__(self) -> None:
        self.to_client: dict[str, str] = {}
        self.to_gemini_map: dict[str, str] = {}
        self.refs: dict[str, ToolRef] = {}  # Gemini name -> the client's tool

    def copy(self) -> "ToolNames":
        other = ToolNames()
        other.to_client, other.to_gemini_map, other.refs = dict(self.to_client), dict(self.to_gemini_map), dict(
            self.refs)
        return other

    def ref(self, gemini_name: str) -> ToolRef:
        return self.refs.get(gemini_name) or ToolRef(self.client(gemini_name))

    def add(self, client_name: str, namespace: str | None = None,
            kind: Literal["function", "custom", "search"] = "function") -> str:
        flat = qualified(client_name, namespace)
        gname = self._add(flat)
        self.refs[gname] = ToolRef(client_name, namespace, kind)
        return gname

    def _add(self, client_name: str) -> str:
        if client_name in self.to_gemini_map:
            return self.to_gemini_map[client_name]
        gname = client_name if GEMINI_NAME.match(client_name) else _sanitize(client_name)
        if gname in self.to_client:
            # Two client names collapsed onto one: disambiguate with a stable hash suffix.
            suffix = "_" + hashlib.sha256(client_name.encode()).hexdigest()[:10]
            gname = gname[: MAX_NAME_LEN - len(suffix)] + suffix
        self.to_client[gname] = client_name
        self.to_gemini_map[client_name] = gname
        return gname

    def to_gemini(self, client_name: str, namespace: str | None = None) -> str:
        """The Gemini name for a client name (sanitized even when the tool was not declared)."""
        flat = qualified(client_name, namespace)
        return self.to_gemini_map.get(flat) or (flat if GEMINI_NAME.match(flat) else _sanitize(flat))

    def client(self, gemini_name: str) -> str:
        return self.to_client.get(gemini_name, gemini_name)
