"""Qwen 2.5/3 and Hermes (`<tool_call>{json}</tool_call>`) and Qwen3-Coder's XML-ish calls
(`<tool_call><function=NAME><parameter=K>V</parameter></function></tool_call>`); both answer
tools in `<tool_response>` blocks of a user turn (reference/dialects.md §3, §7)."""

import ast
import json
from dataclasses import dataclass
from typing import Any

from proxy.dialects.base import (
    INCOMPLETE,
    NOT_A_CALL,
    Call,
    Dialect,
    ParseFailure,
    Result,
    ToolSpec,
    dumps,
    forced_line,
    resolve_name,
    result_text,
    schema_of,
)
from proxy.dialects.brackets import bracket_end, find_from, json_call, loads, skip_ws

OPEN, CLOSE = "<tool_call>", "</tool_call>"


def _responses(results: list[Result]) -> str:
    """Qwen merges consecutive tool messages into one user turn of <tool_response> blocks."""
    return "\n".join(f"<tool_response>\n{result_text(r.response)}\n</tool_response>" for r in results)


@dataclass
class Hermes(Dialect):
    def render_tools(self, tools: list[ToolSpec], forced: list[str] | None = None) -> str:
        lines = "\n".join(dumps({"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": t.parameters or {"type": "object",
                                                                                         "properties": {}}}})
            for t in tools)
        line = forced_line(forced)
        return ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
                f"{lines}\n</tools>\n\nFor each function call, return a json object with function name and "
                "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
                + (f"\n\n{line}" if line else ""))

    def render_calls(self, calls: list[Call]) -> str:
        return "\n".join(f'<tool_call>\n{{"name": {dumps(c.name)}, "arguments": {dumps(c.arguments)}}}\n</tool_call>'
                         for c in calls)

    def render_results(self, results: list[Result]) -> str:
        return _responses(results)

    def block_end(self, buf: str, closing: bool = False, memo: dict[Any, Any] | None = None) -> int:
        i = skip_ws(buf, len(OPEN))
        if i >= len(buf):
            return NOT_A_CALL if closing else INCOMPLETE
        if buf[i] != "{":  # prose that mentions <tool_call> (club-3090 #72)
            return NOT_A_CALL
        try:
            end = bracket_end(buf, i, memo=memo)
        except ParseFailure:
            return NOT_A_CALL
        if end is None:
            return INCOMPLETE
        j = skip_ws(buf, end)
        if buf.startswith(CLOSE, j):
            return j + len(CLOSE)
        if j >= len(buf) or (CLOSE.startswith(buf[j:]) and not closing):
            return len(buf) if closing else INCOMPLETE
        return end  # closed JSON, no closing tag: the call is the object

    def parse_block(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        body = block[len(OPEN):].strip()
        if body.endswith(CLOSE):
            body = body[:-len(CLOSE)].strip()
        return [json_call(loads(body), tools)]

    def parse_unclosed(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        return self.parse_block(block, tools)  # a complete object without its closing tag is a call


@dataclass
class Qwen3Coder(Dialect):
    def render_tools(self, tools: list[ToolSpec], forced: list[str] | None = None) -> str:
        out = ["# Tools\n\nYou have access to the following functions:\n\n<tools>"]
        for t in tools:
            out.append(f"<function>\n<name>{t.name}</name>\n<description>{t.description.strip()}</description>"
                       "\n<parameters>")
            params = t.parameters or {}
            for pname, p in (params.get("properties") or {}).items():
                p = p if isinstance(p, dict) else {}
                out.append(f"<parameter>\n<name>{pname}</name>")
                if "type" in p:
                    out.append(f"<type>{p['type']}</type>")
                if p.get("description"):
                    out.append(f"<description>{str(p['description']).strip()}</description>")
                for k, v in p.items():
                    if k not in ("type", "description"):
                        out.append(f"<{k}>{dumps(v)}</{k}>")
                out.append("</parameter>")
            if params.get("required"):
                out.append(f"<required>{dumps(params['required'])}</required>")
            out.append("</parameters>\n</function>")
        out.append("</tools>")
        line = forced_line(forced)
        return ("\n".join(out) + "\n\nIf you choose to call a function ONLY reply in the following format with NO "
                "suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
                "</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can "
                "span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n"
                "- Function calls MUST follow the specified format: an inner <function=...></function> block must be "
                "nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n"
                "- You may provide optional reasoning for your function call in natural language BEFORE the function "
                "call, but NOT after\n- If there is no function call available, answer the question like normal with "
                "your current knowledge and do not tell the user about function calls\n</IMPORTANT>"
                + (f"\n\n{line}" if line else ""))

    def render_calls(self, calls: list[Call]) -> str:
        out = []
        for c in calls:
            params = "".join(f"<parameter={k}>\n{v if isinstance(v, str) else dumps(v)}\n</parameter>\n"
                             for k, v in c.arguments.items())
            out.append(f"<tool_call>\n<function={c.name}>\n{params}</function>\n</tool_call>")
        return "\n".join(out)

    def render_results(self, results: list[Result]) -> str:
        return _responses(results)

    def block_end(self, buf: str, closing: bool = False, memo: dict[Any, Any] | None = None) -> int:
        closer = CLOSE if buf.startswith(OPEN) else "</function>"
        if buf.startswith(OPEN):
            i = skip_ws(buf, len(OPEN))
            head = buf[i:i + len("<function=")]
            if head and not "<function=".startswith(head):  # prose that mentions <tool_call>
                return NOT_A_CALL
        end = find_from(buf, closer, 0, memo)
        return INCOMPLETE if end < 0 else end + len(closer)

    def parse_block(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        calls = []
        rest = block
        while (start := rest.find("<function=")) >= 0:
            name_end = rest.find(">", start)
            end = rest.find("</function>", name_end)
            if name_end < 0:
                raise ParseFailure("an unterminated <function=NAME>")
            name = resolve_name(rest[start + len("<function="):name_end].strip(), tools)
            body = rest[name_end + 1:end if end >= 0 else len(rest)]
            calls.append(Call(name, _parameters(body, schema_of(tools, name))))
            rest = rest[end + len("</function>"):] if end >= 0 else ""
        if not calls:
            raise ParseFailure("no <function=NAME> in the call block")
        return calls

    def parse_unclosed(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        if "</parameter>" not in block and "<parameter=" in block:
            raise ParseFailure("the answer ended inside a parameter")
        return self.parse_block(block, tools)


def _parameters(body: str, schema: Any) -> dict[str, Any]:
    args: dict[str, Any] = {}
    rest = body
    while (start := rest.find("<parameter=")) >= 0:
        name_end = rest.find(">", start)
        end = rest.find("</parameter>", name_end)
        if name_end < 0 or end < 0:
            raise ParseFailure("an unterminated <parameter=NAME>")
        key = rest[start + len("<parameter="):name_end].strip()
        raw = rest[name_end + 1:end]
        raw = raw[1:] if raw.startswith("\n") else raw
        raw = raw[:-1] if raw.endswith("\n") else raw
        props = (schema or {}).get("properties") or {}
        args[key] = convert_param(raw, props.get(key) if isinstance(props, dict) else None)
        rest = rest[end + len("</parameter>"):]
    return args


def convert_param(raw: str, schema: Any) -> Any:
    """A parameter's raw text as its declared type (vLLM's _convert_param_value, without its losses:
    what does not convert stays the raw text)."""
    t = schema.get("type") if isinstance(schema, dict) else None
    t = (t if isinstance(t, str) else next((x for x in t if x != "null"), None) if isinstance(t, list) else None)
    t = (t or "").lower()
    if raw.strip().lower() == "null" and t != "string":
        return None
    if t == "string":
        return raw
    if t in ("integer", "int"):
        try:
            return int(raw.strip())
        except ValueError:
            return raw
    if t == "number":
        try:
            f = float(raw.strip())
        except ValueError:
            return raw
        return int(f) if f.is_integer() and "." not in raw and "e" not in raw.lower() else f
    if t == "boolean":
        low = raw.strip().lower()
        return low == "true" if low in ("true", "false") else raw
    try:
        return json.loads(raw)
    except ValueError:
        pass
    if t in ("object", "array"):
        try:
            return ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            return raw
    return raw


def hermes() -> Hermes:
    return Hermes(name="hermes", openers=(OPEN,))


def qwen3coder() -> Qwen3Coder:
    return Qwen3Coder(name="qwen3coder", openers=(OPEN, "<function="))
