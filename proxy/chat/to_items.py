"""Chat Completions `messages` -> Responses input items, so both APIs share one history builder."""

import json
from typing import Any

from proxy.errors import ProxyError
from proxy.to_gemini.media import media_part
from proxy.wire.chat import ChatMessage, ContentPart
from proxy.wire.json_body import NOT_PLAIN, parse_arguments, plain_arguments

# Chat's media parts, passed on in their Responses spelling (input_to_contents/media.py convert them).
_MEDIA = {"image_url": "input_image", "file": "input_file", "input_audio": "input_audio"}


def _content(content: str | list[ContentPart] | None, where: str) -> str | list[dict[str, Any]]:
    """A user or tool message's content: text, or typed parts with media kept (never dropped)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not any(part["type"] in _MEDIA for part in content):
        return _text(content, where)
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        if part["type"] in _MEDIA:
            parts.append({**part, "type": _MEDIA[part["type"]]})
            media_part(parts[-1], f"{where}.content[{j}]")  # a bad part is a 400 in the Chat request's terms
        else:
            parts.append({"type": "input_text", "text": _text([part], where)})
    return parts


def _text(content: str | list[ContentPart] | None, where: str) -> str:
    """The message's text. A part that is not text (image_url, input_audio, file) is refused with a
    400 naming it: the model must never answer without what the client sent."""
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for j, part in enumerate(content):
        kind, text, refusal = part["type"], part.get("text"), part.get("refusal")
        if kind == "text" and isinstance(text, str):
            texts.append(text)
        elif kind == "refusal" and isinstance(refusal, str):
            texts.append(refusal)
        else:
            raise ProxyError(f"Content parts of type '{kind}' are not supported by this proxy yet "
                             f"('{where}.content[{j}]'); the message is refused rather than sent without it.",
                             param=f"{where}.content[{j}]", code="unsupported_content")
    return "".join(texts)


# Where a resent message's items are kept beside its check (wire/resent_items.py converted).
KEPT_ITEMS = "chat.items"


def chat_messages_to_items(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The messages as Responses items. A field's path is written only for what needs it (parts to
    convert, a 400): a long history's messages are mostly text, its calls' arguments plain JSON."""
    return [item for i, m in enumerate(messages) for item in message_items(i, m)]


def message_items(i: int, m: ChatMessage) -> list[dict[str, Any]]:
    """One message's items (`i`: its index, named in a 400): what it gives depends on it alone."""
    items: list[dict[str, Any]] = []
    role, content = m["role"], m.get("content")
    text = (content or "") if content is None or type(content) is str else None  # (what _text, _content give it)
    if role == "user":
        items.append({"type": "message", "role": role,
                      "content": _content(content, f"messages[{i}]") if text is None else text})
    elif role in ("system", "developer"):
        items.append({"type": "message", "role": role,
                      "content": _text(content, f"messages[{i}]") if text is None else text})
    elif role == "assistant":
        if text is None:
            text = _text(content, f"messages[{i}]")
        if text:
            items.append({"type": "message", "role": "assistant", "content": text})
        for j, tc in enumerate(m.get("tool_calls") or []):
            function = tc["function"]
            arguments = function.get("arguments")
            # a number JSON cannot carry is named here, not as input[k] (orjson first: 0.2 us)
            if arguments and plain_arguments(arguments) is NOT_PLAIN:
                try:  # noqa: SIM105 - contextlib.suppress is three Python calls a tool call
                    parse_arguments(arguments, f"messages[{i}].tool_calls[{j}].function.arguments")
                except json.JSONDecodeError:
                    pass
            items.append({"type": "function_call", "call_id": tc["id"], "name": function["name"],
                          "arguments": arguments or "{}"})
    else:  # tool
        call_id = m.get("tool_call_id")
        if call_id is None:
            raise ProxyError(f"Missing required parameter: 'messages[{i}].tool_call_id'.",
                             param=f"messages[{i}].tool_call_id", code="missing_required_parameter")
        items.append({"type": "function_call_output", "call_id": call_id,
                      "output": _content(content, f"messages[{i}]") if text is None else text})
    return items
