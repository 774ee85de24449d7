"""Mistral's `[TOOL_CALLS]`: v11+ `[TOOL_CALLS]NAME[ARGS]{json}` per call (also without the
`[ARGS]` text when a server skipped it as a special token, vLLM #30651; with `[CALL_ID]id` on some
versions), and the pre-v11 `[TOOL_CALLS] [{"name": ..., "arguments": ...}, ...]` (reference/dialects.md §5)."""

import re
from dataclasses import dataclass
from typing import Any

from proxy.dialects.base import (
    INCOMPLETE,
    NOT_A_CALL,
    Call,
    Dialect,
    ParseFailure,
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
_NAME = re.compile(r"([A-Za-z_][\w.\-]*)\s*(?:\[CALL_ID\]\s*(\w+)\s*)?(?:\[ARGS\])?\s*")


@dataclass
class Mistral(Dialect):
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
                if not m:
                    return NOT_A_CALL
                j = m.end()
                if j >= len(buf):
                    return NOT_A_CALL if closing else INCOMPLETE
                if buf[j] != "{":
                    # the name, or a marker after it, may still be arriving
                    partial = buf[j:]
                    if not closing and (ARGS.startswith(partial) or CALL_ID.startswith(partial)):
                        return INCOMPLETE
                    return NOT_A_CALL
                end = bracket_end(buf, j, memo=memo)
        except ParseFailure:
            return NOT_A_CALL
        return INCOMPLETE if end is None else end

    def parse_block(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        body = block[len(OPEN):].strip()
        if body.startswith("["):
            items = loads(body)
            if not isinstance(items, list) or not items:
                raise ParseFailure("[TOOL_CALLS] needs a list of calls")
            return [json_call(item, tools) for item in items]
        m = _NAME.match(body)
        if not m:
            raise ParseFailure("[TOOL_CALLS] needs NAME[ARGS]{...}")
        args = loads(body[m.end():])
        if not isinstance(args, dict):
            raise ParseFailure("call arguments must be an object")
        return [Call(resolve_name(m.group(1), tools), args)]


def mistral() -> Mistral:
    return Mistral(name="mistral", openers=(OPEN,), think=ThinkTags(("[THINK]",), ("[/THINK]",)), noise=("</s>",))
