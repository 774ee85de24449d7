"""A Gemini conversation as the history builder and the store see it."""

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Conversation:
    """Gemini history plus the call ids of its last model turn that still await outputs."""

    contents: list[dict[str, Any]] = field(default_factory=list)
    system: list[dict[str, Any]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)

    def added_since(self, prior: "Conversation | None", turn: dict[str, Any] | None
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """What this conversation added to `prior`, with the model's answer `turn`: the contents and
        the system parts a stored turn keeps (each turn only its own, so a chain costs linear memory)."""
        start = len(prior.contents) if prior else 0
        added = self.contents[start:] + ([turn] if turn else [])
        return added, self.system[len(prior.system) if prior else 0:]
