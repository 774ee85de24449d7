"""A Gemini conversation as the history builder and the store see it."""

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Conversation:
    """Gemini history plus the call ids of its last model turn that still await outputs."""

    contents: list[dict[str, Any]] = field(default_factory=list)
    system: list[dict[str, Any]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
