"""Gemini answers from a model that speaks a text dialect, rewritten as Gemini would have answered
with native tools: its text parsed (chunk by chunk, never buffered whole) into text, thought and
`functionCall` parts. The same object serves a whole answer and a stream (the h11 shape: chunks
in, chunks out). Pure; no I/O.
"""

import logging
from typing import Any

from proxy.dialects.base import Call, Dialect, ToolSpec
from proxy.dialects.text_parser import Event
from proxy.journal import exchange

log = logging.getLogger(__name__)
NOTED_TEXT = 4000  # characters of the model's text the journal keeps beside the calls parsed from it


def _part(event: Event) -> dict[str, Any] | None:
    kind, value = event
    if kind == "text":
        return {"text": value}
    if kind == "reasoning":
        return {"text": value, "thought": True}
    if kind == "call":
        call: Call = value
        return {"functionCall": {"name": call.name, "args": call.arguments}}
    return None


class AnswerParser:
    """Rewrites one answer's chunks; `warnings` collects what was kept as text and why."""

    def __init__(self, d: Dialect, tools: list[ToolSpec], *, rescue: bool = False, think_open: bool = False) -> None:
        self.dialect, self.rescue, self.think_open = d, rescue, think_open
        self.tools = {t.name: t for t in tools}
        self.parsers: dict[int, Any] = {}
        self.warnings: list[str] = []
        self.calls = 0
        self.recording = exchange.recording()  # the journal's note of what was parsed from which text
        self.raw: dict[int, str] = {}
        self.parsed: list[str] = []

    def _parser(self, index: int) -> Any:
        if index not in self.parsers:
            self.parsers[index] = self.dialect.parser(self.tools, think_open=self.think_open, rescue=self.rescue)
        return self.parsers[index]

    def _parts(self, events: list[Event]) -> list[dict[str, Any]]:
        out = []
        for event in events:
            if event[0] == "warning":
                self.warnings.append(event[1])
                exchange.note("dialect", f"{self.dialect.name}: {event[1]}")
            elif event[0] == "call":
                self.calls += 1
                if self.recording:
                    self.parsed.append(event[1].name)
            part = _part(event)
            if part is not None:
                out.append(part)
        return out

    def chunk(self, chunk: dict[str, Any]) -> dict[str, Any]:
        """One chunk (or a whole answer) rewritten; a candidate whose text is all held back keeps
        its other fields and no content."""
        candidates = chunk.get("candidates")
        if not isinstance(candidates, list):
            return chunk
        out = []
        for n, cand in enumerate(candidates):
            if not isinstance(cand, dict):
                out.append(cand)
                continue
            index = cand.get("index", n) if isinstance(cand.get("index", n), int) else n
            parser = self._parser(index)
            content = cand.get("content") if isinstance(cand.get("content"), dict) else {}
            parts: list[dict[str, Any]] = []
            for p in content.get("parts") or []:
                if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought"):
                    if self.recording and len(self.raw.get(index, "")) < NOTED_TEXT:
                        self.raw[index] = self.raw.get(index, "") + p["text"]
                    parts += self._parts(parser.feed(p["text"]))
                    extra = {k: v for k, v in p.items() if k not in ("text", "thought")}
                    if extra:  # a signature (Gemini 3 signs its last text part) travels on an empty text part
                        parts.append({"text": "", **extra})
                else:
                    parts.append(p)
            finish = cand.get("finishReason")
            if finish:
                parts += self._parts(parser.close("length" if finish == "MAX_TOKENS" else "stop"))
                if self.recording:
                    text = self.raw.pop(index, "")
                    exchange.note("dialect", f"{len(self.parsed)} call(s) parsed from the model's "
                                             f"{self.dialect.name} text" + (f": {', '.join(self.parsed)}"
                                                                             if self.parsed else ""),
                                  calls=list(self.parsed), text=text[:NOTED_TEXT])
                    self.parsed = []
            cand = {k: v for k, v in cand.items() if k != "content"}
            if parts:
                cand["content"] = {**content, "role": content.get("role", "model"), "parts": _merged(parts)}
            out.append(cand)
        return {**chunk, "candidates": out}


def held_back(chunk: Any) -> bool:
    """A rewritten stream chunk that carries nothing (its text is held back inside a call block).
    Streams skip it: Gemini never sends a candidate without content mid-stream, and clients such as
    google-genai's automatic function calling stop reading at one."""
    if not isinstance(chunk, dict) or set(chunk) - {"candidates", "modelVersion", "responseId", "usageMetadata"}:
        return False
    cands = chunk.get("candidates")
    return isinstance(cands, list) and bool(cands) and all(
        isinstance(c, dict) and "content" not in c and not c.get("finishReason") for c in cands)


def _merged(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent text pieces of the same kind as one part (a client sees one text, not dozens)."""
    out: list[dict[str, Any]] = []
    for p in parts:
        prev = out[-1] if out else None
        if (prev is not None and set(p) <= {"text", "thought"} and set(prev) <= {"text", "thought"}
                and bool(p.get("thought")) == bool(prev.get("thought"))):
            out[-1] = {**prev, "text": prev["text"] + p["text"]}
        else:
            out.append(p)
    return out
