"""A Gemini generateContent body as an OpenAI Chat Completions request, for local servers (vLLM,
Ollama, llama.cpp, LM Studio, EXO). In a dialect tool mode the body has no tools left (they are
text by now); in native mode tools and calls become OpenAI's. What Chat cannot carry is a 400
naming the field, never dropped. Pure."""

import json
from typing import Any

from proxy.errors import ProxyError
from proxy.schema.gemini_to_json_schema import gemini_to_json_schema

# generationConfig fields and their Chat Completions names.
GENERATION = {"temperature": "temperature", "topP": "top_p", "maxOutputTokens": "max_tokens", "seed": "seed",
              "stopSequences": "stop", "presencePenalty": "presence_penalty", "frequencyPenalty": "frequency_penalty",
              "candidateCount": "n"}
IGNORED_GENERATION = {"thinkingConfig", "topK", "responseModalities", "mediaResolution", "responseLogprobs",
                      "logprobs"}


def _refuse(field: str, why: str) -> ProxyError:
    return ProxyError(f"{field}: {why} cannot be sent to an OpenAI-compatible upstream.", param=field)


def _user_content(parts: list[dict[str, Any]], where: str) -> str | list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for j, p in enumerate(parts):
        if isinstance(p.get("text"), str):
            if not p.get("thought"):
                items.append({"type": "text", "text": p["text"]})
        elif isinstance(p.get("inlineData"), dict):
            blob = p["inlineData"]
            mime = str(blob.get("mimeType", ""))
            if not mime.startswith("image/"):
                raise _refuse(f"{where}.parts[{j}].inlineData", f"a {mime or 'non-image'} attachment")
            items.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{blob.get('data', '')}"}})
        else:
            raise _refuse(f"{where}.parts[{j}]", f"a {next(iter(p), 'empty')} part")
    if len(items) == 1 and items[0]["type"] == "text":
        return items[0]["text"]
    return items


def _tool_result(response: Any) -> str:
    if isinstance(response, dict) and set(response) <= {"output"} and isinstance(response.get("output"), str):
        return response["output"]
    return json.dumps(response, ensure_ascii=False)


def messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    system = body.get("systemInstruction")
    if isinstance(system, dict):
        text = "".join(p.get("text", "") for p in system.get("parts") or [])
        if text:
            out.append({"role": "system", "content": text})
    pending: list[str] = []  # ids of the last model turn's calls, to pair responses without ids
    for i, c in enumerate(body.get("contents") or []):
        where = f"contents[{i}]"
        if not isinstance(c, dict) or not isinstance(c.get("parts") or [], list):
            raise _refuse(where, "a content that is not an object with a list of parts")
        parts = [p for p in c.get("parts") or [] if isinstance(p, dict)]
        if c.get("role") == "model":
            text = "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))
            calls = []
            for j, p in enumerate(parts):
                if isinstance(p.get("functionCall"), dict):
                    fc = p["functionCall"]
                    calls.append({"id": fc.get("id") or f"call_{i}_{j}", "type": "function", "function": {
                        "name": fc.get("name", ""), "arguments": json.dumps(fc.get("args") or {}, ensure_ascii=False)}})
                elif not ("text" in p or p.get("thought") or set(p) <= {"thoughtSignature"}):
                    raise _refuse(f"{where}.parts[{j}]", f"a model {next(iter(p), 'empty')} part")
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = calls
            pending = [tc["id"] for tc in calls]
            out.append(message)
            continue
        answers = [p for p in parts if isinstance(p.get("functionResponse"), dict)]
        for n, p in enumerate(answers):
            fr = p["functionResponse"]
            if fr.get("parts"):
                raise _refuse(f"{where}.parts[{parts.index(p)}].functionResponse.parts", "media in a tool result")
            call_id = fr.get("id") or (pending[n] if n < len(pending) else f"call_{i}_{n}")
            out.append({"role": "tool", "tool_call_id": call_id, "content": _tool_result(fr.get("response"))})
        rest = [p for p in parts if not isinstance(p.get("functionResponse"), dict)]
        if rest or not answers:
            out.append({"role": "user", "content": _user_content(rest, where)})
    return out


def _tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict):
            raise _refuse(f"tools[{i}]", "a tool that is not an object")
        for key in tool:
            if key != "functionDeclarations":
                raise _refuse(f"tools[{i}].{key}", "a hosted tool")
        for decl in tool.get("functionDeclarations") or []:
            if not isinstance(decl, dict):
                raise _refuse(f"tools[{i}].functionDeclarations", "a declaration that is not an object")
            params = decl.get("parametersJsonSchema")
            params = params if isinstance(params, dict) else gemini_to_json_schema(decl.get("parameters"))
            fn: dict[str, Any] = {"name": decl.get("name", ""), "parameters": params or {"type": "object",
                                                                                         "properties": {}}}
            if decl.get("description"):
                fn["description"] = decl["description"]
            out.append({"type": "function", "function": fn})
    return out


def chat_request(model: str, body: dict[str, Any], stream: bool) -> dict[str, Any]:
    req: dict[str, Any] = {"model": model.removeprefix("models/"), "messages": messages(body)}
    tools = _tools(body)
    if tools:
        req["tools"] = tools
        fcc = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
        mode = str(fcc.get("mode") or "AUTO").upper()
        allowed = fcc.get("allowedFunctionNames") or []
        if mode == "NONE":
            req["tool_choice"] = "none"
        elif mode == "ANY":
            req["tool_choice"] = ({"type": "function", "function": {"name": allowed[0]}} if len(allowed) == 1
                                  else "required")
    config = body.get("generationConfig") if isinstance(body.get("generationConfig"), dict) else {}
    for key, value in config.items():
        if key in GENERATION:
            req[GENERATION[key]] = value
        elif key == "responseMimeType":
            if value == "application/json" and "responseJsonSchema" not in config and "responseSchema" not in config:
                req["response_format"] = {"type": "json_object"}
        elif key in ("responseJsonSchema", "responseSchema"):
            schema = value if key == "responseJsonSchema" else gemini_to_json_schema(value)
            req["response_format"] = {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}
        elif key not in IGNORED_GENERATION:
            raise _refuse(f"generationConfig.{key}", "this setting")
    if stream:
        req["stream"] = True
        req["stream_options"] = {"include_usage": True}
    return req
