"""OpenAI `tool_choice` (both shapes, incl. allowed_tools) -> Gemini `toolConfig` (docs/wire.md#tool-choice)."""

from typing import Any

from proxy.errors import ProxyError
from proxy.tools.prepare_tools import PreparedTools

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
