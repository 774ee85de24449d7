"""Qwen 2.5/3 and Hermes (`<tool_call>{json}</tool_call>`) and Qwen3-Coder's XML-ish calls
(`<tool_call><function=NAME><parameter=K>V</parameter></function></tool_call>`); both answer
tools in `<tool_response>` blocks of a user turn (docs/wire.md#dialects)."""

import ast
import json
import math
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


_PARAM_ENDS = ("</parameter>", "<parameter=", "</function>")


def _parameters(body: str, schema: Any) -> dict[str, Any]:
    """`<parameter=NAME>value</parameter>`...; a value whose `</parameter>` the model forgot ends at
    the next parameter or the function's end (vLLM reads it the same way)."""
    args: dict[str, Any] = {}
    rest = body
    props = (schema or {}).get("properties") or {}
    while (start := rest.find("<parameter=")) >= 0:
        name_end = rest.find(">", start)
        if name_end < 0:
            raise ParseFailure("an unterminated <parameter=NAME>")
        ends = [(i, tag) for tag in _PARAM_ENDS if (i := rest.find(tag, name_end + 1)) >= 0]
        end, tag = min(ends) if ends else (len(rest), "")
        key = rest[start + len("<parameter="):name_end].strip()
        raw = rest[name_end + 1:end]
        raw = raw[1:] if raw.startswith("\n") else raw
        raw = raw[:-1] if raw.endswith("\n") else raw
        args[key] = convert_param(raw, props.get(key) if isinstance(props, dict) else None)
        rest = rest[end + len(tag):] if tag == "</parameter>" else rest[end:]
    return args


# The order in which a value is tried against a union of types (Ollama's qwen3coder parser): the
# most specific reading first, text last.
_PRECEDENCE = ("boolean", "integer", "number", "array", "object", "string")
_ALIASES = {"int": "integer", "float": "number", "double": "number", "bool": "boolean", "dict": "object",
            "list": "array", "str": "string"}


def _types(schema: Any) -> list[str]:
    """The types a parameter's schema allows (`type`, a list of types, or anyOf/oneOf branches)."""
    if not isinstance(schema, dict):
        return []
    t = schema.get("type")
    found = [t] if isinstance(t, str) else [x for x in t if isinstance(x, str)] if isinstance(t, list) else []
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            found += _types(branch)
    return [_ALIASES.get(x.lower(), x.lower()) for x in found]


def convert_param(raw: str, schema: Any) -> Any:
    """A parameter's raw text as its declared type. No declared type: the text as written (vLLM and
    Ollama agree; `1` stays "1"). A union tries each type by _PRECEDENCE; a value that fits none of
    them stays the raw text (never a guess such as false for "yes")."""
    types = [t for t in _types(schema) if t != "null"]
    if raw.strip().lower() == "null" and (types or _types(schema)):
        return None
    if not types:
        return raw
    for t in sorted(set(types), key=lambda x: _PRECEDENCE.index(x) if x in _PRECEDENCE else len(_PRECEDENCE)):
        ok, value = _as(t, raw)
        if ok:
            return value
    return raw


def _as(t: str, raw: str) -> tuple[bool, Any]:
    text = raw.strip()
    if t == "string":
        return True, raw
    if t == "boolean":
        low = text.lower()
        return (True, low == "true") if low in ("true", "false") else (False, None)
    if t == "integer":
        try:
            return True, int(text)
        except ValueError:
            return False, None
    if t == "number":
        try:
            f = float(text)
        except ValueError:
            return False, None
        if not math.isfinite(f):
            return False, None
        return True, int(f) if f.is_integer() and abs(f) < 2**53 else f
    if t in ("array", "object"):
        kind = list if t == "array" else dict
        try:
            value = loads(text)
        except ParseFailure:
            try:
                value = ast.literal_eval(text)
                json.dumps(value, allow_nan=False)
            except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
                return False, None
        return (True, value) if isinstance(value, kind) else (False, None)
    return False, None


def hermes() -> Hermes:
    # A stray `}` right after a call (the object closed once too often) is noise, as Ollama reads it.
    return Hermes(name="hermes", openers=(OPEN,), call_ends_thinking=True, noise=("}",))


def qwen3coder() -> Qwen3Coder:
    return Qwen3Coder(name="qwen3coder", openers=(OPEN, "<function="), call_ends_thinking=True)
