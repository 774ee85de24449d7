"""Forced tool choice (`functionCallingConfig.mode` ANY): detect an answer that ignored it, and the
directive for one retry (reference/antigravity-proxies.md §3: "plan a text-directive fallback")."""

import copy
from typing import Any

DIRECTIVE = "You must answer this turn by calling one of the available functions"


def forced_names(body: dict[str, Any]) -> list[str] | None:
    """The allowed names when the request forces a call (empty list: any declared function), else None."""
    config = body.get("toolConfig") or body.get("tool_config") or {}
    fcc = config.get("functionCallingConfig") or config.get("function_calling_config") or {}
    if fcc.get("mode") != "ANY":
        return None
    return list(fcc.get("allowedFunctionNames") or fcc.get("allowed_function_names") or [])


def with_directive(body: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The same request with a system directive to call a function (the retry)."""
    out = copy.copy(body)
    which = f" ({', '.join(names)})" if names else ""
    system = copy.deepcopy(out.pop("systemInstruction", None) or out.pop("system_instruction", None) or {"parts": []})
    system.setdefault("parts", []).append({"text": f"{DIRECTIVE}{which}. Do not reply with text only."})
    out["systemInstruction"] = system
    return out


def has_call(chunk: dict[str, Any]) -> bool:
    for cand in chunk.get("candidates") or []:
        for part in (cand.get("content") or {}).get("parts") or []:
            if isinstance(part, dict) and "functionCall" in part:
                return True
    return False
