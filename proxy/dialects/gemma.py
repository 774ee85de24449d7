"""Gemma 4's native tool tokens and FunctionGemma's: the same grammar with another string
delimiter (docs/wire.md#dialects).

Gemma 4:       <|tool>declaration:NAME{...}<tool|>   <|tool_call>call:NAME{k:<|"|>v<|"|>}<tool_call|>
               <|tool_response>response:NAME{...}<tool_response|>
FunctionGemma: <start_function_declaration>declaration:NAME{...}<end_function_declaration>
               <start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call>
               <start_function_response>response:NAME{...}<end_function_response>
"""

import json
import re
from dataclasses import dataclass
from typing import Any

from proxy.dialects.base import (
    INCOMPLETE,
    Call,
    Dialect,
    ParseFailure,
    Result,
    ThinkTags,
    ToolSpec,
    forced_line,
    resolve_name,
    result_object,
    schema_of,
)
from proxy.dialects.brackets import find_from
from proxy.dialects.gemma_values import parse_arguments, write_schema, write_value

# Tool names as the parsers in the wild accept them: dotted, hyphenated, namespaced (`google:mcp:x`).
NAME = re.compile(r"\s*(?:call\s*:\s*)?([^\s{(]+?)\s*(?=[{(])")


@dataclass
class GemmaTokens(Dialect):
    quote: str = ""
    declare: tuple[str, str] = ("", "")
    call: tuple[str, str] = ("", "")
    respond: tuple[str, str] = ("", "")
    preface: str = ""

    # --- rendering -------------------------------------------------------------------------------
    def render_tools(self, tools: list[ToolSpec], forced: list[str] | None = None) -> str:
        q = self.quote
        out = []
        for t in tools:
            fields = []
            if t.description:
                fields.append(f"description:{q}{t.description}{q}")
            if t.parameters is not None:
                fields.append(f"parameters:{write_schema(t.parameters, q)}")
            out.append(f"{self.declare[0]}declaration:{t.name}{{{','.join(fields)}}}{self.declare[1]}")
        line = forced_line(forced)
        return self.preface + "".join(out) + (f"\n{line}" if line else "")

    def render_calls(self, calls: list[Call]) -> str:
        return "".join(f"{self.call[0]}call:{c.name}{write_value(c.arguments, self.quote)}{self.call[1]}"
                       for c in calls)

    def render_results(self, results: list[Result]) -> str:
        out = []
        for r in results:
            value = result_object(r.response)
            body = write_value(value, self.quote) if isinstance(value, dict) else \
                write_value({"value": value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)},
                            self.quote)
            out.append(f"{self.respond[0]}response:{r.name}{body}{self.respond[1]}")
        return "".join(out)

    # --- parsing ---------------------------------------------------------------------------------
    def block_end(self, buf: str, closing: bool = False, memo: dict[Any, Any] | None = None) -> int:
        end = find_from(buf, self.call[1], len(self.call[0]), memo)
        return INCOMPLETE if end < 0 else end + len(self.call[1])

    def parse_block(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        body = block[len(self.call[0]):]
        if body.endswith(self.call[1]):
            body = body[:-len(self.call[1])]
        return self._calls(body, tools)

    def parse_unclosed(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        return self._calls(block[len(self.call[0]):], tools)

    def _calls(self, body: str, tools: dict[str, ToolSpec]) -> list[Call]:
        """Each `call:NAME{...}` in the block (models sometimes put several in one)."""
        calls = []
        rest = body.strip()
        if not rest:
            raise ParseFailure("an empty call block")
        while rest:
            m = NAME.match(rest)
            if not m:
                raise ParseFailure(f"no 'call:NAME{{' in {rest[:60]!r}")
            name = resolve_name(m.group(1), tools)
            end = _args_end(rest, m.end(), self.quote)
            args_text = rest[m.end():end] if end else rest[m.end():]
            args = _arguments(args_text, self.quote, schema_of(tools, name))
            calls.append(Call(name, args))
            rest = rest[end:].strip() if end else ""
        return calls


def _args_end(text: str, start: int, quote: str) -> int | None:
    """Where the arguments starting at `start` end (their closing bracket, strings skipped), or None."""
    closer = {"{": "}", "(": ")"}[text[start]]
    depth, i = 0, start
    while i < len(text):
        if text.startswith(quote, i):
            j = text.find(quote, i + len(quote))
            if j < 0:
                return None
            i = j + len(quote)
            continue
        c = text[i]
        if c in "{([":
            depth += 1
        elif c in "})]":
            depth -= 1
            if depth == 0:
                return i + 1 if c == closer else None
        i += 1
    return None


def _arguments(text: str, quote: str, schema: Any) -> dict[str, Any]:
    """Arguments as written, or repaired where the result is certain (Ollama's repairs, #15315):
    missing closing brackets added; a dangling string closed before the final brackets only when the
    schema declares that value a string."""
    try:
        return parse_arguments(text, quote, schema)[0]
    except ParseFailure as first:
        for fixed, closes_string in _repairs(text, quote, schema):
            try:
                args = parse_arguments(fixed, quote, schema)[0]
            except ParseFailure:
                continue
            if not closes_string or _last_is_declared_string(args, schema):
                return args
        raise ParseFailure(f"unparseable call arguments ({first})") from None


def _repairs(text: str, quote: str, schema: Any) -> list[tuple[str, bool]]:
    """Candidate repairs, each with whether it closes a string (then only a declared string may end
    there): Ollama's for issue 15315 — a dangling string closed before the closing brackets, missing
    brackets added, `key:'value'` (with a stray delimiter after it) as a string, and a last value
    written raw to the end of the call when the schema declares it a string."""
    stripped = text.rstrip()
    closers = len(stripped) - len(stripped.rstrip("})]"))
    out = []
    single = _single_quoted(quote).sub(lambda m: f"{m.group(1)}{quote}{m.group(2)}{quote}", text)
    if single != text:
        out.append((single, False))
    raw = _raw_terminal_string(text, quote, schema)
    if raw is not None:
        out.append((raw, True))
    if text.count(quote) % 2:
        # `{command:<|"|>ls}`: the string runs to the brackets that close the arguments.
        out.append((stripped[:len(stripped) - closers] + quote + stripped[len(stripped) - closers:], True))
    opens = sum(text.count(c) for c in "{(") - sum(text.count(c) for c in "})")
    if 0 < opens <= 4:
        closer = "}" if text.lstrip().startswith("{") else ")"
        out.append((stripped + closer * opens, False))
    return out


def _single_quoted(quote: str) -> re.Pattern[str]:
    """`key:'value'` (a regex pattern, usually), with the stray delimiter a model may leave after it
    (`pattern:':\\s*\\w+'<|"|>}`), read as a string the way Ollama's repair reads it."""
    return re.compile(rf"([{{,]\s*[\w.\-]+\s*:)'([^'\n]*)'(?:{re.escape(quote)})?(?=\s*[,}}])")


def _raw_terminal_string(text: str, quote: str, schema: Any) -> str | None:
    """`{content:# A file...` to the end: the last key's value written raw, neither quoted nor closed,
    quoted here when the schema declares that key a string and the value starts like no other value."""
    props = (schema or {}).get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return None
    for m in reversed(list(re.finditer(r"[{,]\s*([\w.\-]+):", text))):
        key, value = m.group(1), text[m.end():]
        prop = props.get(key)
        if not (isinstance(prop, dict) and prop.get("type") == "string"):
            return None
        if quote in value or value.lstrip()[:1] in ('"', "{", "[", "'") or _JSON_START.match(value.lstrip()):
            return None
        body = value[:-1] if value.rstrip().endswith("}") and value.count("{") < value.count("}") else value
        return text[:m.end()] + quote + body + quote + "}"
    return None


_JSON_START = re.compile(r"(?:-?\d|true\b|false\b|null\b)")


def _last_is_declared_string(args: dict[str, Any], schema: Any) -> bool:
    if not isinstance(schema, dict) or not args:
        return False
    last_key = list(args)[-1]
    prop = (schema.get("properties") or {}).get(last_key)
    t = prop.get("type") if isinstance(prop, dict) else None
    return isinstance(args[last_key], str) and (t == "string" or (isinstance(t, list) and "string" in t))


def gemma4() -> GemmaTokens:
    return GemmaTokens(
        name="gemma4", openers=("<|tool_call>",), quote='<|"|>',
        think=ThinkTags(("<|channel>",), ("<channel|>",), names=("thought\n", "thought")),
        stops=("<|tool_response>",), noise=("<tool_call|>", "<|tool_response>"),
        declare=("<|tool>", "<tool|>"), call=("<|tool_call>", "<tool_call|>"),
        respond=("<|tool_response>", "<tool_response|>"),
        think_anywhere=True)  # <|channel> is a special token: a second thought block is reasoning too


def functiongemma() -> GemmaTokens:
    # Google's guide: this sentence is what turns tool use on (docs/wire.md#dialects).
    return GemmaTokens(
        name="functiongemma", openers=("<start_function_call>",), quote="<escape>", think=None,
        stops=("<start_function_response>",), noise=("<end_function_call>",),
        declare=("<start_function_declaration>", "<end_function_declaration>"),
        call=("<start_function_call>", "<end_function_call>"),
        respond=("<start_function_response>", "<end_function_response>"),
        preface="You are a model that can do function calling with the following functions")
