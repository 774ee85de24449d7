"""A mock local OpenAI-compatible server (`/v1/chat/completions`), behaving like the servers users
front with the proxy: a vLLM started without `--tool-call-parser` refuses `tools` with vLLM's own
message; models answer in their family's text dialect; `stop`, `max_tokens` (a token is a word
here) and `continue_final_message` are honoured; Llama's template refuses parallel calls in history.

Model names choose the behaviour:
- the dialect by family: qwen3-coder -> qwen3coder, qwen/hermes -> hermes, llama -> llama3, mistral /
  ministral / devstral -> mistral, gpt-oss -> harmony, functiongemma, gemma-4 / gemma4, gemma-3,
  pythonic; the dialect rendered in the prompt wins when there is one;
- `*think*`: a thinker that writes `<think>...</think>` before its answer (`*-preopen*`: its template
  opened the tag, so the answer starts inside the reasoning and shows only `</think>`);
- `*-toolparser`: started with a tool parser: takes `tools`, answers with structured tool_calls;
- `*-brokenparser`: takes `tools` but its parser misses the calls, which stay text in `content`.
"""

import json
import re
import time
from typing import Any

from aiohttp import web

from proxy.mock.dialect_model import calls_as_text, detect, dialect_reply
from proxy.mock.model import respond
from proxy.pattern_rules import rule_for

NO_PARSER = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
SINGLE_CALL = "This model only supports single tool-calls at once!"
FAMILIES = [("*qwen3-coder*", "qwen3coder"), ("*qwen*", "hermes"), ("*hermes*", "hermes"), ("*llama*", "llama3"),
            ("*mistral*", "mistral"), ("*ministral*", "mistral"), ("*devstral*", "mistral"), ("*gpt-oss*", "harmony"),
            ("*functiongemma*", "functiongemma"), ("*gemma-4*", "gemma4"), ("*gemma4*", "gemma4"),
            ("*gemma-3*", "gemma3"), ("*pythonic*", "pythonic")]
REASONING = ("Let me think about this step by step. The user wants an answer and I should check which tool "
             "fits best before I reply. ") * 3
LOCAL_RECEIVED = web.AppKey("local_received", list)


def family(model: str) -> str | None:
    return rule_for(model, FAMILIES)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"object": "error", "message": message, "type": "BadRequestError", "param": None,
                              "code": status}, status=status)


def _text_of(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    parts = []
    for item in content or []:
        if item.get("type") == "text":
            parts.append({"text": item.get("text", "")})
        elif item.get("type") == "image_url":
            url = str((item.get("image_url") or {}).get("url", ""))
            mime, _, data = url.removeprefix("data:").partition(";base64,")
            parts.append({"inlineData": {"mimeType": mime, "data": data}})
    return parts


def gemini_body(req: dict[str, Any]) -> dict[str, Any]:
    """The chat request as the Gemini body the scripted model reads."""
    body: dict[str, Any] = {"contents": []}
    names: dict[str, str] = {}
    for m in req.get("messages") or []:
        role = m.get("role")
        if role in ("system", "developer"):
            body["systemInstruction"] = {"parts": _text_of(m.get("content"))}
        elif role == "assistant":
            parts = [p for p in _text_of(m.get("content") or "") if p.get("text")]
            for tc in m.get("tool_calls") or []:
                names[tc.get("id")] = tc["function"]["name"]
                parts.append({"functionCall": {"name": tc["function"]["name"],
                                               "args": json.loads(tc["function"].get("arguments") or "{}")}})
            body["contents"].append({"role": "model", "parts": parts or [{"text": ""}]})
        elif role == "tool":
            part = {"functionResponse": {"name": names.get(m.get("tool_call_id"), "tool"),
                                         "response": {"output": m.get("content")}}}
            last = body["contents"][-1] if body["contents"] else None
            if last and last["role"] == "user" and all("functionResponse" in p for p in last["parts"]):
                last["parts"].append(part)
            else:
                body["contents"].append({"role": "user", "parts": [part]})
        else:
            body["contents"].append({"role": "user", "parts": _text_of(m.get("content"))})
    if req.get("tools"):
        body["tools"] = [{"functionDeclarations": [
            {"name": t["function"]["name"], "parametersJsonSchema": t["function"].get("parameters") or {}}
            for t in req["tools"]]}]
    return body


def _parallel_in_history(req: dict[str, Any]) -> bool:
    for m in req.get("messages") or []:
        if m.get("role") != "assistant":
            continue
        if len(m.get("tool_calls") or []) > 1:
            return True
        text = m.get("content") if isinstance(m.get("content"), str) else ""
        if len(re.findall(r'\{\s*"name"\s*:', text or "")) > 1:
            return True
    return False


def _answer(req: dict[str, Any], model: str) -> tuple[str, list[dict[str, Any]], str | None]:
    """(content text, structured tool calls, an error) for the request."""
    body = gemini_body(req)
    rendered = detect(body)
    if rendered:
        reply = dialect_reply(body, model, rendered)
    else:
        reply = respond(body, model)
        spoken = family(model)
        if req.get("tools") and model.endswith("-brokenparser") and spoken:
            reply = calls_as_text(reply, spoken)
    if reply.error:
        return "", [], reply.error[2]
    parts = [p for c in reply.chunks for cand in c.get("candidates") or [] for p in
             (cand.get("content") or {}).get("parts") or []]
    text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
    calls = [{"id": f"chatcmpl-tool-{n}", "type": "function", "function": {
        "name": p["functionCall"]["name"], "arguments": json.dumps(p["functionCall"].get("args") or {})}}
        for n, p in enumerate(parts) if "functionCall" in p]
    return text, calls, None


def _cut(text: str, req: dict[str, Any]) -> tuple[str, str, str | None]:
    """Apply `stop` then `max_tokens` (a token is a word and its trailing space here)."""
    stops = req.get("stop") or []
    stops = [stops] if isinstance(stops, str) else stops
    hits = [(text.find(s), s) for s in stops if s and text.find(s) >= 0]
    finish, stop_reason = "stop", None
    if hits:
        at, stop_reason = min(hits)
        text = text[:at]
    limit = req.get("max_tokens") or req.get("max_completion_tokens")
    tokens = re.findall(r"\S+\s*|\s+", text)
    if isinstance(limit, int) and len(tokens) > limit:
        text, finish, stop_reason = "".join(tokens[:limit]), "length", None
    return text, finish, stop_reason


async def chat_completions(request: web.Request) -> web.StreamResponse:
    req = await request.json()
    request.app[LOCAL_RECEIVED].append(req)
    model = str(req.get("model", ""))
    if req.get("tools") and req.get("tool_choice") != "none" and not model.endswith(("-toolparser", "-brokenparser")):
        return _error(400, NO_PARSER)
    if family(model) == "llama3" and _parallel_in_history(req):
        return _error(400, SINGLE_CALL)
    messages = req.get("messages") or []
    continuing = bool(req.get("continue_final_message"))
    if continuing and (not messages or messages[-1].get("role") != "assistant"):
        return _error(400, "continue_final_message is set but the last message is not from the assistant")
    prefill = messages[-1].get("content") or "" if continuing else ""
    scripted = {**req, "messages": messages[:-1]} if continuing else req
    answer, calls, error = _answer(scripted, model)
    if error:
        return _error(500, error)
    if "think" in model and "</think>" not in prefill:
        # `*-preopen*`: the template ended the prompt with `<think>\n`, so the answer starts inside it
        opener = "" if "preopen" in model else "<think>\n"
        answer = f"{opener}{REASONING}\n</think>\n\n{answer}"
    text, finish, stop_reason = _cut(answer, req)
    if calls and finish == "stop" and not stop_reason:
        finish = "tool_calls"
    usage = {"prompt_tokens": len(json.dumps(messages)) // 4, "completion_tokens": len(text.split()) + len(calls),
             "total_tokens": len(json.dumps(messages)) // 4 + len(text.split()) + len(calls)}
    base = {"id": "chatcmpl-mock", "created": int(time.time()), "model": model}
    if not req.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        return web.json_response({**base, "object": "chat.completion", "choices": [
            {"index": 0, "message": message, "finish_reason": finish, "stop_reason": stop_reason}], "usage": usage})
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)

    async def send(obj: Any) -> None:
        await resp.write(f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n".encode())

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    await send(chunk({"role": "assistant", "content": ""}))
    for i in range(0, len(text), 5):  # small pieces: markers split across chunks, as real servers send them
        await send(chunk({"content": text[i:i + 5]}))
    for n, call in enumerate(calls):
        args = call["function"]["arguments"]
        await send(chunk({"tool_calls": [{"index": n, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        for i in range(0, len(args), 8):
            await send(chunk({"tool_calls": [{"index": n, "function": {"arguments": args[i:i + 8]}}]}))
    await send(chunk({}, finish))
    if (req.get("stream_options") or {}).get("include_usage"):
        await send({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    await send("[DONE]")
    await resp.write_eof()
    return resp


def make_local_app() -> web.Application:
    app = web.Application()
    app[LOCAL_RECEIVED] = []
    app.router.add_post("/v1/chat/completions", chat_completions)
    return app


async def start_local_mock(host: str = "127.0.0.1", port: int = 0) -> tuple[web.AppRunner, str, web.Application]:
    """Serve the mock; returns (runner, base URL ending in /v1, app)."""
    app = make_local_app()
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://{host}:{bound}/v1", app
