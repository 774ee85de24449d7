"""Client tool names <-> names Gemini accepts, with a reverse map so clients see their own names.

Gemini: start with a letter or underscore, then letters, digits, `_ . : -`, at most 64 characters
("Invalid function name. Must start with a letter or an underscore…", gemini-cli#6704).
"""

import hashlib
import re

GEMINI_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:\-]{0,63}$")
MAX_NAME_LEN = 64
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_.:\-]")


def _sanitize(name: str) -> str:
    clean = _BAD_CHARS.sub("_", name)
    if not clean or not (clean[0].isalpha() or clean[0] == "_") or not clean[0].isascii():
        clean = "_" + clean
    return clean[:MAX_NAME_LEN]


class ToolNames:
    """Bidirectional map built once per request from the client's tool names."""

    def __init__(self) -> None:
        self.to_client: dict[str, str] = {}
        self.to_gemini_map: dict[str, str] = {}

    def add(self, client_name: str) -> str:
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

    def to_gemini(self, client_name: str) -> str:
        """The Gemini name for a client name (sanitized even when the tool was not declared)."""
        return self.to_gemini_map.get(client_name) or (
            client_name if GEMINI_NAME.match(client_name) else _sanitize(client_name))

    def client(self, gemini_name: str) -> str:
        return self.to_client.get(gemini_name, gemini_name)
