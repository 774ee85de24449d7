"""JSON and Python-call dialects without special tokens around the call: Llama 3.1/3.2 JSON
(`{"name": ..., "parameters": ...}`, optionally after `<|python_tag|>`), pythonic lists
(`[f(a=1), g(b="x")]`, Llama 3.2 / 4), and Google's Gemma 3 prompting (Python calls, also in
```tool_code fences, results in ```tool_output) — docs/wire.md#dialects

Bare JSON and bare lists are only calls when they name a declared tool (answers that contain JSON
or a list must stay answers: vLLM's Llama parser dropped the text around them).
"""

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from proxy.dialects.base import (
    INCOMPLETE,
    NOT_A_CALL,
    Call,
    Dialect,
    ParseFailure,
    PartialBlock,
    Result,
    ToolSpec,
    dumps,
    forced_line,
    resolve_name,
    result_text,
)
from proxy.dialects.brackets import bracket_end, find_from, json_call, loads, python_arguments, python_calls, skip_ws

PYTHON_TAG = "<|python_tag|>"
PYTHON_START, PYTHON_END = "<|python_start|>", "<|python_end|>"  # Llama 4 around its pythonic list
TOOL_CODE, FENCE = "```tool_code", "```"
_JSON_HEAD = re.compile(r'\{\s*"name"\s*:\s*"')
_CALL_HEAD = re.compile(r"\[\s*[A-Za-z_][\w.\-]*\s*\(")
# What the start of each can look like before enough text arrived to tell.
_JSON_PARTIAL = re.compile(r'\{\s*(?:"(?:n(?:a(?:m(?:e(?:"\s*(?::\s*)?)?)?)?)?)?)?')
_CALL_PARTIAL = re.compile(r"\[\s*(?:[A-Za-z_][\w.\-]*\s*)?")
_ENDS = ("<|eom_id|>", "<|eot_id|>")


def _declared(name: str, tools: dict[str, ToolSpec]) -> bool:
    try:
        resolve_name(name, tools)
    except ParseFailure:
        return False
    return True


def _json_block_end(buf: str, tools: dict[str, ToolSpec], closing: bool, memo: dict[Any, Any] | None) -> int:
    """A bare `{"name": "declared", ...}` object."""
    m = _JSON_HEAD.match(buf)
    if not m:
        return INCOMPLETE if _JSON_PARTIAL.fullmatch(buf) and not closing else NOT_A_CALL
    named = re.match(r'\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"', buf)
    if named and not _declared(named.group(1), tools):
        return NOT_A_CALL  # JSON in an answer, not a call
    try:
        end = bracket_end(buf, 0, memo=memo)
    except ParseFailure:
        return NOT_A_CALL
    if end is None:
        return NOT_A_CALL if closing and not named else INCOMPLETE
    try:
        bare_json_call(loads(buf[:end]), tools)
    except ParseFailure:
        return NOT_A_CALL
    return end


def bare_json_call(obj: Any, tools: dict[str, ToolSpec]) -> Call:
    """A bare `{...}` is a call only with a name and its arguments under `parameters` or `arguments`
    (`{"name": "x"}` alone, or a tool result `{"name", "content"}`, is an answer quoting data)."""
    if not isinstance(obj, dict) or not ({"parameters", "arguments"} & obj.keys()):
        raise ParseFailure("a JSON object without 'parameters' or 'arguments' is not a call")
    return json_call(obj, tools)


def _list_block_end(buf: str, tools: dict[str, ToolSpec], closing: bool, memo: dict[Any, Any] | None) -> int:
    """A bare `[name(...), ...]` list whose names are declared."""
    if not _CALL_HEAD.match(buf):
        return INCOMPLETE if _CALL_PARTIAL.fullmatch(buf) and not closing else NOT_A_CALL
    try:
        end = bracket_end(buf, 0, quotes="\"'", memo=memo)
    except ParseFailure:
        end = -1  # brackets that do not match: only the whole answer can still be a list of calls
    if end is None or end < 0:
        if not closing:
            return INCOMPLETE if end is None else NOT_A_CALL
        return len(buf) if _whole_list(buf, tools) else NOT_A_CALL
    try:
        python_calls(buf[:end], tools)
    except ParseFailure:
        return NOT_A_CALL
    except PartialBlock:
        pass  # some calls in it: a call block
    return end


def _whole_list(buf: str, tools: dict[str, ToolSpec]) -> bool:
    """The rest of the answer is a `[...]` list with at least one readable call, though a quote in
    another call broke the scan (vLLM salvages the readable ones the same way, on the whole text)."""
    text = buf.rstrip()
    if not text.endswith("]"):
        return False
    try:
        python_calls(text, tools)
    except ParseFailure:
        return False
    except PartialBlock:
        pass  # some calls in it are readable
    return True


@dataclass
class BareOpeners(Dialect):
    """A dialect whose calls start with plain `{` or `[`: its parser's copy knows the declared tools,
    which tell a call from an answer that holds JSON or a list."""

    def parser(self, tools: dict[str, ToolSpec], *, think_open: bool = False, rescue: bool = False) -> Any:
        return Dialect.parser(replace(self, extra={**self.extra, "tools": tools}), tools, think_open=think_open,
                              rescue=rescue)


def _declarations(tools: list[ToolSpec]) -> str:
    """The tools as the indented JSON list the pythonic and Gemma 3 prompts show."""
    return dumps_indented([{"name": t.name, "description": t.description, "parameters": t.parameters or {}}
                           for t in tools])


@dataclass
class Llama3(BareOpeners):
    def render_tools(self, tools: list[ToolSpec], forced: list[str] | None = None) -> str:
        decls = "".join(dumps_indented({"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": t.parameters or {}}}) + "\n\n"
            for t in tools)
        line = forced_line(forced)
        return ("Given the following functions, please respond with a JSON for a function call with its proper "
                "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
                "\"parameters\": dictionary of argument name and its value}. Do not use variables.\n\n"
                + decls + (f"{line}\n\n" if line else ""))

    def render_calls(self, calls: list[Call]) -> str:
        return "; ".join(dumps({"name": c.name, "parameters": c.arguments}) for c in calls)

    def render_results(self, results: list[Result]) -> str:
        return "\n".join(result_text(r.response) for r in results)

    def block_end(self, buf: str, closing: bool = False, memo: dict[Any, Any] | None = None) -> int:
        if buf.startswith(PYTHON_TAG):
            i = skip_ws(buf, len(PYTHON_TAG))
            if i >= len(buf):
                return NOT_A_CALL if closing else INCOMPLETE
            if buf[i] == "{":
                end = bracket_end(buf, i, memo=memo)
            else:  # a built-in tool: brave_search.call(query="...")
                paren = buf.find("(", i)
                end = bracket_end(buf, paren, quotes="\"'", memo=memo) if paren >= 0 else None
            if end is None:
                return len(buf) if closing else INCOMPLETE
            for marker in _ENDS:
                if buf.startswith(marker, end):
                    return end + len(marker)
            return end
        return _json_block_end(buf, self.extra["tools"], closing, memo)

    def parse_block(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        body = block.removeprefix(PYTHON_TAG).strip()
        for marker in _ENDS:
            body = body.removesuffix(marker).strip()
        if body.startswith("{"):
            call = json_call if block.startswith(PYTHON_TAG) else bare_json_call  # a marker needs no arguments key
            return [call(loads(body), tools)]
        return python_calls(body, tools)



def dumps_indented(value: object) -> str:
    return json.dumps(value, indent=4, ensure_ascii=False)


@dataclass
class Pythonic(BareOpeners):
    def render_tools(self, tools: list[ToolSpec], forced: list[str] | None = None) -> str:
        decls = _declarations(tools)
        line = forced_line(forced)
        return ("You are an expert in composing functions. You are given a question and a set of possible "
                "functions. Based on the question, you will need to make one or more function/tool calls to achieve "
                "the purpose. If none of the function can be used, point it out. If the given question lacks the "
                "parameters required by the function, also point it out. You should only return the function call "
                "in tools call sections.\n\nIf you decide to invoke any of the function(s), you MUST put it in the "
                "format of [func_name1(params_name1=params_value1, params_name2=params_value2...), "
                "func_name2(params)]\nYou SHOULD NOT include any other text in the response.\n\nHere is a list of "
                f"functions in JSON format that you can invoke.\n\n{decls}\n" + (f"\n{line}\n" if line else ""))

    def render_calls(self, calls: list[Call]) -> str:
        return "[" + ", ".join(f"{c.name}({python_arguments(c.arguments)})" for c in calls) + "]"

    def render_results(self, results: list[Result]) -> str:
        return "\n".join(result_text(r.response) for r in results)

    def block_end(self, buf: str, closing: bool = False, memo: dict[Any, Any] | None = None) -> int:
        if buf.startswith(PYTHON_START):
            end = find_from(buf, PYTHON_END, len(PYTHON_START), memo)
            if end < 0:
                return INCOMPLETE
            return end + len(PYTHON_END)
        return _list_block_end(buf, self.extra["tools"], closing, memo)

    def parse_block(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        if block.startswith(PYTHON_START):
            return python_calls(block[len(PYTHON_START):].removesuffix(PYTHON_END), tools)
        return python_calls(block, tools)

    def parse_unclosed(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        """Llama 4 may end its turn without `<|python_end|>`: the list after the marker is whole or fails."""
        if block.startswith(PYTHON_START):
            return self.parse_block(block, tools)
        raise ParseFailure("an unterminated call")



@dataclass
class Gemma3(BareOpeners):
    """Google's function-calling prompt for Gemma 3 (ai.google.dev/gemma/docs/capabilities/function-calling):
    no special tokens; calls as Python in a ```tool_code fence or a bare list, results in ```tool_output."""

    def render_tools(self, tools: list[ToolSpec], forced: list[str] | None = None) -> str:
        decls = _declarations(tools)
        line = forced_line(forced)
        return ("You have access to functions. If you decide to invoke any of the function(s),\nyou MUST put it in "
                "the format of\n[func_name1(params_name1=params_value1, params_name2=params_value2...), "
                "func_name2(params)]\n\nYou SHOULD NOT include any other text in the response if you call a "
                f"function\n{decls}\n" + (f"\n{line}\n" if line else ""))

    def render_calls(self, calls: list[Call]) -> str:
        return Pythonic.render_calls(self, calls)  # type: ignore[arg-type]

    def render_results(self, results: list[Result]) -> str:
        body = "\n".join(result_text(r.response) for r in results)
        return f"```tool_output\n{body}\n```"

    def block_end(self, buf: str, closing: bool = False, memo: dict[Any, Any] | None = None) -> int:
        tools = self.extra["tools"]
        if buf.startswith(TOOL_CODE):
            end = find_from(buf, FENCE, len(TOOL_CODE), memo)
            if end < 0:
                return len(buf) if closing else INCOMPLETE
            return end + len(FENCE)
        if buf.startswith("{"):
            return _json_block_end(buf, tools, closing, memo)
        return _list_block_end(buf, tools, closing, memo)

    def parse_block(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        if block.startswith(TOOL_CODE):
            body = block[len(TOOL_CODE):].removesuffix(FENCE).strip()
            return python_calls(body, tools)
        if block.startswith("{"):
            return [bare_json_call(loads(block), tools)]
        return python_calls(block, tools)

    def parse_unclosed(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        if block.startswith(TOOL_CODE):
            return self.parse_block(block, tools)  # a fence the answer did not close: the code is whole or fails
        raise ParseFailure("an unterminated call")



def llama3() -> Llama3:
    return Llama3(name="llama3", openers=(PYTHON_TAG, "{"), declarations_in_user=True, single_call=True,
                  noise=(";",) + _ENDS, bare=("{",), extra={"tools": {}})


def pythonic() -> Pythonic:
    return Pythonic(name="pythonic", openers=(PYTHON_START, "["), bare=("[",), extra={"tools": {}})


def gemma3() -> Gemma3:
    return Gemma3(name="gemma3", openers=(TOOL_CODE, "[", "{"), declarations_in_user=True, system_turn=False,
                  think=None, bare=("[", "{"), extra={"tools": {}})
