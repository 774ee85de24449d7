"""Anthropic `system`, `messages`, `tools` and `tool_choice` -> the Responses input items and tools the
core already turns into Gemini contents and declarations (to_gemini/input_to_contents.py), so call
pairing, call records, signatures, media and schema repair are the same code as for every client.

- a `tool_result` becomes a function_call_output (images and documents inside it kept as media,
  `is_error` on the error side of Gemini's functionResponse); the blocks after it in the same user
  turn become a user message;
- a `tool_use` becomes a function_call with its `input` as the arguments;
- a `thinking` block's `signature` is the proxy's sealed carrier (translator.py): it goes back as a
  reasoning item's `encrypted_content`, where the carrier is opened; `redacted_thinking` likewise.
A block the proxy cannot represent is a 400 naming it, never dropped.
"""

from typing import Any

from proxy import fast_json
from proxy.errors import ProxyError
from proxy.to_gemini.input_to_contents import own_items
from proxy.wire.anthropic import Block, Message, Tool, ToolChoice
from proxy.wire.responses import InputItem, MessageItem

SERVER_SEARCH = "web_search_"  # web_search_20250305, web_search_20260209, ...
# The tool-search server tools (beta advanced-tool-use-2025-11-20), run by the proxy (deferral.py).
TOOL_SEARCHES = {"tool_search_tool_regex": "regex", "tool_search_tool_bm25": "bm25"}
LOADED_NOTE = "Tool {} is loaded: call it by its name."


def _tool_search_kind(tool_type: str | None) -> str | None:
    """regex or bm25 for a tool-search tool's type (dated, `tool_search_tool_regex_20251119`, or not)."""
    for name, kind in TOOL_SEARCHES.items():
        if tool_type and (tool_type == name or tool_type.startswith(name + "_")):
            return kind
    return None


def _media(block: Block, where: str) -> dict[str, Any]:
    """An image or document block as a Responses media part (media.py checks and converts it)."""
    source = block.source or {}
    kind = source.get("type")
    if kind == "base64" and isinstance(source.get("data"), str) and isinstance(source.get("media_type"), str):
        url = f"data:{source['media_type']};base64,{source['data']}"
    elif kind == "url" and isinstance(source.get("url"), str):
        url = source["url"]
    elif kind == "text" and block.type == "document" and isinstance(source.get("data"), str):
        return {"type": "input_text", "text": source["data"]}
    else:
        raise ProxyError(f"{where}.source: a {block.type} needs a base64 source (data, media_type) or a url.",
                         param=f"{where}.source")
    if block.type == "image":
        return {"type": "input_image", "image_url": url}
    return {"type": "input_file", "file_data" if url.startswith("data:") else "file_url": url,
            "filename": block.name or ("document.pdf" if "pdf" in url[:40] else None)}


def _parts(blocks: list[Block], where: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for j, b in enumerate(blocks):
        if b.type == "text" and b.text is not None:  # (the path written only for what needs it)
            parts.append({"type": "input_text", "text": b.text})
            continue
        at = f"{where}[{j}]"
        if b.type == "text":
            raise ProxyError(f"Missing required parameter: '{at}.text'.", param=f"{at}.text")
        elif b.type in ("image", "document"):
            parts.append(_media(b, at))
        else:
            raise ProxyError(f"Content blocks of type '{b.type}' cannot go here ('{at}').", param=f"{at}.type")
    return parts


def _result_content(block: Block, where: str) -> str | list[dict[str, Any]]:
    if block.content is None or isinstance(block.content, str):
        return block.content or ""
    if isinstance(block.content, dict):
        raise ProxyError(f"Invalid type for '{where}.content': expected a string or an array of content blocks.",
                         param=f"{where}.content")
    blocks = []
    for j, raw in enumerate(block.content):
        try:
            b = Block.model_validate(raw)
        except ValueError:
            raise ProxyError(f"Invalid content block '{where}.content[{j}]'.", param=f"{where}.content[{j}]") from None
        if b.type == "tool_reference":  # a client-run search's find (Claude Code's ToolSearch): now declared
            name = (b.model_extra or {}).get("tool_name")
            if not isinstance(name, str) or not name:
                raise ProxyError(f"Missing required parameter: '{where}.content[{j}].tool_name'.",
                                 param=f"{where}.content[{j}].tool_name")
            b = Block(type="text", text=LOADED_NOTE.format(name))
        blocks.append(b)
    parts = _parts(blocks, f"{where}.content")
    return parts if any(p["type"] != "input_text" for p in parts) else "".join(p["text"] for p in parts)


def referenced_tools(messages: list[Message]) -> set[str]:
    """Tools the history's tool_reference blocks name (in tool_results, and in the proxy's own
    tool_search_tool_result blocks): deferred ones are declared from then on (deferral.py)."""
    names: set[str] = set()
    for m in messages:
        if isinstance(m.content, str):
            continue
        for b in m.content:
            content = b.content
            if content is not None and type(content) is not str:  # (most blocks: none, or a text naming none)
                _add_references(b, names)
    return names


def _add_references(b: Block, names: set[str]) -> None:
    refs: Any = b.content.get("tool_references") if isinstance(b.content, dict) else (
        b.content if b.type == "tool_result" and isinstance(b.content, list) else None)
    for ref in refs or []:
        if isinstance(ref, dict) and ref.get("type") == "tool_reference" and isinstance(ref.get("tool_name"), str):
            names.add(ref["tool_name"])


def system_items(system: str | list[Block] | None) -> list[dict[str, Any]]:
    """The system prompt (text blocks; their `cache_control` is read by cache_breakpoints.py)."""
    if system is None:
        return []
    if isinstance(system, str):
        return [{"type": "message", "role": "system", "content": system}] if system else []
    texts = []
    for j, b in enumerate(system):
        if b.type != "text" or b.text is None:
            raise ProxyError(f"system[{j}]: only text blocks can make up the system prompt.", param=f"system[{j}]")
        texts.append(b.text)
    return [{"type": "message", "role": "system", "content": "\n\n".join(texts)}] if texts else []


# Where a resent message's items are kept beside its check (wire/resent_items.py converted).
KEPT_ITEMS = "anthropic.items"


def messages_to_items(messages: list[Message]) -> list[dict[str, Any]]:
    """The messages as Responses items; a block's path is written only for what needs it (its
    conversion, a 400): a long history is mostly texts and calls."""
    return [item.wire() for item in joined([own_items(message_items(i, m)) for i, m in enumerate(messages)])]


def joined(per_message: list[list[InputItem]]) -> list[InputItem]:
    """Each message's items in order, consecutive user turns one turn, as Gemini wants them: a user
    message that is only text and media joins the user message before it. The items are not changed
    (a resent message's are shared: wire/resent_items.py converted); a joined one is made anew."""
    items: list[InputItem] = []
    for part in per_message:
        if len(part) == 1 and items and _user_parts(part[0]) and _user_parts(items[-1]):
            before, after = items[-1].wire(), part[0].wire()
            items[-1] = MessageItem({**before, "content": before["content"] + after["content"]})
        else:
            items += part
    return items


def _user_parts(item: InputItem) -> bool:
    return type(item) is MessageItem and item.wire().get("role") == "user" and type(item.wire()["content"]) is list


def message_items(i: int, m: Message) -> list[dict[str, Any]]:
    """One message's items (`i`: its index, named in a 400): what it gives depends on it alone."""
    items: list[dict[str, Any]] = []
    blocks = [Block(type="text", text=m.content)] if isinstance(m.content, str) else m.content
    if m.role == "system":  # where Claude Code 2.1 puts most of its prompt
        return system_items(blocks)
    if m.role == "user":
        rest: list[Block] = []
        for j, b in enumerate(blocks):
            if b.type == "tool_result":
                if not b.tool_use_id:
                    raise ProxyError(f"Missing required parameter: 'messages[{i}].content[{j}].tool_use_id'.",
                                     param=f"messages[{i}].content[{j}].tool_use_id")
                content = b.content  # (most results: one text, taken as it is)
                output = content if type(content) is str else _result_content(b, f"messages[{i}].content[{j}]")
                item = {"type": "function_call_output", "call_id": b.tool_use_id, "output": output,
                        "is_error": b.is_error is True}
                found: set[str] = set()
                if type(content) is not str:  # (a text names no tools)
                    _add_references(b, found)
                if found and isinstance(item["output"], str):  # kept in Gemini's history by name: a
                    # thread's later turns keep them declared (deferral.loaded_in_contents)
                    item["result_object"] = {"output": item["output"],
                                             "tools": [{"name": n} for n in sorted(found)]}
                items.append(item)
            else:
                rest.append(b)
        parts = _parts(rest, f"messages[{i}].content") if rest else []
        if parts:
            items.append({"type": "message", "role": "user", "content": parts})
        return items
    for j, b in enumerate(blocks):
        if b.type == "text":
            if b.text:
                items.append({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": b.text}]})
        elif b.type == "tool_use":
            if not b.id or not b.name:
                at = f"messages[{i}].content[{j}]"
                raise ProxyError(f"{at}: a tool_use block needs an id and a name.", param=at)
            items.append({"type": "function_call", "call_id": b.id, "name": b.name,
                          "arguments": fast_json.dumps(b.input or {}).decode()})
        elif b.type == "thinking":
            items.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": b.thinking or ""}],
                          "encrypted_content": b.signature})
        elif b.type == "redacted_thinking":
            items.append({"type": "reasoning", "summary": [], "encrypted_content": b.data})
        elif b.type == "server_tool_use" and b.name == "web_search" and b.id:
            # Gemini's own search parts come back from its record (the carrier in the thinking block)
            items.append({"type": "web_search_call", "id": b.id, "status": "completed",
                          "action": {"type": "search", "query": (b.input or {}).get("query", "")}})
        elif b.type == "web_search_tool_result" and b.tool_use_id in {
                x.id for x in blocks if x.type == "server_tool_use"}:
            pass  # its content is in the search's record, replayed with its server_tool_use
        elif b.type == "server_tool_use" and b.name in TOOL_SEARCHES and b.id:
            items.append({"type": "tool_search_call", "call_id": b.id, "name": b.name, "execution": "server",
                          "arguments": b.input or {}})
        elif b.type == "tool_search_tool_result" and isinstance(b.content, dict) and b.tool_use_id:
            refs = b.content.get("tool_references")
            out: dict[str, Any] = {"type": "tool_search_output", "call_id": b.tool_use_id, "execution": "server",
                                   "tools": [{"type": "function", "name": r["tool_name"]} for r in refs or []
                                             if isinstance(r, dict) and isinstance(r.get("tool_name"), str)]}
            if b.content.get("type") == "tool_search_tool_result_error":
                out["error"] = b.content.get("error_message") or b.content.get("error_code") or "error"
            items.append(out)
        else:
            at = f"messages[{i}].content[{j}]"
            raise ProxyError(f"Content blocks of type '{b.type}' are not supported in an assistant turn "
                             f"('{at}').", param=f"{at}.type")
    return items


def tools_for_core(tools: list[Tool] | None) -> list[dict[str, Any]] | None:
    """Client tools as Responses function tools; Anthropic's web search as the hosted web_search
    (Google Search, under the --hosted-tools policy); other server tools as hosted tools of their
    own type, which the policy drops with a warning or refuses."""
    if tools is None:
        return None
    out: list[dict[str, Any]] = []
    for t in tools:
        kind = _tool_search_kind(t.type)
        if kind is not None:
            out.append({"type": "tool_search", "execution": "server", "gtp_search": kind, "name": t.name})
        elif t.type and t.type.startswith(SERVER_SEARCH):
            out.append({"type": "web_search"})
        elif t.type not in (None, "custom"):
            out.append({"type": t.type, "name": t.name})
        else:
            tool = {"type": "function", "name": t.name, "description": t.description,
                    "parameters": t.input_schema or {"type": "object", "properties": {}}}
            if (t.model_extra or {}).get("defer_loading") is True:  # held back until a search finds it
                tool["defer_loading"] = True
            out.append(tool)
    return out


def tool_choice_for_core(choice: ToolChoice | None) -> str | dict[str, Any] | None:
    if choice is None:
        return None
    if choice.type == "tool":
        if not choice.name:
            raise ProxyError("Missing required parameter: 'tool_choice.name'.", param="tool_choice.name")
        return {"type": "function", "name": choice.name}
    return {"auto": "auto", "any": "required", "none": "none"}[choice.type]
