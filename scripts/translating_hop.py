"""The floor of a translating proxy in Python (issue 62 item 3): an aiohttp server that does only what
no Responses, Chat or Anthropic Messages to Gemini translator can skip, for the bodies bench_tails.py
sends, and nothing the proxy adds on top (no validation, no repair of history or schemas, no store,
no sessions, no auth, no metrics, no journal, no pricing). Per request: orjson parses the client's
body, one pass builds Gemini's contents, systemInstruction and functionDeclarations (schemas passed
as they are), orjson writes it and aiohttp posts it to the mock; the answer is parsed and written
back in the client's protocol. It answers the bench's bodies only: a benchmark's baseline beside the
null hop (scripts/null_hop.py), never something to serve clients with.

    python scripts/translating_hop.py PORT UPSTREAM_URL
"""

import re
import sys
import time
from typing import Any

import aiohttp
import orjson
from aiohttp import web

_BAD = re.compile(r"[^A-Za-z0-9_.:-]")


def _name(name: str) -> str:
    """A tool name Gemini takes (Codex's MCP tools are named `server/tool`); answers are not mapped
    back: the bench's mock answers text."""
    return _BAD.sub("_", name)[:64]


def _gemini(system: list[str], contents: list[dict], fns: list[dict]) -> dict:
    out: dict[str, Any] = {"contents": contents}
    if system:
        out["systemInstruction"] = {"parts": [{"text": t} for t in system]}
    if fns:
        out["tools"] = [{"functionDeclarations": fns}]
    return out


def _add(contents: list[dict], role: str, part: dict) -> None:
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].append(part)
    else:
        contents.append({"role": role, "parts": [part]})


def _data_url(url: str) -> dict:
    head, _, data = url.partition(",")
    return {"inlineData": {"mimeType": head.removeprefix("data:").split(";")[0], "data": data}}


def from_responses(b: dict) -> dict:
    contents: list[dict] = []
    names: dict[str, str] = {}
    for item in b["input"]:
        kind = item.get("type", "message")
        if kind == "message":
            role = "model" if item["role"] == "assistant" else "user"
            for c in item["content"]:
                _add(contents, role, _data_url(c["image_url"]) if c["type"] == "input_image" else {"text": c["text"]})
        elif kind == "function_call":
            names[item["call_id"]] = item["name"]
            args = orjson.loads(item["arguments"])
            _add(contents, "model", {"functionCall": {"name": _name(item["name"]), "args": args}})
        else:
            _add(contents, "user", {"functionResponse": {"name": _name(names[item["call_id"]]),
                                                         "response": {"output": item["output"]}}})
    fns = [{"name": _name(t["name"]), "description": t.get("description", ""),
            "parametersJsonSchema": t["parameters"]} for t in b.get("tools", ())]
    return _gemini([b["instructions"]] if b.get("instructions") else [], contents, fns)


def from_chat(b: dict) -> dict:
    contents: list[dict] = []
    system: list[str] = []
    names: dict[str, str] = {}
    for m in b["messages"]:
        role, content = m["role"], m.get("content")
        if role == "system":
            system.append(content)
        elif role == "tool":
            _add(contents, "user", {"functionResponse": {"name": _name(names[m["tool_call_id"]]),
                                                         "response": {"output": content}}})
        else:
            gem = "model" if role == "assistant" else "user"
            if isinstance(content, str):
                _add(contents, gem, {"text": content})
            elif content:
                for c in content:
                    _add(contents, gem, _data_url(c["image_url"]["url"]) if c["type"] == "image_url"
                         else {"text": c["text"]})
            for call in m.get("tool_calls") or ():
                names[call["id"]] = call["function"]["name"]
                _add(contents, "model", {"functionCall": {"name": _name(call["function"]["name"]),
                                                          "args": orjson.loads(call["function"]["arguments"])}})
    fns = [{"name": _name(t["function"]["name"]), "description": t["function"].get("description", ""),
            "parametersJsonSchema": t["function"]["parameters"]} for t in b.get("tools", ())]
    return _gemini(system, contents, fns)


def from_anthropic(b: dict) -> dict:
    contents: list[dict] = []
    names: dict[str, str] = {}
    for m in b["messages"]:
        role = "model" if m["role"] == "assistant" else "user"
        blocks = m["content"]
        for c in [{"type": "text", "text": blocks}] if isinstance(blocks, str) else blocks:
            kind = c["type"]
            if kind == "text":
                _add(contents, role, {"text": c["text"]})
            elif kind == "image":
                src = c["source"]
                _add(contents, role, {"inlineData": {"mimeType": src["media_type"], "data": src["data"]}})
            elif kind == "tool_use":
                names[c["id"]] = c["name"]
                _add(contents, role, {"functionCall": {"name": _name(c["name"]), "args": c["input"]}})
            else:
                _add(contents, role, {"functionResponse": {"name": _name(names[c["tool_use_id"]]),
                                                           "response": {"output": c["content"]}}})
    system = b.get("system") or []
    fns = [{"name": _name(t["name"]), "description": t.get("description", ""),
            "parametersJsonSchema": t["input_schema"]}
           for t in b.get("tools", ())]
    return _gemini([system] if isinstance(system, str) else [s["text"] for s in system], contents, fns)


def _answer(g: dict) -> tuple[str, list[dict], dict]:
    parts = g["candidates"][0]["content"].get("parts", [])
    text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    return text, calls, g.get("usageMetadata", {})


def to_responses(model: str, g: dict) -> dict:
    text, calls, u = _answer(g)
    out: list[dict] = [{"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": c["name"],
                        "arguments": orjson.dumps(c.get("args", {})).decode(), "status": "completed"}
                       for i, c in enumerate(calls)]
    if text:
        out.insert(0, {"type": "message", "id": "msg_0", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    return {"id": "resp_0", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": model, "output": out, "tools": [], "tool_choice": "auto", "parallel_tool_calls": True,
            "usage": {"input_tokens": u.get("promptTokenCount", 0), "output_tokens": u.get("candidatesTokenCount", 0),
                      "total_tokens": u.get("totalTokenCount", 0),
                      "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}


def to_chat(model: str, g: dict) -> dict:
    text, calls, u = _answer(g)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": {
            "name": c["name"], "arguments": orjson.dumps(c.get("args", {})).decode()}} for i, c in enumerate(calls)]
    return {"id": "chatcmpl-0", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": u.get("promptTokenCount", 0),
                      "completion_tokens": u.get("candidatesTokenCount", 0),
                      "total_tokens": u.get("totalTokenCount", 0)}}


def to_anthropic(model: str, g: dict) -> dict:
    text, calls, u = _answer(g)
    content: list[dict] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": f"toolu_{i}", "name": c["name"], "input": c.get("args", {})}
                for i, c in enumerate(calls)]
    return {"id": "msg_0", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": u.get("promptTokenCount", 0), "output_tokens": u.get("candidatesTokenCount", 0)}}


ROUTES = {"/v1/responses": (from_responses, to_responses), "/v1/chat/completions": (from_chat, to_chat),
          "/v1/messages": (from_anthropic, to_anthropic)}


async def make(upstream: str) -> web.Application:
    app = web.Application(client_max_size=64 << 20)
    session: list[aiohttp.ClientSession] = []

    async def translate(request: web.Request) -> web.Response:
        if not session:
            session.append(aiohttp.ClientSession())
        to_gemini, from_gemini = ROUTES[request.path]
        b = orjson.loads(await request.read())
        model = b["model"]
        async with session[0].post(f"{upstream}/v1beta/models/{model}:generateContent",
                                   data=orjson.dumps(to_gemini(b)),
                                   headers={"content-type": "application/json",
                                            "x-goog-api-key": request.headers.get("x-goog-api-key", "")}) as r:
            answer = await r.read()
            if r.status != 200:
                return web.Response(body=answer, status=r.status, content_type="application/json")
        return web.Response(body=orjson.dumps(from_gemini(model, orjson.loads(answer))),
                            content_type="application/json")

    for path in ROUTES:
        app.router.add_post(path, translate)
    return app


if __name__ == "__main__":
    web.run_app(make(sys.argv[2]), host="127.0.0.1", port=int(sys.argv[1]), print=lambda *_: print("ready", flush=True))
