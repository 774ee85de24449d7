"""Mistral's `[TOOL_CALLS]`: v11+ `[TOOL_CALLS]NAME[ARGS]{json}` per call (also without the
`[ARGS]` text when a server skipped it as a special token, vLLM #30651; with `[CALL_ID]id` on some
versions), and the pre-v11 `[TOOL_CALLS] [{"name": ..., "arguments": ...}, ...]` (docs/wire.md#dialects)."""

import re
from dataclasses import dataclass
from typing import Any

from proxy.dialects.base import (
    INCOMPLETE,
    NOT_A_CALL,
    Call,
    Dialect,
    ParseFailure,
    PartialBlock,
    Result,
    ThinkTags,
    ToolSpec,
    dumps,
    forced_line,
    resolve_name,
    result_object,
)
from proxy.dialects.brackets import bracket_end, json_call, loads, skip_ws

OPEN, ARGS, CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"
_ARRAY = re.compile(r"\[\s*\{")  # pre-v11's list of calls, found after text the model put before it (vLLM's fallback)
_NAME = re.compile(r"([A-Za-z_][\w.\-]*)\s*(?:\[CALL_ID\]\s*(\w+)\s*)?(?:\[ARGS\])?\s*")


@dataclass
class Mistral(Dialect):
    def as_text(self, block: str) -> str:
        return block[len(OPEN):].lstrip() if block.startswith(OPEN) else block  # a control token, not text

    def render_tools(self, tools: list[ToolSpec], forced: list[str] | None = None) -> str:
        decls = dumps([{"type": "function", "function": {"name": t.name, "description": t.description,
                                                          "parameters": t.parameters or {}}} for t in tools])
        line = forced_line(forced)
        return f"[AVAILABLE_TOOLS]{decls}[/AVAILABLE_TOOLS]" + (f"\n{line}" if line else "")

    def render_calls(self, calls: list[Call]) -> str:
        return "".join(f"{OPEN}{c.name}{ARGS}{dumps(c.arguments)}" for c in calls)

    def render_results(self, results: list[Result]) -> str:
        return "".join(f"[TOOL_RESULTS]{dumps(result_object(r.response))}[/TOOL_RESULTS]" for r in results)

    def block_end(self, buf: str, closing: bool = False, memo: dict[Any, Any] | None = None) -> int:
        i = skip_ws(buf, len(OPEN))
        if i >= len(buf):
            return NOT_A_CALL if closing else INCOMPLETE
        try:
            if buf[i] == "[":  # pre-v11: a JSON array of calls
                end = bracket_end(buf, i, memo=memo)
            else:
                m = _NAME.match(buf, i)
                j = m.end() if m else i
                if m and j >= len(buf):
                    return len(buf) if closing else INCOMPLETE  # a name and no arguments: decided as text, warned
                if not m or buf[j] != "{":
                    # the name, or a marker after it, may still be arriving
                    partial = buf[j:]
                    if m and not closing and (ARGS.startswith(partial) or CALL_ID.startswith(partial)):
                        return INCOMPLETE
                    array = _ARRAY.search(buf, i)
                    if array is None:
                        return len(buf) if closing else INCOMPLETE  # the call may still come: decided at the end
                    end = bracket_end(buf, array.start(), memo=memo)
                    return INCOMPLETE if end is None else end
                end = bracket_end(buf, j, memo=memo)
        except ParseFailure:
            return NOT_A_CALL
        return INCOMPLETE if end is None else end

    def parse_block(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        body = block[len(OPEN):].strip()
        if body.startswith("["):
            return _call_list(body, tools)
        array = _ARRAY.search(body)
        if array and not (m := _NAME.match(body)) or array and body[m.end():m.end() + 1] != "{":
            calls = _call_list(body[array.start():], tools)  # pre-v11 after some text: the text stays text
            raise PartialBlock(calls, body[:array.start()].strip(), "text before the list of calls")
        m = _NAME.match(body)
        if not m:
            raise ParseFailure("[TOOL_CALLS] needs NAME[ARGS]{...}")
        args = loads(body[m.end():])
        if not isinstance(args, dict):
            raise ParseFailure("call arguments must be an object")
        return [Call(resolve_name(m.group(1), tools), args)]


def _call_list(body: str, tools: dict[str, ToolSpec]) -> list[Call]:
    items = loads(body)
    if not isinstance(items, list) or not items:
        raise ParseFailure("[TOOL_CALLS] needs a list of calls")
    return [json_call(item, tools) for item in items]


def mistral() -> Mistral:
    return Mistral(name="mistral", openers=(OPEN,), think=ThinkTags(("[THINK]",), ("[/THINK]",)),
                   noise=("</s>", "[/TOOL_CALLS]"), think_anywhere=True)
