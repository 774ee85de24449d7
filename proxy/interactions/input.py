"""Interactions `input` steps, `tools` and `generation_config` -> what the Responses core takes.

An Interactions history is a list of typed steps; each has an exact counterpart among Responses
input items (user_input/model_output -> message, function_call -> function_call, function_result
-> function_call_output), so one conversion here lets every repair the Responses path makes
(call pairing, Gemini ids and signatures from call records, media in results, tool names) serve
this API too. What has no counterpart is a 400 naming the step, never dropped.

Thought signatures travel on `thought` steps in Interactions and on the next part in Gemini: a
signature is carried to the function call or the model text that follows its thought step.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from proxy.errors import ProxyError
from proxy.to_gemini.media import checked_base64, from_url, inline
from proxy.wire.interactions import CONTENT_TYPES, STEP_TYPES
from proxy.wire.responses import FunctionCallItem, FunctionCallOutputItem, InputItem, MessageItem


def _bad(where: str, why: str, code: str = "invalid_value") -> ProxyError:
    return ProxyError(f"Invalid '{where}': {why}", param=where, code=code)


def input_steps(raw: Any) -> list[dict[str, Any]]:
    """`input` in any of its four shapes (a string, a content, a list of contents, a list of steps)
    as a list of steps."""
    if raw is None:
        return []
    if isinstance(raw, str):
        return [{"type": "user_input", "content": [{"type": "text", "text": raw}]}]
    if isinstance(raw, dict):
        raw = [raw]
    kinds = [item.get("type") if isinstance(item, dict) else None for item in raw]
    if raw and all(k in CONTENT_TYPES for k in kinds):
        return [{"type": "user_input", "content": raw}]
    for i, (item, kind) in enumerate(zip(raw, kinds, strict=True)):
        if not isinstance(item, dict):
            raise _bad(f"input[{i}]", "expected a step or a content object.", "invalid_type")
        if kind in CONTENT_TYPES:
            raise _bad(f"input[{i}]", "a list mixes contents and steps; send either contents or steps.")
        if kind not in STEP_TYPES:
            raise _bad(f"input[{i}].type", f"{kind!r} is not a step this proxy can send to the model "
                       f"(it takes {', '.join(STEP_TYPES)}).")
    return raw


def content_part(content: Any, where: str) -> dict[str, Any]:
    """One Interactions content as a Responses content part (text, or media checked here so a
    problem names the Interactions field)."""
    if not isinstance(content, dict):
        raise _bad(where, "expected a content object.", "invalid_type")
    kind = content.get("type")
    if kind == "text":
        if not isinstance(content.get("text"), str):
            raise _bad(f"{where}.text", "a text content needs a string 'text'.", "invalid_type")
        return {"type": "input_text", "text": content["text"]}
    if kind not in CONTENT_TYPES:
        raise _bad(f"{where}.type", f"{kind!r} is not a content type ({', '.join(CONTENT_TYPES)}).")
    mime = content.get("mime_type")
    mime = mime if isinstance(mime, str) else None
    if isinstance(content.get("data"), str) and content["data"]:
        data = checked_base64(content["data"], f"{where}.data")
        inline(data, mime, f"{where}.mime_type")  # checks the MIME type
        return {"type": "input_file", "file_data": f"data:{mime};base64,{data}"}
    if isinstance(content.get("uri"), str) and content["uri"]:
        from_url(content["uri"], f"{where}.uri", mime=mime)  # checks the URI and its type
        return {"type": "input_file", "file_url": content["uri"], "mime_type": mime}
    raise _bad(where, f"a {kind} content needs 'data' (base64) or 'uri'.", "missing_required_parameter")


def _contents(step: dict[str, Any], where: str) -> list[Any]:
    content = step.get("content")
    if content is None:
        return []
    if not isinstance(content, list):
        raise _bad(f"{where}.content", "expected a list of contents.", "invalid_type")
    return content


def _result_output(result: Any, where: str) -> str | list[dict[str, Any]]:
    """A function_result's `result` (a string, an object, or a list of contents)."""
    if isinstance(result, str):
        return result
    if isinstance(result, list):
        return [content_part(c, f"{where}[{j}]") for j, c in enumerate(result)]
    if isinstance(result, dict):
        return json.dumps(result, ensure_ascii=False)
    raise _bad(where, "expected a string, an object or a list of contents.", "invalid_type")


@dataclass
class StepItems:
    """The Responses items for a list of steps, and the signatures their thought steps carried."""

    items: list[InputItem] = field(default_factory=list)
    call_signatures: dict[str, str] = field(default_factory=dict)    # call id -> signature
    call_names: dict[str, str] = field(default_factory=dict)         # call id -> the client's tool name
    text_signatures: dict[int, str] = field(default_factory=dict)    # n-th model text -> signature


def steps_to_items(steps: list[dict[str, Any]]) -> StepItems:
    out = StepItems()
    signature: tuple[str, str] | None = None  # (where, signature) of a thought step awaiting its part
    texts = 0
    for i, step in enumerate(steps):
        where, kind = f"input[{i}]", step.get("type")
        if signature and kind in ("user_input", "function_result"):
            texts = _sign_previous(out, signature, texts)
            signature = None
        if kind == "thought":
            sig = step.get("signature")
            if sig is not None and not isinstance(sig, str):
                raise _bad(f"{where}.signature", "expected a string.", "invalid_type")
            if sig:
                signature = (where, sig)
            continue  # a summary is for the reader: Gemini takes back only the signature
        if kind == "user_input":
            parts = [content_part(c, f"{where}.content[{j}]") for j, c in enumerate(_contents(step, where))]
            out.items.append(MessageItem(role="user", content=parts or ""))
        elif kind == "model_output":
            text = []
            for j, c in enumerate(_contents(step, where)):
                if not (isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)):
                    raise _bad(f"{where}.content[{j}]", "only text can be sent back as model output.",
                               "unsupported_content")
                text.append(c["text"])
            joined = "".join(text)
            out.items.append(MessageItem(role="assistant", content=[{"type": "output_text", "text": joined}]))
            if joined:
                if signature:
                    out.text_signatures[texts] = signature[1]
                    signature = None
                texts += 1
        elif kind == "function_call":
            call_id, name, args = step.get("id"), step.get("name"), step.get("arguments", {})
            for key, value, typ in (("id", call_id, str), ("name", name, str), ("arguments", args, dict)):
                if not isinstance(value, typ) or (typ is str and not value):
                    raise _bad(f"{where}.{key}", f"a function_call step needs {key} "
                               f"({'an object' if typ is dict else 'a non-empty string'}).", "invalid_type")
            out.items.append(FunctionCallItem(type="function_call", call_id=call_id, name=name,
                                              arguments=json.dumps(args, ensure_ascii=False)))
            out.call_names[call_id] = name
            if signature:
                out.call_signatures[call_id] = signature[1]
                signature = None
        elif kind == "function_result":
            call_id = step.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                raise _bad(f"{where}.call_id", "a function_result step needs the call_id of its call.",
                           "missing_required_parameter")
            if "result" not in step:
                raise _bad(f"{where}.result", "a function_result step needs a result.", "missing_required_parameter")
            # Extra fields: is_error puts the result on the error side of Gemini's response; an object
            # result goes to Gemini as the response object itself.
            result = step["result"]
            out.items.append(FunctionCallOutputItem(
                type="function_call_output", call_id=call_id, output=_result_output(result, f"{where}.result"),
                is_error=step.get("is_error") is True, result_object=result if isinstance(result, dict) else None))
    if signature:
        _sign_previous(out, signature, texts)
    return out


def _sign_previous(out: StepItems, signature: tuple[str, str], texts: int) -> int:
    """A signature after the last part of a model turn (Gemini sends it on a closing empty text part)
    goes on that turn's last text; one with nothing to sign is refused, never dropped."""
    last = out.items[-1] if out.items else None
    if not (isinstance(last, MessageItem) and last.role == "assistant" and texts):
        raise _bad(signature[0], "a thought step's signature must come with the model output or function call it "
                   "belongs to.")
    out.text_signatures.setdefault(texts - 1, signature[1])
    return texts


def sign_texts(contents: list[dict[str, Any]], signatures: dict[int, str]) -> None:
    """Put text signatures back on the n-th model text part of `contents` (the new ones only)."""
    if not signatures:
        return
    n = 0
    for content in contents:
        if content.get("role") != "model":
            continue
        for part in content.get("parts", []):
            if isinstance(part.get("text"), str) and part["text"] and not part.get("thought"):
                if n in signatures and "thoughtSignature" not in part:
                    part["thoughtSignature"] = signatures[n]
                n += 1


# Interactions tool types the proxy can serve, and their Responses counterpart.
def tools_to_responses(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    out = []
    for i, tool in enumerate(tools):
        kind = tool.get("type")
        if kind == "function":
            out.append({k: v for k, v in tool.items() if k in ("type", "name", "description", "parameters")})
        elif kind == "google_search":
            out.append({"type": "web_search"})
        else:
            raise _bad(f"tools[{i}].type", f"tool type {kind!r} cannot be served through this proxy (it serves "
                       "'function' and 'google_search').", "unsupported_tool")
    return out


_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def tool_choice(choice: str | dict[str, Any] | None, declared: list[str]) -> str | dict[str, Any] | None:
    """`generation_config.tool_choice` as a Responses tool_choice (validated: Gemini's own mode)."""
    if choice is None:
        return None
    where = "generation_config.tool_choice"
    if isinstance(choice, str):
        if choice == "validated":
            return {"type": "allowed_tools", "mode": "auto",
                    "tools": [{"type": "function", "name": n} for n in declared]}
        if choice not in _CHOICES:
            raise _bad(where, f"{choice!r} is not one of auto, any, none, validated.")
        return _CHOICES[choice]
    allowed = choice.get("allowed_tools")
    if not isinstance(allowed, dict) or set(choice) != {"allowed_tools"}:
        raise _bad(where, "expected a mode string or {'allowed_tools': {...}}.", "invalid_type")
    mode = allowed.get("mode") or "auto"
    names = allowed.get("tools") or []
    if mode == "none":
        return "none"
    if mode not in ("auto", "any", "validated") or not isinstance(names, list) or not names:
        raise _bad(f"{where}.allowed_tools", "needs a mode (auto, any, validated) and the tools it allows.")
    return {"type": "allowed_tools", "mode": "required" if mode == "any" else "auto",
            "tools": [{"type": "function", "name": n} for n in names]}


def response_format(fmt: dict[str, Any] | list[dict[str, Any]] | None, mime: str | None) -> dict[str, Any]:
    """`response_format` (text with a JSON schema) -> generationConfig fields."""
    if fmt is None:
        return {"responseMimeType": mime} if mime == "application/json" else {}
    if isinstance(fmt, list):
        if len(fmt) != 1:
            raise _bad("response_format", "this proxy takes one response format.")
        fmt = fmt[0]
    if fmt.get("type") != "text":
        raise _bad("response_format.type", f"{fmt.get('type')!r} output cannot be produced through this proxy "
                   "(it produces text).", "unsupported_value")
    out: dict[str, Any] = {}
    if fmt.get("mime_type") == "application/json" or fmt.get("schema") is not None:
        out["responseMimeType"] = "application/json"
    if isinstance(fmt.get("schema"), dict):
        out["responseJsonSchema"] = {k: v for k, v in fmt["schema"].items() if k != "$schema"}
    return out
