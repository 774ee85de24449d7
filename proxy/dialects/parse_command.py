"""`gemini-tool-proxy parse --dialect NAME [--tools TOOLS.json]`: a model's text in, its calls out,
one JSON line each way, for people debugging a model's output (and for tests).

Input lines: `{"text": "..."}` or `{"chunks": ["...", ...]}` (fed to the incremental parser as
they are), optionally with `"tools"` (a list of declarations) and `"finish": "length"`. Output
lines: `{"calls": [{"name", "arguments"}], "content", "reasoning"}` or `{"error": "..."}`;
warnings (what was kept as text, and why) go to stderr.
"""

import json
import logging
import sys
from pathlib import Path
from typing import Any, TextIO

from proxy.dialects import Dialect, ToolSpec, dialect
from proxy.dialects.text_parser import summarize


def tool_specs(tools: Any) -> dict[str, ToolSpec]:
    """Declarations in any of the shapes clients write them: OpenAI Chat (`{"type": "function",
    "function": {...}}`), Responses/flat (`{"name", "parameters"}`), Gemini (`functionDeclarations`)."""
    if isinstance(tools, dict):
        tools = tools.get("tools", tools.get("functionDeclarations", [tools]))
    if not isinstance(tools, list):
        raise ValueError("tools must be a list of declarations")
    specs = {}
    for tool in tools:
        if not isinstance(tool, dict):
            raise ValueError("each tool must be an object")
        for decl in tool.get("functionDeclarations") or [tool.get("function", tool)]:
            if not isinstance(decl, dict) or not isinstance(decl.get("name"), str):
                raise ValueError("each declaration needs a name")
            params = decl.get("parameters", decl.get("parametersJsonSchema", decl.get("input_schema")))
            specs[decl["name"]] = ToolSpec(decl["name"], str(decl.get("description") or ""),
                                           params if isinstance(params, dict) else None)
    return specs


def parse_line(d: Dialect, line: str, default_tools: dict[str, ToolSpec], errors: TextIO) -> dict[str, Any]:
    try:
        item = json.loads(line)
    except ValueError as e:
        return {"error": f"the line is not JSON: {e}"}
    if not isinstance(item, dict) or not (isinstance(item.get("text"), str) or isinstance(item.get("chunks"), list)):
        return {"error": 'each line must be {"text": "..."} or {"chunks": ["...", ...]}'}
    chunks = [item["text"]] if isinstance(item.get("text"), str) else item["chunks"]
    if not all(isinstance(c, str) for c in chunks):
        return {"error": "chunks must be strings"}
    try:
        tools = tool_specs(item["tools"]) if "tools" in item else default_tools
    except ValueError as e:
        return {"error": str(e)}
    parser = d.parser(tools)
    events = [e for c in chunks for e in parser.feed(c)]
    events += parser.close("length" if item.get("finish") == "length" else "stop")
    out = summarize(events)
    for warning in out.pop("warnings"):
        print(f"warning: {warning}", file=errors)
    return out


def run(name: str, tools_file: str | None, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout,
        stderr: TextIO = sys.stderr) -> int:
    logging.getLogger("proxy.dialects").setLevel(logging.ERROR)  # warnings are written below, once
    try:
        d = dialect(name)
        tools = tool_specs(json.loads(Path(tools_file).read_text(encoding="utf-8"))) if tools_file else {}
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=stderr)
        return 2
    for line in stdin:
        if line.strip():
            print(json.dumps(parse_line(d, line, tools, stderr), ensure_ascii=False), file=stdout, flush=True)
    return 0
