"""Collect a model turn from streamed Gemini parts, for replay in later requests' history.

Signatures must go back exactly as received, on the same part (docs/wire.md#signatures), so
only unsigned text parts of the same kind are joined; everything else is kept as sent. Text is
joined once at the end (a list of pieces, not `+=` on a string: a 5 MB answer in 300 chunks would
otherwise copy ~750 MB and fragment the heap).
"""

from typing import Any

from proxy import fast_json
from proxy.from_gemini.partial_args import PartialCalls

_PLAIN = {"text", "thought"}
# A search the proxy ran within the answer (server/search_hops.py): its result, a part of the proxy's
# own, splits the turn -- the model's calls before it, the user turn answering them, the model again.
SEARCH_RESULT = "gtpToolSearch"


class ModelTurn:
    def __init__(self) -> None:
        self._parts: list[dict[str, Any]] = []
        self._pieces: list[list[str] | None] = []  # per part: text pieces still to join, or None
        self._partial = PartialCalls()  # a call streamed in fragments is kept as one whole call

    def add(self, part: dict[str, Any]) -> None:
        """Add a part as Gemini sent it (fragments of a streamed call are joined into one call)."""
        if SEARCH_RESULT in part:
            for event in self._partial.finish():
                self._add(event.call.whole_part())
            self._join_last()
            self._parts.append(part)
            self._pieces.append(None)
            return
        events, whole = self._partial.feed(part)
        for event in events:
            if event.kind == "end":
                self._add(event.call.whole_part())
        if whole is not None:
            self._add(whole)

    def _add(self, part: dict[str, Any]) -> None:
        prev = self._parts[-1] if self._parts else None
        if (prev is not None and "text" in part and set(part) <= _PLAIN and "text" in prev and set(prev) <= _PLAIN
                and bool(prev.get("thought")) == bool(part.get("thought"))):
            pieces = self._pieces[-1]
            if pieces is None:
                pieces = self._pieces[-1] = [prev["text"]]
            pieces.append(part["text"])
            return
        if part.get("text") == "" and "thoughtSignature" not in part:
            return
        self._join_last()
        self._parts.append(fast_json.copied(part))
        self._pieces.append(None)

    def _join_last(self) -> None:
        if self._pieces and self._pieces[-1] is not None:
            self._parts[-1]["text"] = "".join(self._pieces[-1])
            self._pieces[-1] = None

    @property
    def parts(self) -> list[dict[str, Any]]:
        """The turn's parts so far (joined text, streamed calls ended; the list is the builder's own)."""
        for event in self._partial.finish():
            self._add(event.call.whole_part())
        self._join_last()
        return self._parts

    def contents(self) -> list[dict[str, Any]]:
        """The turn as history: one model content, or -- where the proxy ran searches within the
        answer -- model, user (the searches' functionResponses), model..., each non-empty."""
        out: list[dict[str, Any]] = []
        for part in self.parts:
            role = "user" if SEARCH_RESULT in part else "model"
            if not out or out[-1]["role"] != role:
                out.append({"role": role, "parts": []})
            out[-1]["parts"].append(part[SEARCH_RESULT]["response"] if role == "user" else part)
        return out

    def __bool__(self) -> bool:
        return bool(self._parts)
