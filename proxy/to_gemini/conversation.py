"""A Gemini conversation as the history builder and the store see it."""

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Conversation:
    """Gemini history plus the call ids of its last model turn that still await outputs."""

    contents: list[dict[str, Any]] = field(default_factory=list)
    system: list[dict[str, Any]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)

    def added_since(self, prior: "Conversation | None", turn: dict[str, Any] | list[dict[str, Any]] | None
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """What this conversation added to `prior`, with the model's answer `turn`: the contents and
        the system parts a stored turn keeps (each turn only its own, so a chain costs linear memory);
        `turn` is one content or the several an answer with the proxy's searches in it makes."""
        start = len(prior.contents) if prior else 0
        turns = turn if isinstance(turn, list) else [turn] if turn else []  # (searches split a turn: search_hops.py)
        added = self.contents[start:] + turns
        return added, self.system[len(prior.system) if prior else 0:]
