"""Gemini-native routes: Gemini's REST paths (google-genai's `base_url`) and the proxy's own
`/v1/gemini`, whose conversation the proxy keeps.

Both take either spelling (proto JSON's snake_case or camelCase, normalised once on entry), check
the shape with the Gemini wire model, and apply the same repairs every intercepted request gets
(schemas sanitized, signatures, function-response order, prefill, `$ref` in results).
"""

import re
from typing import Any

from aiohttp import web

from proxy.errors import ProxyError
from proxy.from_gemini.answer_check import AnswerCheck
from proxy.from_gemini.model_turn import ModelTurn
from proxy.gemini import rest
from proxy.gemini.rest import MODEL_METHODS, model_method
from proxy.gemini.stream_writer import GeminiWriter
from proxy.server import object_owners
from proxy.server.answer_turn import ReadyTurn, answer_turn
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import read_json, validate
from proxy.session.tool_context import apply_tool_context
from proxy.signatures.sentinel import sign_unsigned_turns
from proxy.wire.gemini import NativeRequest, check_generate_request, first_candidate_parts
from proxy.wire.gemini_keys import to_camel_request

CONVERSATION_HEADER = "x-gtp-conversation"
# Conversation ids travel back in a header: no CR/LF or other bytes a header cannot carry.
CONVERSATION_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")
METHODS = ("generateContent", "streamGenerateContent")


def prepared_body(ctx: Context, body: dict[str, Any], model: str) -> dict[str, Any]:
    """A client's Gemini body, camelCase, checked, and repaired: what goes upstream."""
    body = to_camel_request(body)
    check_generate_request(body)
    return apply_tool_context(body, None, model, result_parts=ctx.rules.result_parts(model))


def answer_problem(answer: dict[str, Any]) -> None:
    """A whole answer with nothing in it (or cut short) is an error, never a 200."""
    check = AnswerCheck()
    check.feed(answer)
    problem = check.problem()
    if problem:
        raise ProxyError(problem, status=502, type="server_error")


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
    if req.conversation is not None and not CONVERSATION_ID.match(req.conversation):
        raise ProxyError("Invalid value for 'conversation': 1 to 128 letters, digits, '_', '.', ':' or '-'.",
                         param="conversation", code="invalid_value")
    session = session_of(request)
    model = ctx.gemini_model(req.model)
    history = await ctx.store.get_conversation(session, req.conversation, model) if req.conversation else []
    body = prepared_body(ctx, _gemini_body(req, history + _new_contents(req)), model)
    await object_owners.refuse_foreign(request, body)
    await ctx.admit(request)
    sign_unsigned_turns(body["contents"], model)  # the whole kept history, not only the current turn
    added = body["contents"][len(history):]
    if req.conversation:
        ctx.store.refuse_unkeepable(body["contents"], f"Conversation '{req.conversation}' with this turn",
                                    "input")
    key = api_key_of(request)
    headers = {CONVERSATION_HEADER: req.conversation} if req.conversation else {}

    writer, whole_turn = GeminiWriter(), ModelTurn()

    def whole(answers: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
        data, keep = _whole(answers)
        for part in first_candidate_parts(data):
            whole_turn.add(part)
        return data, keep

    async def save(ok: bool) -> None:
        turn = writer.turn.parts if req.stream else whole_turn.parts
        if ok and req.conversation:  # one atomic append: concurrent turns never overwrite each other
            await ctx.store.append_conversation(session, req.conversation,
                                                added + ([{"role": "model", "parts": turn}] if turn else []), model)

    return await answer_turn(request, ReadyTurn(model=model, body=body, key=key, stream=bool(req.stream),
                                                writer=lambda: writer, whole=whole, remember=save, headers=headers))


def _whole(answers: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    """A Gemini-native client gets Gemini's answer as it came, unless it is unusable."""
    answer_problem(answers[0])
    return answers[0], True


async def rest_generate(request: web.Request) -> web.StreamResponse:
    """`/{version}/models/{model}:generateContent` and `:streamGenerateContent` (JSON array, or SSE with alt=sse)."""
    ctx: Context = request.app[CONTEXT]
    model, _, method = request.match_info["target"].rpartition(":")
    if method in MODEL_METHODS and model:
        return await model_method(request, model, method)
    if method not in METHODS or not model:
        raise ProxyError(f"Method {method or request.match_info['target']} not found: this proxy serves "
                         f"{', '.join(METHODS + MODEL_METHODS)} on models.", status=404)
    model = ctx.gemini_model(model)
    raw = await read_json(request, shared_tools=True)
    if not isinstance(raw, dict):
        raise ProxyError("Invalid JSON payload received. Expected an object.")
    body = prepared_body(ctx, raw, model)
    await object_owners.refuse_foreign(request, body)
    await ctx.admit(request)
    sse = request.query.get("alt") == "sse"
    return await answer_turn(request, ReadyTurn(model=model, body=body, key=api_key_of(request),
                                                stream=method == "streamGenerateContent",
                                                writer=lambda: GeminiWriter(sse=sse), whole=_whole))


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/gemini", native_generate)
    app.router.add_post("/{version:v1|v1beta|v1alpha}/models/{target}", rest_generate)
    rest.add_routes(app)  # after every other route: its catch-all must shadow none
