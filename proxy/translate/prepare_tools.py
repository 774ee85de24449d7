"""OpenAI tools and tool_choice -> Gemini `tools[].functionDeclarations` and `toolConfig`.

Accepts the flat Responses function tool and the nested Chat-style `{type, function: {...}}`
(real clients send both; reference/protocols.md §A4, §A8). Tool choice mapping: §C.
"""

import logging
from dataclasses import dataclass, field
from typing import Any

from proxy.errors import ProxyError
from proxy.translate.json_schema_to_gemini import json_schema_to_gemini
from proxy.translate.tool_names import ToolNames

log = logging.getLogger(__name__)


@dataclass
class PreparedTools:
    declarations: list[dict[str, Any]] = field(default_factory=list)
    names: ToolNames = field(default_factory=ToolNames)
    # Function tools in the flat Responses shape, echoed on the response object.
    echo: list[dict[str, Any]] = field(default_factory=list)
    strict: bool = False  # a tool asked for strict arguments: Gemini's VALIDATED mode constrains them

    def gemini_tools(self) -> list[dict[str, Any]]:
        return [{"functionDeclarations": self.declarations}] if self.declarations else []


def _function_fields(tool: dict[str, Any], index: int) -> dict[str, Any] | None:
    if tool.get("type", "function") != "function":
        return None
    fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise ProxyError(f"Missing required parameter: 'tools[{index}].name'.", param=f"tools[{index}].name",
                         code="missing_required_parameter")
    params = fn.get("parameters")
    if params is not None and not isinstance(params, dict):
        raise ProxyError(f"Invalid type for 'tools[{index}].parameters': expected an object.",
                         param=f"tools[{index}].parameters", code="invalid_type")
    desc = fn.get("description")
    return {"name": name, "description": desc if isinstance(desc, str) else None, "parameters": params,
            "strict": fn.get("strict") if isinstance(fn.get("strict"), bool) else None}


def prepare_tools(tools: list[dict[str, Any]] | None) -> PreparedTools:
    prepared = PreparedTools()
    for i, tool in enumerate(tools or []):
        if not isinstance(tool, dict):
            raise ProxyError(f"Invalid type for 'tools[{i}]': expected an object.", param=f"tools[{i}]",
                             code="invalid_type")
        fn = _function_fields(tool, i)
        if fn is None:
            log.info("dropping tool of type %r: Gemini function calling cannot serve it", tool.get("type"))
            continue
        if fn["name"] in prepared.names.to_gemini_map:
            raise ProxyError(f"Duplicate tool name '{fn['name']}' in 'tools'.", param=f"tools[{i}].name")
        decl: dict[str, Any] = {"name": prepared.names.add(fn["name"])}
        if fn["description"]:
            decl["description"] = fn["description"]
        schema = json_schema_to_gemini(fn["parameters"])
        if schema is not None:
            decl["parameters"] = schema
        prepared.declarations.append(decl)
        prepared.echo.append({"type": "function", **fn})
        prepared.strict = prepared.strict or fn["strict"] is True
    return prepared


_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}


def tool_choice_to_config(choice: str | dict[str, Any] | None, tools: PreparedTools) -> dict[str, Any] | None:
    """Map tool_choice to `toolConfig`; None when Gemini needs no config (or would reject one)."""
    if not tools.declarations:
        # Gemini 400s on "Function calling config is set without function_declarations."
        return None
    if choice in (None, "auto") and tools.strict:
        # strict: true asks for schema-exact arguments: VALIDATED is Gemini's constrained decoding (call or text).
        return {"functionCallingConfig": {"mode": "VALIDATED"}}
    if choice is None:
        return None
    if isinstance(choice, str):
        if choice not in _MODES:
            raise ProxyError(f"Invalid value for 'tool_choice': '{choice}'. Supported values are: "
                             "'none', 'auto' and 'required'.", param="tool_choice", code="invalid_value")
        return {"functionCallingConfig": {"mode": _MODES[choice]}}
    kind = choice.get("type")
    if kind == "function":
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [_declared(name, tools)]}}
    if kind == "allowed_tools":
        spec = choice.get("allowed_tools") if isinstance(choice.get("allowed_tools"), dict) else choice
        names = [_declared(t.get("name") or (t.get("function") or {}).get("name"), tools)
                 for t in spec.get("tools") or [] if isinstance(t, dict)]
        if not names:
            raise ProxyError("'tool_choice.tools' must name at least one function tool.", param="tool_choice")
        mode = "ANY" if spec.get("mode") == "required" else "VALIDATED"
        return {"functionCallingConfig": {"mode": mode, "allowedFunctionNames": names}}
    raise ProxyError(f"Unsupported 'tool_choice' type: {kind!r}.", param="tool_choice", code="invalid_value")


def _declared(name: Any, tools: PreparedTools) -> str:
    if not isinstance(name, str) or name not in tools.names.to_gemini_map:
        raise ProxyError(f"Tool choice names function {name!r}, which is not in 'tools'.", param="tool_choice",
                         code="invalid_value")
    return tools.names.to_gemini_map[name]
