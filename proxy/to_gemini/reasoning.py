"""OpenAI reasoning settings -> Gemini `thinkingConfig` (docs/wire.md#reasoning).

Gemini 3 takes `thinkingLevel`; 2.5 takes `thinkingBudget` (a level there is a 400, and setting
both is a 400: "You can only set only one of thinking budget and thinking level.").
"""

from typing import Any

from proxy.errors import ProxyError
from proxy.signatures.sentinel import requires_signatures

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
_LEVELS = {"none": "MINIMAL", "minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH",
           "xhigh": "XHIGH", "max": "XHIGH"}
# Token budgets for 2.5 models; -1 asks Gemini to decide ("dynamic").
_BUDGETS = {"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768, "max": -1}
# GEM-DOC thinking: 2.5 Pro 128..32768 and cannot switch thinking off; 2.5 Flash(-Lite) 0..24576.
_RANGES = {"pro": (128, 32768), "flash": (0, 24576)}


def thinking_config(model: str, effort: str | None, summary: str | None) -> dict[str, Any] | None:
    if effort is None and summary is None:
        return None
    config: dict[str, Any] = {}
    if summary is not None:
        config["includeThoughts"] = True
    if effort is not None:
        if effort not in EFFORTS:
            raise ProxyError(f"Invalid value: '{effort}'. Supported values are: {', '.join(map(repr, EFFORTS))}.",
                             param="reasoning.effort", code="invalid_value")
        if requires_signatures(model):  # the Gemini 3 family
            config["thinkingLevel"] = _LEVELS[effort]
        else:
            budget = _BUDGETS[effort]
            config["thinkingBudget"] = budget if budget == -1 else budget_in_range(model, budget)
    return config


def budget_in_range(model: str, budget: int) -> int:
    """A 2.5 model's thinking budget within what it takes (outside the range Gemini answers 400)."""
    lo, hi = _RANGES["pro" if "pro" in model else "flash"]
    return min(max(budget, lo), hi)


def structured_output(fmt: dict[str, Any] | None) -> dict[str, Any]:
    """`text.format` (Responses, flat) or `response_format` (Chat, nested) -> generationConfig fields."""
    if not fmt or fmt.get("type") in (None, "text"):
        return {}
    if fmt.get("type") == "json_object":
        return {"responseMimeType": "application/json"}
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") if isinstance(fmt.get("json_schema"), dict) else fmt
        schema = spec.get("schema")
        if not isinstance(schema, dict):
            raise ProxyError("A json_schema format needs a 'schema' object.", param="text.format.schema",
                             code="invalid_value")
        # responseJsonSchema takes real JSON Schema; only the meta keyword Gemini refuses goes.
        return {"responseMimeType": "application/json",
                "responseJsonSchema": {k: v for k, v in schema.items() if k != "$schema"}}
    raise ProxyError(f"Unsupported format type {fmt.get('type')!r}.", param="text.format", code="invalid_value")
