"""One answer's text in, content / reasoning / calls out, chunk by chunk (the h11 shape: `feed`
returns events, `close` flushes; no I/O).

Rules (docs/wire.md#dialects):
- text goes out as soon as it cannot be the start of an opener; only a suffix that could be one
  (and trailing whitespace, which is dropped before a call) is held back;
- a call block is held until it closes, then parsed whole: calls, or the block as text with a
  warning (never dropped, never invented); at the end of the answer an unclosed block is repaired
  where the dialect can be certain, except when the answer was cut by length;
- reasoning: a think opener at the start of the answer (or one the prompt already opened) starts
  reasoning, held until its closing tag; an unterminated block is reasoning when the answer was cut
  by length and content otherwise; a call in reasoning is salvaged when the content is empty;
- every decision depends on the text only, never on where the chunks were cut, so the streamed
  result equals the one-shot parse (tests/test_dialect_chunking.py).
"""

import logging
from dataclasses import dataclass
from typing import Any

from proxy.dialects.base import (
    INCOMPLETE,
    MAX_BLOCK_CHARS,
    NOT_A_CALL,
    Call,
    Dialect,
    ParseFailure,
    PartialBlock,
    ToolSpec,
)
from proxy.dialects.brackets import find_from

log = logging.getLogger(__name__)
Event = tuple[str, Any]  # ("text", str) | ("reasoning", str) | ("call", Call) | ("warning", str)
# Reasoning held beyond this is decided as reasoning and sent (the answer is still thinking).
MAX_HELD_REASONING = 4 << 20
WS = " \t\r\n"


@dataclass
class Held:
    """A bare call block waiting for the end of the message (its text as written, with the separators
    after it; its calls; the calls of it that could not be read, if any)."""
    block: str
    calls: list[Call]
    partial: PartialBlock | None = None


class TextParser:
    def __init__(self, dialect: Dialect, tools: dict[str, ToolSpec], *, think_open: bool = False,
                 rescue: bool = False, max_block: int = MAX_BLOCK_CHARS) -> None:
        self.dialect, self.tools, self.rescue, self.max_block = dialect, tools, rescue, max_block
        self.think = None if rescue else dialect.think
        self.phase = "think" if think_open and self.think else ("start" if self.think else "content")
        self.buf = ""
        self.in_block = False
        self.skip_ws = False       # whitespace after a call block or a think block is dropped
        self.after_block = False   # stray markers right after a call block are dropped
        self.pending_ws = ""       # whitespace before a block: dropped if it holds calls, else text
        self.opener: str | None = None  # the think opener seen (None: pre-opened by the template)
        self.memo: dict[Any, Any] = {}  # the current block's resumable scans (linear streaming)
        self.reasoning_seen: list[str] = []
        self.saw_content = self.saw_call = False
        # Calls of bare blocks (dialect.bare), held with their text until the message ends: they are
        # calls only if nothing but whitespace, separators and more such blocks follows.
        self.held: list[Held] = []
        self._openers = dialect.openers + (self.think.opens if self.think and dialect.think_anywhere else ())

    # --- public ----------------------------------------------------------------------------------
    def feed(self, text: str) -> list[Event]:
        # The buffer is the only reference while it grows, so CPython extends it in place (amortized
        # linear) instead of copying the whole held block on every chunk.
        buf, self.buf = self.buf, ""
        buf += text
        self.buf = buf
        del buf
        return self._run(False, "stop")

    def close(self, finish: str = "stop") -> list[Event]:
        """No more text; `finish` is "length" when the answer was cut by a token limit."""
        events = self._run(True, finish)
        for held in self.held:  # the message held nothing else: they were calls
            if held.partial is not None:
                self._partial(events, held.partial)
            for call in held.calls:
                self._emit(events, "call", call)
        self.held = []
        if not self.saw_call and not self.saw_content and self.reasoning_seen and not self.rescue:
            events += self._salvage()
        return events

    # --- machinery -------------------------------------------------------------------------------
    def _emit(self, events: list[Event], kind: str, value: Any) -> None:
        if kind == "text":
            if not value:
                return
            self.saw_content = self.saw_content or bool(value.strip())
        elif kind == "call":
            self.saw_call = True
        elif kind == "reasoning":
            if not value:
                return
            self.reasoning_seen.append(value)
        events.append((kind, value))

    def _run(self, closing: bool, finish: str) -> list[Event]:
        events: list[Event] = []
        while True:
            if self.phase == "start" and not self._start(closing):
                return events
            if self.phase == "think" and not self._thinking(events, closing, finish):
                return events
            if self.phase != "content":
                continue
            if not (self._block(events, closing, finish) if self.in_block else self._text(events, closing)):
                return events

    def _start(self, closing: bool) -> bool:
        """At the start of the answer: a think opener, or content."""
        assert self.think is not None
        s = self.buf.lstrip(WS)
        if not s and not closing:
            return False
        for opener in self.think.opens:
            if s.startswith(opener):
                self.buf, self.phase, self.opener = s[len(opener):], "think", opener
                return True
        if not closing and any(o.startswith(s) for o in self.think.opens):
            return False
        self.phase = "content"
        return True

    def _thinking(self, events: list[Event], closing: bool, finish: str) -> bool:
        assert self.think is not None
        if self.opener is None and not self._reopened(closing):
            return False
        close = self.think.closer(self.opener)
        i = find_from(self.buf, close, 0, self.memo)
        j = self._call_in_thought()
        if j >= 0 and (i < 0 or j < i):  # Qwen3 starts calling before </think>: the thought ends there
            self.memo = {}
            self._emit(events, "reasoning", self._reasoning(self.buf[:j]))
            self.buf, self.phase = self.buf[j:], "content"
            return True
        if i >= 0:
            self.memo = {}
            self._emit(events, "reasoning", self._reasoning(self.buf[:i]))
            self.buf, self.phase, self.skip_ws = self.buf[i + len(close):], "content", True
            return True
        if len(self.buf) > MAX_HELD_REASONING:
            keep = len(close)
            self._emit(events, "reasoning", self.buf[:-keep])
            self.buf, self.memo = self.buf[-keep:], {}
            return False
        if not closing:
            return False
        # Unterminated: cut by length, it was all reasoning; otherwise the model skipped thinking.
        if finish == "length":
            self._emit(events, "reasoning", self._reasoning(self.buf))
            self.buf = ""
            return False
        self.phase, self.skip_ws = "content", True
        self.buf = self._unnamed(self.buf)
        return True

    def _reopened(self, closing: bool) -> bool:
        """The template opened the thought and the model writes the opener again (`<think>` after a
        pre-opened `<think>`): it is dropped. False while the text may still become one."""
        assert self.think is not None
        s = self.buf.lstrip(WS)
        for opener in self.think.opens:
            if s.startswith(opener):
                self.buf, self.opener = s[len(opener):], opener
                return True
            if opener.startswith(s) and not closing:
                return False
        self.opener = ""  # decided (the template's opener): never looked at again
        return True

    def _call_in_thought(self) -> int:
        """Where a call marker starts inside the thought, for dialects whose models call before closing
        it (Ollama's Qwen3 parser reads them so); -1 when none or the dialect does not."""
        if not self.dialect.call_ends_thinking:
            return -1
        found = [p for o in self.dialect.openers
                 if o not in self.dialect.bare and (p := find_from(self.buf, o, 0, self.memo)) >= 0]
        return min(found) if found else -1  # resumable scans (memo): a long thought stays linear

    def _reasoning(self, text: str) -> str:
        return self._unnamed(text).strip(WS)

    def _unnamed(self, text: str) -> str:
        """Without the channel name some think openers carry (Gemma 4's `<|channel>thought`)."""
        assert self.think is not None
        for name in self.think.names:
            if text.startswith(name):
                return text[len(name):]
        return text

    def _text(self, events: list[Event], closing: bool) -> bool:
        if self.skip_ws:
            stripped = self.buf.lstrip(WS)
            self._keep_with_held(self.buf[:len(self.buf) - len(stripped)])
            self.buf = stripped
            if not self.buf:
                return False
            self.skip_ws = False
        if self.after_block:
            for noise in self.dialect.noise:
                if self.buf.startswith(noise):
                    self._keep_with_held(noise)
                    self.buf, self.skip_ws = self.buf[len(noise):], True
                    return True
                if noise.startswith(self.buf) and not closing:
                    return False
            self.after_block = False
        if self.held and self.buf.lstrip(WS) and not any(self.buf.lstrip(WS).startswith(o) or o.startswith(
                self.buf.lstrip(WS)) for o in self.dialect.bare):
            self._release_held(events)
        found = [(p, o) for o in self._openers if (p := self.buf.find(o)) >= 0 and self._may_open(o, p)]
        if found:
            p, opener = min(found)
            if self.think is not None and opener in self.think.opens:  # reasoning in the middle of the answer
                text = self.buf[:p].rstrip(WS + "\u00a0")
                self._emit(events, "text", text)
                self.buf, self.phase, self.opener = self.buf[p + len(opener):], "think", opener
                return True
            text = self.buf[:p].rstrip(WS)
            self._emit(events, "text", text)
            self.pending_ws = self.buf[len(text):p]
            self.buf, self.in_block, self.memo = self.buf[p:], True, {}
            return True
        if closing:
            self._emit(events, "text", self.buf)
            self.buf = ""
            return False
        hold = _held_suffix(self.buf, tuple(o for o in self._openers
                                            if o not in self.dialect.bare or self._may_open(o, len(self.buf))))
        cut = len(self.buf) - hold
        text = self.buf[:cut]
        stripped = text.rstrip(WS)
        self._emit(events, "text", stripped)
        self.buf = text[len(stripped):] + self.buf[cut:]
        return False

    def _block(self, events: list[Event], closing: bool, finish: str) -> bool:
        n = self.dialect.block_end(self.buf, closing, self.memo)
        if n == NOT_A_CALL:
            self._emit(events, "text", self._unpend() + self.buf[0])
            self.buf, self.in_block = self.buf[1:], False
            return True
        if n == INCOMPLETE:
            if len(self.buf) > self.max_block:
                return self._not_a_call(events, f"a {self.dialect.name} call block longer than "
                                                f"{self.max_block} characters")
            if not closing:
                return False
            block, self.buf, self.in_block = self.buf, "", False
            if self.rescue or finish == "length":
                why = "the answer was cut inside a call" if finish == "length" else "an unclosed call block"
                self._warn(events, f"{why}; kept as text")
                self._emit(events, "text", self._unpend() + block)
                return False
            try:
                calls = self.dialect.parse_unclosed(block, self.tools)
            except ParseFailure as e:
                self._warn(events, f"{e}; kept as text")
                self._emit(events, "text", self._unpend() + self.dialect.as_text(block))
                return False
            except PartialBlock as p:
                self._partial(events, p)
                calls = p.calls
            self.pending_ws = ""
            for call in calls:
                self._emit(events, "call", call)
            return False
        block, self.buf, self.in_block = self.buf[:n], self.buf[n:], False
        try:
            calls = self.dialect.parse_block(block, self.tools)
        except ParseFailure as e:
            self._warn(events, f"{e}; kept as text")
            self._emit(events, "text", self._unpend() + self.dialect.as_text(block))
            return True
        except PartialBlock as p:
            partial: PartialBlock | None = p
            calls = p.calls
        else:
            partial = None
        self.pending_ws = ""
        if any(block.startswith(o) for o in self.dialect.bare) and not self.rescue:
            self.held.append(Held(block, calls, partial))  # calls only if the message holds nothing else
            self.skip_ws = self.after_block = True
            return True
        if partial is not None:
            self._partial(events, partial)
        for call in calls:
            self._emit(events, "call", call)
        self.skip_ws = self.after_block = True
        return True

    def _may_open(self, opener: str, at: int) -> bool:
        """A bare opener starts a call only at the start of the message (nothing but whitespace and
        earlier call blocks before it); anywhere else it is text."""
        if opener not in self.dialect.bare:
            return True
        return not self.saw_content and not self.buf[:at].strip(WS)

    def _keep_with_held(self, text: str) -> None:
        """Separators between held blocks stay with them, so released blocks are the text as written."""
        if self.held and text:
            self.held[-1].block += text

    def _release_held(self, events: list[Event]) -> None:
        """Text follows the bare blocks: they were part of an answer that quotes JSON, not calls."""
        text = "".join(held.block for held in self.held)
        self.held = []
        self._warn(events, "JSON or a list inside an answer with other text is not a call; kept as text")
        self._emit(events, "text", text)
        self.skip_ws = self.after_block = False

    def _partial(self, events: list[Event], p: PartialBlock) -> None:
        """Some calls of a block parsed: the others stay in the content as they were written (the
        caller sends the good ones)."""
        self._warn(events, f"{p.why}: {p.rest[:200]!r} kept as text")
        self._emit(events, "text", self._unpend() + p.rest)

    def _unpend(self) -> str:
        ws, self.pending_ws = self.pending_ws, ""
        return ws

    def _not_a_call(self, events: list[Event], why: str) -> bool:
        self._warn(events, f"{why}; kept as text")
        self._emit(events, "text", self._unpend() + self.buf[0])
        self.buf, self.in_block = self.buf[1:], False
        return True

    def _warn(self, events: list[Event], message: str) -> None:
        (log.debug if self.rescue else log.warning)("text call (%s): %s", self.dialect.name, message)
        if not self.rescue:
            events.append(("warning", message))

    def _salvage(self) -> list[Event]:
        """A complete call written inside reasoning, when the answer has no content (Qwen3 writes
        `<tool_call>` before `</think>`; gpt-oss calls from its analysis channel)."""
        parser = TextParser(self.dialect, self.tools, rescue=True, max_block=self.max_block)
        found = parser.feed("\n".join(self.reasoning_seen)) + parser.close()
        calls = [e for e in found if e[0] == "call"]
        if calls:
            log.info("text call (%s): %d call(s) salvaged from reasoning", self.dialect.name, len(calls))
        return calls


def _held_suffix(buf: str, openers: tuple[str, ...]) -> int:
    """Length of the longest suffix of `buf` that is a proper prefix of an opener."""
    best = 0
    for opener in openers:
        for k in range(min(len(opener) - 1, len(buf)), best, -1):
            if buf.endswith(opener[:k]):
                best = k
                break
    return best


def parse_text(dialect: Dialect, tools: dict[str, ToolSpec], text: str, finish: str = "stop",
               think_open: bool = False) -> list[Event]:
    """The one-shot parse: the same machine, fed once."""
    parser = dialect.parser(tools, think_open=think_open)
    return parser.feed(text) + parser.close(finish)


def summarize(events: list[Event]) -> dict[str, Any]:
    """Events as `{"calls", "content", "reasoning", "warnings"}` (the `parse` command's shape)."""
    calls: list[Call] = [v for k, v in events if k == "call"]
    reasoning = "".join(v for k, v in events if k == "reasoning")
    return {"calls": [{"name": c.name, "arguments": c.arguments} for c in calls],
            "content": "".join(v for k, v in events if k == "text"),
            "reasoning": reasoning or None,
            "warnings": [v for k, v in events if k == "warning"]}
