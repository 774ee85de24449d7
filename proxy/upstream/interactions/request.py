"""A Gemini generateContent body -> an Interactions create request (steps, tools, generation_config).

Thought signatures ride on Gemini parts and on `thought` steps in Interactions: a signed part
becomes a thought step carrying the signature, then the part's own step. Function calls keep their
ids (Gemini's `functionCall.id`, which the Interactions upstream gave them); a call without one
(history from elsewhere) gets a positional id its response shares. What Interactions cannot carry
is a 400 naming the Gemini field, never dropped.

`turn_keys` gives each prefix of the history a key that ignores what a client may lose on a
stateless resend (signatures, thought text, how text was split into parts): the upstream uses them
to continue a stored interaction (`previous_interaction_id`) instead of resending the history.
"""

import hashlib
import json
from typing import Any

from proxy.errors import ProxyError
from proxy.schema.gemini_to_json_schema import gemini_to_json_schema

_LEVELS = {"MINIMAL": "minimal", "LOW": "low", "MEDIUM": "medium", "HIGH": "high", "XHIGH": "xhigh"}
_MODES = {"AUTO": "auto", "ANY": "any", "NONE": "none", "VALIDATED": "validated"}
_GENERATION = {"temperature": "temperature", "topP": "top_p", "seed": "seed", "stopSequences": "stop_sequences",
               "maxOutputTokens": "max_output_tokens"}


def _refuse(where: str, why: str) -> ProxyError:
    return ProxyError(f"Cannot send '{where}' to the Interactions API: {why}", param=where, code="unsupported_value")


def _media(part: dict[str, Any], where: str) -> dict[str, Any]:
    data = part.get("inlineData") or part.get("fileData") or {}
    mime = data.get("mimeType") or ""
    kind = next((k for k in ("image", "audio", "video") if mime.startswith(k + "/")), "document")
    out: dict[str, Any] = {"type": kind, "mime_type": mime}
    if "inlineData" in part:
        out["data"] = data.get("data", "")
    else:
        out["uri"] = data.get("fileUri", "")
    if not mime:
        raise _refuse(where, "media needs a mimeType.")
    return out


def _user_content(part: dict[str, Any], where: str) -> dict[str, Any]:
    if isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if "inlineData" in part or "fileData" in part:
        return _media(part, where)
    raise _refuse(where, f"a user part with {sorted(part)} has no Interactions content.")


def _result(fr: dict[str, Any], where: str) -> tuple[Any, bool]:
    """A functionResponse's result and whether it is an error ({"error": ...} alone)."""
    response = fr.get("response") if isinstance(fr.get("response"), dict) else {}
    is_error = set(response) == {"error"}
    value: Any = response["error"] if is_error else response
    media = [_media(p, f"{where}.parts[{j}]") for j, p in enumerate(fr.get("parts") or [])]
    if media:
        value = [{"type": "text", "text": json.dumps(value, ensure_ascii=False)}, *media]
    elif isinstance(value, str):
        pass
    elif not isinstance(value, dict):
        value = {"output": value}
    return value, is_error


def contents_to_steps(contents: list[dict[str, Any]], start: int = 0) -> list[dict[str, Any]]:
    """Steps for `contents[start:]` (earlier contents are the stored interaction's)."""
    steps: list[dict[str, Any]] = []
    pending_ids: list[str] = []  # ids given to id-less calls of the latest model turn, in order
    for c, content in enumerate(contents):
        role = content.get("role", "user")
        parts = content.get("parts") or []
        new_ids: list[str] = []
        for p, part in enumerate(parts):
            where = f"contents[{c}].parts[{p}]"
            fc = part.get("functionCall")
            if isinstance(fc, dict) and not fc.get("id"):
                new_ids.append(f"call_{c}_{p}")
            if c < start:
                continue
            if role == "model":
                steps += _model_steps(part, where, new_ids[-1] if isinstance(fc, dict) and not fc.get("id") else None)
            elif isinstance(part.get("functionResponse"), dict):
                fr = part["functionResponse"]
                call_id = fr.get("id") or (pending_ids.pop(0) if pending_ids else None)
                if not call_id:
                    raise _refuse(f"{where}.functionResponse.id", "a function response needs the id of its call.")
                result, is_error = _result(fr, f"{where}.functionResponse")
                step = {"type": "function_result", "call_id": call_id, "name": fr.get("name", ""), "result": result}
                if is_error:
                    step["is_error"] = True
                steps.append(step)
            else:
                content_part = _user_content(part, where)
                if steps and steps[-1]["type"] == "user_input":
                    steps[-1]["content"].append(content_part)
                else:
                    steps.append({"type": "user_input", "content": [content_part]})
        if role == "model":
            pending_ids = new_ids
    return steps


def _model_steps(part: dict[str, Any], where: str, minted_id: str | None) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    signature = part.get("thoughtSignature")
    if part.get("thought"):
        step: dict[str, Any] = {"type": "thought", "summary": [{"type": "text", "text": part.get("text", "")}]}
        if signature:
            step["signature"] = signature
        return [step]
    if signature:
        steps.append({"type": "thought", "signature": signature})
    if isinstance(part.get("functionCall"), dict):
        fc = part["functionCall"]
        steps.append({"type": "function_call", "id": fc.get("id") or minted_id, "name": fc.get("name", ""),
                      "arguments": fc.get("args") or {}})
    elif isinstance(part.get("text"), str):
        if part["text"]:
            steps.append({"type": "model_output", "content": [{"type": "text", "text": part["text"]}]})
    else:
        raise _refuse(where, f"a model part with {sorted(part)} has no Interactions step here.")
    return steps


def tools_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i, tool in enumerate(body.get("tools") or []):
        for key, value in tool.items():
            if key == "functionDeclarations":
                for decl in value:
                    fn = {"type": "function", "name": decl.get("name", "")}
                    if decl.get("description"):
                        fn["description"] = decl["description"]
                    if decl.get("parametersJsonSchema") is not None:
                        fn["parameters"] = decl["parametersJsonSchema"]
                    elif decl.get("parameters") is not None:
                        fn["parameters"] = gemini_to_json_schema(decl["parameters"])
                    out.append(fn)
            elif key == "googleSearch":
                out.append({"type": "google_search"})
            else:
                raise _refuse(f"tools[{i}].{key}", "only function declarations and Google Search are carried.")
    return out


def generation_of(body: dict[str, Any]) -> dict[str, Any]:
    gen = body.get("generationConfig") or {}
    out: dict[str, Any] = {}
    for key, value in gen.items():
        if key in _GENERATION:
            out[_GENERATION[key]] = value
        elif key == "thinkingConfig":
            if value.get("includeThoughts"):
                out["thinking_summaries"] = "auto"
            level = value.get("thinkingLevel")
            budget = value.get("thinkingBudget")
            if level:
                out["thinking_level"] = _LEVELS.get(str(level).upper(), str(level).lower())
            elif isinstance(budget, int):  # Interactions has levels only: the nearest one
                out["thinking_level"] = ("minimal" if budget == 0 else "low" if 0 < budget <= 1024
                                         else "medium" if 0 < budget <= 8192 else "high")
        elif key not in ("responseMimeType", "responseJsonSchema", "responseSchema"):
            raise _refuse(f"generationConfig.{key}", "the Interactions API has no such setting.")
    fcc = (body.get("toolConfig") or {}).get("functionCallingConfig")
    if fcc:
        mode = _MODES.get(str(fcc.get("mode", "AUTO")).upper(), "auto")
        names = fcc.get("allowedFunctionNames")
        out["tool_choice"] = {"allowed_tools": {"mode": mode, "tools": names}} if names else mode
    return out


def response_format_of(body: dict[str, Any]) -> dict[str, Any] | None:
    gen = body.get("generationConfig") or {}
    schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
    if gen.get("responseMimeType") != "application/json" and schema is None:
        return None
    fmt: dict[str, Any] = {"type": "text", "mime_type": "application/json"}
    if schema is not None:
        fmt["schema"] = schema
    return fmt


def interactions_request(model: str, body: dict[str, Any], start: int = 0, previous: str | None = None
                         ) -> dict[str, Any]:
    """The create request for `body`; with `previous`, only contents from `start` on are sent."""
    req: dict[str, Any] = {"model": model.removeprefix("models/"), "input": contents_to_steps(body["contents"], start)}
    system = [p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts") or []]
    if system:
        req["system_instruction"] = "\n\n".join(system)
    tools = tools_of(body)
    if tools:
        req["tools"] = tools
    gen = generation_of(body)
    if gen:
        req["generation_config"] = gen
    fmt = response_format_of(body)
    if fmt:
        req["response_format"] = fmt
    if previous:
        req["previous_interaction_id"] = previous
    return req


def _canonical(content: dict[str, Any]) -> list[Any]:
    """What identifies a turn across a resend: texts joined, calls by name and arguments, results."""
    out: list[Any] = [content.get("role", "user")]
    for part in content.get("parts") or []:
        if part.get("thought"):
            continue
        if isinstance(part.get("text"), str):
            if out and isinstance(out[-1], list) and out[-1][0] == "text":
                out[-1][1] += part["text"]
            elif part["text"]:
                out.append(["text", part["text"]])
        elif isinstance(part.get("functionCall"), dict):
            out.append(["call", part["functionCall"].get("name"), part["functionCall"].get("args") or {}])
        elif isinstance(part.get("functionResponse"), dict):
            fr = part["functionResponse"]
            out.append(["result", fr.get("name"), fr.get("response"), fr.get("parts")])
        else:
            out.append(["other", {k: v for k, v in part.items() if k != "thoughtSignature"}])
    return out


def turn_keys(scope: str, contents: list[dict[str, Any]]) -> list[str]:
    """keys[i] identifies contents[:i + 1] within `scope` (the key and model asking)."""
    keys, digest = [], hashlib.sha256(scope.encode()).digest()
    for content in contents:
        digest = hashlib.sha256(digest + json.dumps(_canonical(content), sort_keys=True,
                                                    ensure_ascii=False).encode()).digest()
        keys.append(digest.hex())
    return keys
