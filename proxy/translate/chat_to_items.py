"""Chat Completions `messages` -> Responses input items, so both APIs share one history builder."""

from typing import Any

from proxy.errors import ProxyError


def _text(content: Any, index: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") in ("text", None))
    raise ProxyError(f"Invalid type for 'messages[{index}].content': expected a string or an array of parts.",
                     param=f"messages[{index}].content", code="invalid_type")


def chat_messages_to_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise ProxyError(f"Invalid type for 'messages[{i}]': expected an object.", param=f"messages[{i}]",
                             code="invalid_type")
        role = m.get("role")
        if role in ("system", "developer", "user"):
            items.append({"type": "message", "role": role, "content": _text(m.get("content"), i)})
        elif role == "assistant":
            text = _text(m.get("content"), i)
            if text:
                items.append({"type": "message", "role": "assistant", "content": text})
            for j, tc in enumerate(m.get("tool_calls") or []):
                fn = tc.get("function") if isinstance(tc, dict) else None
                if not isinstance(fn, dict) or not isinstance(tc.get("id"), str) or not isinstance(fn.get("name"), str):
                    raise ProxyError(f"Invalid 'messages[{i}].tool_calls[{j}]': needs an id and function.name.",
                                     param=f"messages[{i}].tool_calls[{j}]", code="invalid_value")
                items.append({"type": "function_call", "call_id": tc["id"], "name": fn["name"],
                              "arguments": fn.get("arguments") if isinstance(fn.get("arguments"), str) else "{}"})
        elif role == "tool":
            if not isinstance(m.get("tool_call_id"), str):
                raise ProxyError(f"Missing required parameter: 'messages[{i}].tool_call_id'.",
                                 param=f"messages[{i}].tool_call_id", code="missing_required_parameter")
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"],
                          "output": _text(m.get("content"), i)})
        else:
            raise ProxyError(f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
                             "'tool', and 'developer'.", param=f"messages[{i}].role", code="invalid_value")
    return items
