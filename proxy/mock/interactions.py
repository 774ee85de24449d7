"""The mock Gemini's Interactions API: `POST /{version}/interactions`, `GET`/`DELETE .../{id}`,
`POST .../{id}/cancel`, answered by the same scripted model as generateContent (model.py).

Its readers and writers are its own, not the proxy's, so the proxy's translation is checked
against an independent one. Strict like the real API: unknown fields are refused in Google's words,
requests are checked against google-genai's own types (when installed), a function_result must
answer a call of the conversation, Gemini 3 calls replayed without their thought step's signature
are refused, an unknown previous_interaction_id is a 404. Interactions are stored (unless
`store: false`); streams carry event ids, and `GET ?stream=true&last_event_id=` resumes after one.

Long answers in hops (hops.py): each hop is an interaction of its own ending `requires_continuation`
with a `continuation_token`; the next is asked for with that token and, when stored, the hop that
issued it as `previous_interaction_id` and no input (without store: the original input again).
"""

import copy
import json
import secrets
from typing import Any

from aiohttp import web

from proxy.mock import hops as long_answers
from proxy.mock.model import respond
from proxy.mock.validate import GeminiRejection, is_gemini3, validate_request
from proxy.wire.merge_chunks import merge_chunks

STORE = web.AppKey("interactions", dict)  # id -> {"contents", "interaction", "events", "input"}
# continuation_token -> the hop it continues: {"owner": the id of the hop that issued it, "next": the hop
# it asks for, "plan": the whole answer's hops and what they were asked with}
PENDING = web.AppKey("interaction_continuations", dict)
FIELDS = frozenset({"model", "agent", "agent_config", "input", "tools", "system_instruction", "generation_config",
                    "previous_interaction_id", "store", "stream", "background", "response_format",
                    "response_mime_type", "response_modalities", "safety_settings", "labels", "service_tier",
                    "cached_content", "continuation_token", "environment", "webhook_config"})
CONTENT_TYPES = {"text", "image", "audio", "video", "document"}
LEVELS = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH", "xhigh": "XHIGH"}


def _unknown(name: str) -> GeminiRejection:
    return GeminiRejection(400, f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.')


def _sdk_check(body: dict[str, Any]) -> None:
    """google-genai's own model of a create request, when the SDK is installed (tests, CI)."""
    try:
        from google.genai.interactions import CreateModelInteraction
    except ImportError:  # the mock runs without the SDK too
        return
    from pydantic import ValidationError
    try:
        CreateModelInteraction.model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise GeminiRejection(400, f"Invalid value at '{where}': {err['msg']}") from None


def _steps(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, str):
        return [{"type": "user_input", "content": [{"type": "text", "text": raw}]}]
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise GeminiRejection(400, "input is required.")
    if all(isinstance(x, dict) and x.get("type") in CONTENT_TYPES for x in raw):
        return [{"type": "user_input", "content": raw}]
    return raw


def _part(content: dict[str, Any], where: str) -> dict[str, Any]:
    kind = content.get("type")
    if kind == "text":
        return {"text": content.get("text", "")}
    if kind in CONTENT_TYPES and (content.get("data") or content.get("uri")):
        if not content.get("mime_type"):
            raise GeminiRejection(400, f"{where}.mime_type is required.")
        if content.get("data"):
            return {"inlineData": {"mimeType": content["mime_type"], "data": content["data"]}}
        return {"fileData": {"mimeType": content["mime_type"], "fileUri": content["uri"]}}
    raise GeminiRejection(400, f"Invalid value at '{where}': unsupported content.")


def _turn(contents: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    if not contents or contents[-1]["role"] != role:
        contents.append({"role": role, "parts": []})
    return contents[-1]["parts"]


def _contents(steps: list[dict[str, Any]], history: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """Steps -> Gemini contents after `history`; a result must answer a call of the conversation."""
    contents = copy.deepcopy(history)
    calls = {p["functionCall"]["id"]: p["functionCall"]["name"] for c in contents for p in c["parts"]
             if "functionCall" in p and p["functionCall"].get("id")}
    signature = None
    for i, step in enumerate(steps):
        where, kind = f"input[{i}]", step.get("type")
        if kind == "user_input":
            _turn(contents, "user").extend(_part(c, f"{where}.content[{j}]")
                                          for j, c in enumerate(step.get("content") or []))
        elif kind == "thought":
            signature = step.get("signature") or signature
        elif kind == "model_output":
            parts = [_part(c, f"{where}.content[{j}]") for j, c in enumerate(step.get("content") or [])]
            if parts and signature:
                parts[-1]["thoughtSignature"], signature = signature, None
            _turn(contents, "model").extend(parts)
        elif kind == "function_call":
            for key in ("id", "name", "arguments"):
                if key not in step:
                    raise GeminiRejection(400, f"{where}.{key} is required.")
            part: dict[str, Any] = {"functionCall": {"id": step["id"], "name": step["name"],
                                                     "args": step["arguments"]}}
            if signature:
                part["thoughtSignature"], signature = signature, None
            _turn(contents, "model").append(part)
            calls[step["id"]] = step["name"]
        elif kind == "function_result":
            cid = step.get("call_id")
            if cid not in calls:
                raise GeminiRejection(400, f"Invalid value at '{where}.call_id': no function call with id "
                                           f"'{cid}' in this interaction's history.")
            result = step.get("result")
            response = result if isinstance(result, dict) else {"result": result if isinstance(result, str) else
                                                                json.dumps(result)}
            if step.get("is_error"):
                response = {"error": response}
            _turn(contents, "user").append({"functionResponse": {"id": cid, "name": calls[cid],
                                                                 "response": response}})
        else:
            raise GeminiRejection(400, f"Invalid value at '{where}.type': {kind!r} cannot be used as input.")
    if signature and contents and contents[-1]["role"] == "model" and contents[-1]["parts"]:
        contents[-1]["parts"][-1].setdefault("thoughtSignature", signature)
    if not is_gemini3(model):
        for c in contents:  # only Gemini 3 knows thought signatures; older models ignore them
            for p in c["parts"]:
                p.pop("thoughtSignature", None)
    return contents


def _tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    decls, out = [], []
    for i, tool in enumerate(tools or []):
        kind = tool.get("type")
        if kind == "function":
            if not tool.get("name"):
                raise GeminiRejection(400, f"tools[{i}].name is required.")
            decl = {"name": tool["name"], "description": tool.get("description", "")}
            if tool.get("parameters") is not None:
                decl["parametersJsonSchema"] = tool["parameters"]
            decls.append(decl)
        elif kind == "google_search":
            out.append({"googleSearch": {}})
        else:
            raise GeminiRejection(400, f"Invalid value at 'tools[{i}].type': {kind!r} is not supported by the mock.")
    return ([{"functionDeclarations": decls}] if decls else []) + out


def _tool_config(choice: Any) -> dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        return {"functionCallingConfig": {"mode": choice.upper()}}
    allowed = choice.get("allowed_tools") or {}
    return {"functionCallingConfig": {"mode": str(allowed.get("mode", "auto")).upper(),
                                      "allowedFunctionNames": allowed.get("tools") or []}}


def gemini_body(req: dict[str, Any], history: list[dict[str, Any]], model: str) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": _contents(_steps(req.get("input")), history, model)}
    if req.get("system_instruction"):
        body["systemInstruction"] = {"parts": [{"text": req["system_instruction"]}]}
    tools = _tools(req.get("tools"))
    if tools:
        body["tools"] = tools
    gc = req.get("generation_config") or {}
    config = _tool_config(gc.get("tool_choice"))
    if config:
        body["toolConfig"] = config
    gen: dict[str, Any] = {}
    for ours, theirs in (("temperature", "temperature"), ("top_p", "topP"), ("max_output_tokens", "maxOutputTokens"),
                         ("stop_sequences", "stopSequences"), ("seed", "seed")):
        if gc.get(ours) is not None:
            gen[theirs] = gc[ours]
    if gc.get("thinking_level") or gc.get("thinking_summaries") == "auto":
        thinking: dict[str, Any] = {"includeThoughts": gc.get("thinking_summaries") == "auto"}
        if gc.get("thinking_level"):
            thinking["thinkingLevel"] = LEVELS[gc["thinking_level"]]
        gen["thinkingConfig"] = thinking
    if gen:
        body["generationConfig"] = gen
    return body


def _output_steps(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for p in parts:
        if p.get("thought"):
            steps.append({"type": "thought", "summary": [{"type": "text", "text": p.get("text", "")}],
                          **({"signature": p["thoughtSignature"]} if p.get("thoughtSignature") else {})})
            continue
        if p.get("thoughtSignature"):
            steps.append({"type": "thought", "signature": p["thoughtSignature"]})
        if "functionCall" in p:
            fc = p["functionCall"]
            steps.append({"type": "function_call", "id": fc.get("id") or secrets.token_hex(4),
                          "name": fc["name"], "arguments": fc.get("args") or {}})
        elif p.get("text"):
            steps.append({"type": "model_output", "content": [{"type": "text", "text": p["text"]}]})
    return steps


def _events(interaction: dict[str, Any], chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream of an answer: steps as the chunks bring them (text in several deltas)."""
    head = {k: interaction[k] for k in ("id", "model", "object", "created")}
    events: list[dict[str, Any]] = [{"event_type": "interaction.created",
                                     "interaction": {**head, "status": "in_progress"}}]
    index = -1
    open_kind = None
    for chunk in chunks:
        for p in ((chunk.get("candidates") or [{}])[0].get("content") or {}).get("parts") or []:
            for step in _output_steps([p]):
                if step["type"] == "model_output" and open_kind == "model_output":
                    events.append({"event_type": "step.delta", "index": index,
                                   "delta": {"type": "text", "text": step["content"][0]["text"]}})
                    continue
                if open_kind is not None:
                    events.append({"event_type": "step.stop", "index": index})
                index += 1
                open_kind = step["type"]
                if step["type"] == "function_call":
                    events.append({"event_type": "step.start", "index": index,
                                   "step": {**step, "arguments": {}}})
                    events.append({"event_type": "step.delta", "index": index,
                                   "delta": {"type": "arguments_delta", "arguments": json.dumps(step["arguments"])}})
                elif step["type"] == "thought":
                    events.append({"event_type": "step.start", "index": index, "step": {"type": "thought"}})
                    for s in step.get("summary") or []:
                        events.append({"event_type": "step.delta", "index": index,
                                       "delta": {"type": "thought_summary", "content": s}})
                    if step.get("signature"):
                        events.append({"event_type": "step.delta", "index": index,
                                       "delta": {"type": "thought_signature", "signature": step["signature"]}})
                else:
                    events.append({"event_type": "step.start", "index": index, "step": {"type": "model_output"}})
                    events.append({"event_type": "step.delta", "index": index,
                                   "delta": {"type": "text", "text": step["content"][0]["text"]}})
    if open_kind is not None:
        events.append({"event_type": "step.stop", "index": index})
    done = {**head, "status": interaction["status"], "usage": interaction.get("usage")}
    if interaction.get("continuation_token"):
        done["continuation_token"] = interaction["continuation_token"]
    events.append({"event_type": "interaction.completed", "interaction": done})
    for n, e in enumerate(events):
        e["event_id"] = f"evt_{n}"
    return events


def _usage(meta: dict[str, Any] | None) -> dict[str, Any]:
    meta = meta or {}
    return {"total_input_tokens": meta.get("promptTokenCount", 0),
            "total_output_tokens": meta.get("candidatesTokenCount", 0),
            "total_thought_tokens": meta.get("thoughtsTokenCount", 0), "total_tokens": meta.get("totalTokenCount", 0)}


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['event_type']}\nid: {e['event_id']}\ndata: {json.dumps(e)}\n\n".encode()
                    for e in events)


async def create(request: web.Request, key_problem: Any, remember: Any, error: Any) -> web.StreamResponse:
    problem = key_problem(request)
    if problem:
        return error(problem)
    try:
        req = json.loads(await request.read())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return error(GeminiRejection(400, "Invalid JSON payload received. Unexpected token."))
    try:
        if not isinstance(req, dict):
            raise GeminiRejection(400, "Invalid JSON payload received. Expected an object.")
        for name in req:
            if name not in FIELDS:
                raise _unknown(name)
        if req.get("agent"):
            raise GeminiRejection(400, "The mock serves models, not agents.")
        model = req.get("model")
        if not isinstance(model, str) or not model:
            raise GeminiRejection(400, "model is required.")
        _sdk_check(req)
        if req.get("continuation_token") is not None:
            plan, k = _continued(request.app, req)
            remember(request, model, "interactions", req, gemini=plan["body"])
            return await _send(request, req, *_hop(request.app, plan, k, req["continuation_token"]), "STOP", None)
        store = request.app[STORE]
        history: list[dict[str, Any]] = []
        prev = req.get("previous_interaction_id")
        if prev is not None:
            if prev not in store:
                raise GeminiRejection(404, f"Interaction {prev} not found.", "NOT_FOUND")
            history = store[prev]["contents"]
        body = gemini_body(req, history, model)
        validate_request(body, model)
    except GeminiRejection as e:
        return error(e)
    remember(request, model, "interactions", req, gemini=body)
    reply = respond(body, model)
    if reply.error:
        status, name, message = reply.error
        return error(GeminiRejection(status, message, name))
    merged = merge_chunks(reply.chunks)
    cand = (merged.get("candidates") or [{}])[0]
    parts = (cand.get("content") or {}).get("parts") or []
    steps = _output_steps(parts)
    finish = cand.get("finishReason")
    status = ("requires_action" if any(s["type"] == "function_call" for s in steps) else
              "incomplete" if finish == "MAX_TOKENS" else "completed" if finish == "STOP" else "failed")
    hops = long_answers.split(body, parts)
    if len(hops) > 1:
        plan = {"hops": hops, "model": model, "body": body, "status": status, "usage": merged.get("usageMetadata"),
                "store": req.get("store", True), "input": req["input"], "mode": long_answers.mode(body)}
        return await _send(request, req, *_hop(request.app, plan, 0, None), finish, None)
    interaction = {"id": f"v1_mock{secrets.token_hex(12)}", "object": "interaction", "model": model,
                   "status": status, "created": "2026-11-23T00:00:00Z", "steps": steps,
                   "usage": _usage(merged.get("usageMetadata"))}
    events = _events(interaction, reply.chunks)
    if req.get("store", True):
        store[interaction["id"]] = {"contents": body["contents"] + [{"role": "model", "parts": parts}],
                                    "interaction": interaction, "events": events, "input": _steps(req["input"])}
    return await _send(request, req, interaction, events, finish, reply.stream_error_after)


async def _send(request: web.Request, req: dict[str, Any], interaction: dict[str, Any], events: list[dict[str, Any]],
                finish: str | None, cut: int | None) -> web.StreamResponse:
    """The interaction as JSON, or its events as SSE (`cut`: an error event after that many; no finish
    reason: the stream ends before interaction.completed)."""
    if not req.get("stream"):
        return web.json_response(interaction)
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)
    for n, event in enumerate(events):
        if cut is not None and n == cut + 1:
            await resp.write(_sse([{"event_type": "error", "event_id": f"evt_{n}",
                                    "error": {"code": "INTERNAL", "message": "An internal error has occurred."}}]))
            break
        if finish is None and event["event_type"] == "interaction.completed":
            break  # `cut`: the answer ends early, as when a load balancer closes the body
        await resp.write(_sse([event]))
    else:
        if finish is not None:
            await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


def _hop(app: web.Application, plan: dict[str, Any], k: int, token: str | None
         ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Hop `k` of a planned answer: an interaction of its own (stored when the answer is), ending
    requires_continuation with a new token unless it is the last; a stuck plan's later hops hand
    `token` back with nothing new."""
    hops = plan["hops"]
    parts, last = long_answers.hop_parts(plan, k)
    inputs, output, thoughts = long_answers.hop_usage(plan["usage"], k, len(hops))
    usage = {"total_input_tokens": inputs, "total_output_tokens": output, "total_thought_tokens": thoughts,
             "total_tokens": inputs + output + thoughts}
    interaction = {"id": f"v1_mock{secrets.token_hex(12)}", "object": "interaction", "model": plan["model"],
                   "status": plan["status"] if last else "requires_continuation", "created": "2026-11-23T00:00:00Z",
                   "steps": _output_steps(parts), "usage": usage}
    if not last:
        interaction["continuation_token"] = long_answers.next_token(plan, k, token)
        app[PENDING].setdefault(interaction["continuation_token"], {"owner": interaction["id"], "next": k + 1,
                                                                    "plan": plan})
        app[PENDING][interaction["continuation_token"]]["owner"] = interaction["id"]  # (a token handed back)
    events = _events(interaction, [{"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}])
    if plan["store"]:
        so_far = long_answers.produced(plan, k)
        app[STORE][interaction["id"]] = {"contents": plan["body"]["contents"] + [{"role": "model", "parts": so_far}],
                                         "interaction": interaction, "events": events,
                                         "input": _steps(plan["input"]) if k == 0 else []}
    return interaction, events


def _continued(app: web.Application, req: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The plan and hop a continuation asks for, checked as the server checks it (the mock's words)."""
    pending = app[PENDING].get(req["continuation_token"])
    if pending is None:
        raise GeminiRejection(400, "Invalid value at 'continuation_token': unknown or expired token.")
    plan = pending["plan"]
    if req["model"] != plan["model"]:
        raise GeminiRejection(400, f"Invalid value at 'continuation_token': it continues {plan['model']}.")
    if plan["store"]:
        if req.get("previous_interaction_id") != pending["owner"]:
            raise GeminiRejection(400, "Invalid value at 'continuation_token': it was issued by interaction "
                                       f"{pending['owner']}, which previous_interaction_id must name.")
        if req.get("input") is not None:
            raise GeminiRejection(400, "Invalid value at 'input': a continuation of a stored interaction takes no "
                                       "input (its context is the interaction that issued the token).")
    elif req.get("input") != plan["input"]:
        raise GeminiRejection(400, "Invalid value at 'input': a continuation without store resends the original "
                                   "input.")
    return plan, pending["next"]


def _found(request: web.Request) -> dict[str, Any] | GeminiRejection:
    iid = request.match_info["interaction_id"]
    found = request.app[STORE].get(iid)
    return found if found is not None else GeminiRejection(404, f"Interaction {iid} not found.", "NOT_FOUND")


async def get(request: web.Request, key_problem: Any, error: Any) -> web.StreamResponse:
    found = key_problem(request) or _found(request)
    if isinstance(found, GeminiRejection):
        return error(found)
    if request.query.get("stream") != "true":
        interaction = dict(found["interaction"])
        interaction["steps"] = [*found["input"], *interaction["steps"]]
        return web.json_response(interaction)
    events = found["events"]
    last = request.query.get("last_event_id")
    if last is not None:
        at = next((n for n, e in enumerate(events) if e["event_id"] == last), None)
        if at is None:
            return error(GeminiRejection(400, f"Invalid last_event_id: {last}."))
        events = events[at + 1:]
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(_sse(events) + b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


async def delete(request: web.Request, key_problem: Any, error: Any) -> web.Response:
    found = key_problem(request) or _found(request)
    if isinstance(found, GeminiRejection):
        return error(found)
    del request.app[STORE][request.match_info["interaction_id"]]
    return web.json_response({})


async def cancel(request: web.Request, key_problem: Any, error: Any) -> web.Response:
    found = key_problem(request) or _found(request)
    if isinstance(found, GeminiRejection):
        return error(found)
    return error(GeminiRejection(400, "Only background interactions that are in progress can be cancelled."))
