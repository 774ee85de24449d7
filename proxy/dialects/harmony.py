"""gpt-oss Harmony: messages `<|start|>ROLE<|channel|>CHANNEL [to=functions.NAME] [<|constrain|>json]
<|message|>BODY<|end|>|<|call|>|<|return|>` (docs/wire.md#dialects).

A call is any message addressed `to=functions.NAME`, on whatever channel it came (about 47 % of
GPT-OSS-120B's calls arrive on `analysis`, dynamo PR #10366); `analysis` is reasoning, `final` and
unaddressed `commentary` are content; text outside any message is content.
"""

import logging
import re
from dataclasses import dataclass
from typing import Any

from proxy.dialects.base import (
    MAX_BLOCK_CHARS,
    Call,
    Dialect,
    ParseFailure,
    Result,
    ToolSpec,
    dumps,
    forced_line,
    resolve_name,
    result_object,
)
from proxy.dialects.brackets import find_from, left_open, loads
from proxy.dialects.text_parser import Event, _held_suffix

log = logging.getLogger(__name__)
START, CHANNEL, MESSAGE, CONSTRAIN = "<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"
ENDS = ("<|end|>", "<|call|>", "<|return|>")
_RECIPIENT = re.compile(r"to=([^\s<]+)")
_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")


def _first_header(s: str) -> str:
    """Whether text the model starts with is a message header without `<|start|>` (the prompt wrote
    `<|start|>assistant`): "header" (`assistant to=...`, `to=...`, `assistant<|channel|>`), "maybe" (too
    little text to tell yet), or "no"."""
    role = "assistant"
    if role.startswith(s):
        return "maybe"
    rest = s[len(role):].lstrip() if s.startswith(role) else s
    if rest.startswith("to=") and len(rest) > 3:
        return "header"
    if "to=".startswith(rest) and (rest or s.startswith(role)):
        return "maybe"
    if s.startswith(role):
        if rest.startswith(CHANNEL):
            return "header"
        if CHANNEL.startswith(rest):
            return "maybe"
    return "no"


def _ts(schema: Any, indent: str = "") -> str:
    """A JSON Schema as the TypeScript-like types of Harmony's tool namespace."""
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return " | ".join(dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return " | ".join(_ts(s, indent) for s in schema[key])
    t = schema.get("type")
    if isinstance(t, list):
        return " | ".join(_ts({**schema, "type": x}, indent) for x in t)
    if t == "array":
        return f"{_ts(schema.get('items'), indent)}[]"
    if t == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if not props:
            return "object"
        return "{\n" + _fields(schema, indent + "") + indent + "}"
    return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean",
            "null": "null"}.get(str(t), "any")


def _fields(schema: dict[str, Any], indent: str) -> str:
    required = set(schema.get("required") or [])
    out = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        if prop.get("description"):
            out.append(f"{indent}// {prop['description']}\n")
        default = f" // default: {dumps(prop['default'])}" if "default" in prop else ""
        out.append(f"{indent}{name}{'' if name in required else '?'}: {_ts(prop, indent)},{default}\n")
    return "".join(out)


@dataclass
class Harmony(Dialect):
    def render_tools(self, tools: list[ToolSpec], forced: list[str] | None = None) -> str:
        out = ["# Tools\n\n## functions\n\nnamespace functions {\n"]
        for t in tools:
            if t.description:
                out.append(f"// {t.description}")
            params = t.parameters or {}
            if params.get("properties"):
                out.append(f"type {t.name} = (_: {{\n{_fields(params, '')}}}) => any;\n")
            else:
                out.append(f"type {t.name} = () => any;\n")
        out.append("} // namespace functions")
        line = forced_line(forced)
        return ("\n".join(out) + "\n\nCalls to these tools must go to the commentary channel: 'functions'."
                + (f"\n{line}" if line else ""))

    def render_calls(self, calls: list[Call]) -> str:
        return "".join(f"{START}assistant{CHANNEL}commentary to=functions.{c.name} {CONSTRAIN}json{MESSAGE}"
                       f"{dumps(c.arguments)}<|call|>" for c in calls)

    def render_results(self, results: list[Result]) -> str:
        return "".join(f"{START}functions.{r.name} to=assistant{CHANNEL}commentary{MESSAGE}"
                       f"{dumps(result_object(r.response))}<|end|>" for r in results)

    def parser(self, tools: dict[str, ToolSpec], *, think_open: bool = False, rescue: bool = False
               ) -> "HarmonyParser":
        return HarmonyParser(self, tools, rescue=rescue)


class HarmonyParser:
    """The TextParser interface (feed/close -> events) for Harmony's message grammar."""

    def __init__(self, dialect: Dialect, tools: dict[str, ToolSpec], rescue: bool = False) -> None:
        self.dialect, self.tools, self.rescue = dialect, tools, rescue
        self.buf = ""
        self.state = "between"       # between | header | body
        self.channel, self.recipient = "final", None
        self.saw_content = False
        self.memo: dict[Any, Any] = {}  # resumable scans of the current header or body

    def feed(self, text: str) -> list[Event]:
        buf, self.buf = self.buf, ""  # grown in place while it is the only reference (see TextParser.feed)
        buf += text
        self.buf = buf
        del buf
        return self._run(False, "stop")

    def close(self, finish: str = "stop") -> list[Event]:
        return self._run(True, finish)

    def _run(self, closing: bool, finish: str) -> list[Event]:
        events: list[Event] = []
        while True:
            if self.state == "between" and not self._between(closing):
                return events
            if self.state == "header" and not self._header(events, closing):
                return events
            if self.state == "body" and not self._body(events, closing, finish):
                return events

    def _between(self, closing: bool) -> bool:
        s = self.buf.lstrip()
        if not s:
            if closing:
                self.buf = ""
            return False
        for marker in (START, CHANNEL):
            if s.startswith(marker):
                self.buf, self.state = s, "header"
                return True
            if marker.startswith(s) and not closing:
                return False
        # The prompt ended with `<|start|>assistant`: the first header may begin with the role or the
        # recipient, before the channel (` to=functions.x<|channel|>commentary json<|message|>`).
        head = _first_header(s)
        if head == "header":
            self.buf, self.state = s, "header"
            return True
        if head == "maybe" and not closing:
            return False
        self.buf = s  # text outside any message: content until a message starts
        self.state, self.channel, self.recipient = "body", "final", None
        return True

    def _header(self, events: list[Event], closing: bool) -> bool:
        i = find_from(self.buf, MESSAGE, 0, self.memo)
        if i < 0:
            if closing or len(self.buf) > 4096:
                events.append(("text", self.buf))
                self.buf = ""
            return False
        header = self.buf[:i]
        m = _CHANNEL.search(header)
        self.channel = m.group(1) if m else "final"
        r = _RECIPIENT.search(header)
        self.recipient = r.group(1) if r else None
        self.buf, self.state, self.memo = self.buf[i + len(MESSAGE):], "body", {}
        return True

    def _body(self, events: list[Event], closing: bool, finish: str) -> bool:
        found = [(p, m) for m in (*ENDS, START) if (p := find_from(self.buf, m, 0, self.memo)) >= 0]
        end, marker = min(found) if found else (-1, "")
        if self.recipient is not None:
            if end < 0:
                if len(self.buf) > MAX_BLOCK_CHARS:
                    return self._give_up(events, "a call longer than the limit")
                if not closing:
                    return False
                if finish == "length" or self.rescue:
                    return self._give_up(events, "the answer was cut inside a call")
                end, marker = len(self.buf), ""
            self._call(events, self.buf[:end])
        else:
            kind = "reasoning" if self.channel == "analysis" else "text"
            if end < 0:
                hold = 0 if closing else _held_suffix(self.buf, (*ENDS, START))
                piece = self.buf[:len(self.buf) - hold]
                if piece:
                    events.append((kind, piece))
                    self.saw_content = self.saw_content or kind == "text"
                    self.buf, self.memo = self.buf[len(piece):], {}
                return False
            if self.buf[:end]:
                events.append((kind, self.buf[:end]))
        self.buf = self.buf[end + (len(marker) if marker != START else 0):]
        self.state, self.memo = "between", {}
        return True

    def _call(self, events: list[Event], body: str) -> None:
        name = self.recipient or ""
        name = name.removeprefix("functions.")
        try:
            args, closers = _arguments(body)
            if not isinstance(args, dict):
                raise ParseFailure("call arguments must be a JSON object")
        except ParseFailure as e:
            self._warn(events, f"{e}; kept as text")
            events.append(("text", body))
            return
        if closers:
            self._warn(events, f"the call to {name} left {closers!r} open; closed it")
        events.append(("call", Call(resolve_name(name, self.tools), args)))
        if self.channel != "commentary":
            log.info("harmony: a call to %s on the %s channel", name, self.channel)

    def _give_up(self, events: list[Event], why: str) -> bool:
        self._warn(events, f"{why}; kept as text")
        events.append(("text", self.buf))
        self.buf, self.state, self.memo = "", "between", {}
        return False

    def _warn(self, events: list[Event], message: str) -> None:
        (log.debug if self.rescue else log.warning)("text call (harmony): %s", message)
        if not self.rescue:
            events.append(("warning", message))


def _arguments(body: str) -> tuple[Any, str]:
    """A call's body as JSON, and the closers added: an object the model left open only at its end
    is closed (as Ollama does), and the caller says so."""
    if not body.strip():
        return {}, ""
    try:
        return loads(body.strip()), ""
    except ParseFailure:
        closers = left_open(body)
        if not closers:
            raise
        return loads(body.strip() + closers), closers


def harmony() -> Harmony:
    return Harmony(name="harmony", openers=(START, CHANNEL), think=None, stops=())

