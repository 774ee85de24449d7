"""Forced tool choice (`functionCallingConfig.mode` ANY): detect an answer that ignored it, and the
directive for one retry (the fallback peers use: docs/wire.md#relay)."""

import copy
from typing import Any

DIRECTIVE = "You must answer this turn by calling one of the available functions"


def forced_names(body: dict[str, Any]) -> list[str] | None:
    """The allowed names when the request forces a call (empty list: any declared function), else None."""
    fcc = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
    if fcc.get("mode") != "ANY":
        return None
    return list(fcc.get("allowedFunctionNames") or [])


def with_directive(body: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The same request with a system directive to call a function (the retry)."""
    out = copy.copy(body)
    which = f" ({', '.join(names)})" if names else ""
    system = copy.deepcopy(out.pop("systemInstruction", None) or {"parts": []})
    system.setdefault("parts", []).append({"text": f"{DIRECTIVE}{which}. Do not reply with text only."})
    out["systemInstruction"] = system
    return out
