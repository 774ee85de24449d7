"""The repairs every request gets on its way to Gemini, from the front-end and the interceptor alike.

- no trailing text-only model turn for models that refuse one ("prefill");
- each call turn's function responses in call order (by id, then by name);
- a `$ref` key inside a function result sent as an opaque JSON string.
Signing (the sentinel for unsigned calls) is left to the caller: its scope differs per path.
"""

import fnmatch
import json
from typing import Any

# "Requests ending with a model turn are not supported" on Gemini 3.5 Flash-Lite, 3.6 Flash and later
# (Google's latest-model page via translators.md §4); CLIProxyAPI drops the trailing prefill turn.
PREFILL_REJECTED = ("gemini-3.5*", "gemini-3.6*", "gemini-3.7*", "gemini-3.8*", "gemini-3.9*", "gemini-4*")


def rejects_prefill(model: str) -> bool:
    return any(fnmatch.fnmatch(model, p) for p in PREFILL_REJECTED)


def drop_trailing_prefill(contents: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """Remove a trailing text-only model turn for models that refuse one (never a call turn)."""
    if contents and rejects_prefill(model) and contents[-1].get("role") == "model" and all(
            "functionCall" not in p for p in contents[-1].get("parts") or []):
        return contents[:-1]
    return contents


def order_function_responses(contents: list[dict[str, Any]]) -> None:
    """Put each call turn's function responses in call order, matching by id, then by name.

    Gemini CLI answers parallel calls in completion order (reference/clients.md); Gemini pairs by
    position. Responses that match no call keep their place after the matched ones.
    """
    for i in range(len(contents) - 1):
        calls = [p["functionCall"] for p in contents[i].get("parts") or [] if "functionCall" in p]
        nxt = contents[i + 1]
        parts = nxt.get("parts") or []
        if contents[i].get("role") != "model" or len(calls) < 2 or nxt.get("role") != "user":
            continue
        answers = [p for p in parts if "functionResponse" in p]
        if len(answers) != len(parts):
            continue
        remaining, ordered = list(answers), []
        for call in calls:
            match = next((a for a in remaining if call.get("id") and a["functionResponse"].get("id") == call["id"]),
                         None) or next((a for a in remaining if not (call.get("id") and a["functionResponse"].get("id"))
                                        and a["functionResponse"].get("name") == call.get("name")), None)
            if match is not None:
                remaining.remove(match)
                ordered.append(match)
        contents[i + 1] = {**nxt, "parts": ordered + remaining}


def _has_ref_key(value: Any) -> bool:
    stack = [value]
    while stack:  # iterative: results can be deep, and this runs on every request
        node = stack.pop()
        if isinstance(node, dict):
            if "$ref" in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def escape_response_refs(contents: list[dict[str, Any]]) -> None:
    """Gemini 3 reads a `$ref` key inside functionResponse.response as a reference to one of the
    response's parts and 400s (LiteLLM#38223); such output goes as an opaque JSON string instead."""
    for content in contents:
        for part in content.get("parts") or []:
            fr = part.get("functionResponse")
            if isinstance(fr, dict) and _has_ref_key(fr.get("response")):
                fr["response"] = {"output": json.dumps(fr["response"], ensure_ascii=False)}


def repair_history(contents: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """Apply the repairs above. Modifies the contents in place; returns them (one shorter when a
    prefill turn was dropped). The contents must have passed the Gemini wire model (wire/gemini.py)."""
    contents = drop_trailing_prefill(contents, model)
    order_function_responses(contents)
    escape_response_refs(contents)
    return contents
