"""Chat Completions `messages` -> Responses input items, so both APIs share one history builder."""

from typing import Any

from proxy.errors import ProxyError
from proxy.wire.chat import ChatMessage, ContentPart


def _text(content: str | list[ContentPart] | None, where: str) -> str:
    """The message's text. A part that is not text (image_url, input_audio, file) is refused with a
    400 naming it: the model must never answer without what the client sent."""
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for j, part in enumerate(content):
        if part.type == "text" and isinstance(part.text, str):
            texts.append(part.text)
        elif part.type == "refusal" and isinstance(part.refusal, str):
            texts.append(part.refusal)
        else:
            raise ProxyError(f"Content parts of type '{part.type}' are not supported by this proxy yet "
                             f"('{where}.content[{j}]'); the message is refused rather than sent without it.",
                             param=f"{where}.content[{j}]", code="unsupported_content")
    return "".join(texts)


def chat_messages_to_items(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if m.role in ("system", "developer", "user"):
            items.append({"type": "message", "role": m.role, "content": _text(m.content, where)})
        elif m.role == "assistant":
            text = _text(m.content, where)
            if text:
                items.append({"type": "message", "role": "assistant", "content": text})
            for tc in m.tool_calls or []:
                items.append({"type": "function_call", "call_id": tc.id, "name": tc.function.name,
                              "arguments": tc.function.arguments or "{}"})
        else:  # tool
            if m.tool_call_id is None:
                raise ProxyError(f"Missing required parameter: '{where}.tool_call_id'.",
                                 param=f"{where}.tool_call_id", code="missing_required_parameter")
            items.append({"type": "function_call_output", "call_id": m.tool_call_id,
                          "output": _text(m.content, where)})
    return items
