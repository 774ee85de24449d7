"""`POST /v1/gemini`: Gemini's own request and response shapes, with the conversation kept here."""

import json
from typing import Any

from aiohttp import web

from proxy.errors import ProxyError
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import read_json, validate
from proxy.server.sse_response import open_sse, write_events
from proxy.translate.model_turn import add_part, parts_of
from proxy.translate.signatures import sign_unsigned_turns
from proxy.translate.tool_context import apply_tool_context
from proxy.wire.gemini import NativeRequest

CONVERSATION_HEADER = "x-gtp-conversation"


def _new_contents(req: NativeRequest) -> list[dict[str, Any]]:
    if isinstance(req.input, str):
        return [{"role": "user", "parts": [{"text": req.input}]}]
    return [c if "role" in c else {"role": "user", **c} for c in req.input]


def _gemini_body(req: NativeRequest, contents: list[dict[str, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": contents}
    if req.system_instruction is not None:
        si = req.system_instruction
        body["systemInstruction"] = {"parts": [{"text": si}]} if isinstance(si, str) else si
    if req.tools:
        body["tools"] = req.tools
    if req.tool_config:
        body["toolConfig"] = req.tool_config
    if req.generation_config:
        body["generationConfig"] = req.generation_config
    return body


async def native_generate(request: web.Request) -> web.StreamResponse:
    ctx: Context = request.app[CONTEXT]
    req = validate(NativeRequest, await read_json(request))
    session = session_of(request)
    history = await ctx.store.get_conversation(session, req.conversation) if req.conversation else []
    contents = history + _new_contents(req)
    model = ctx.gemini_model(req.model)
    sign_unsigned_turns(contents, model)
    body = _gemini_body(req, contents)
    key = api_key_of(request)
    headers = {CONVERSATION_HEADER: req.conversation} if req.conversation else {}
    turn: list[dict[str, Any]] = []

    if req.stream:
        chunks = await ctx.upstream.stream(model, body, key)
        resp = await open_sse(request)
        resp.headers.update(headers)
        try:
            async for chunk in chunks:
                for part in parts_of(chunk):
                    add_part(turn, part)
                await write_events(resp, [chunk], named=False)
        finally:
            await chunks.aclose()
        await _save(ctx, session, req, contents, turn)
        await resp.write_eof()
        return resp

    data = await ctx.upstream.generate(model, body, key)
    for part in parts_of(data):
        add_part(turn, part)
    await _save(ctx, session, req, contents, turn)
    return web.json_response(data, headers=headers)


async def _save(ctx: Context, session: str, req: NativeRequest, contents: list[dict[str, Any]],
                turn: list[dict[str, Any]]) -> None:
    if req.conversation:
        await ctx.store.put_conversation(session, req.conversation,
                                         contents + ([{"role": "model", "parts": turn}] if turn else []))


async def rest_generate(request: web.Request) -> web.StreamResponse:
    """Gemini's own REST paths (`/v1beta/models/{model}:generateContent` and `:streamGenerateContent`),
    so Gemini SDKs can use the proxy as their base URL. The body goes upstream with the repairs every
    intercepted request gets (schemas sanitized, signatures, function-response order)."""
    ctx: Context = request.app[CONTEXT]
    model, _, method = request.match_info["target"].rpartition(":")
    if method not in ("generateContent", "streamGenerateContent") or not model:
        raise ProxyError(f"Method {method} not found.", status=404)
    body = await read_json(request)
    if not isinstance(body, dict):
        raise ProxyError("Invalid JSON payload received. Expected an object.")
    body = apply_tool_context(body, None, model)
    key = api_key_of(request)
    if method == "generateContent":
        return web.json_response(await ctx.upstream.generate(model, body, key))
    chunks = await ctx.upstream.stream(model, body, key)
    sse = request.query.get("alt") == "sse"
    resp = await open_sse(request) if sse else await _open_json_array(request)
    first = True
    try:
        async for chunk in chunks:
            if sse:
                await write_events(resp, [chunk], named=False)
            else:  # without alt=sse Gemini streams one JSON array
                await resp.write((("[" if first else ",\r\n") + json.dumps(chunk, ensure_ascii=False)).encode())
            first = False
    finally:
        await chunks.aclose()
    if not sse:
        await resp.write(b"[]" if first else b"]")
    await resp.write_eof()
    return resp


async def _open_json_array(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"content-type": "application/json; charset=utf-8"})
    await resp.prepare(request)
    return resp
