"""Gemini's Interactions API on the front-end: `POST /{version}/interactions`, `GET`/`DELETE
/{version}/interactions/{id}` and `POST .../{id}:cancel` (google-genai's `client.interactions`).

Requests become Responses input items (to_gemini/interaction_input.py), so the Responses core does
the history work; the answer is translated by from_gemini/to_interactions.py. Interactions are kept
in the session store like Responses (only what each turn added, with a pointer to the one before),
so `previous_interaction_id` chains cost linear memory. `background: true` runs the turn in a task
of this process; GET reads its progress from the store, and `cancel` and DELETE stop it from any
instance sharing the store (background.py).
"""

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from proxy import ids
from proxy.errors import ProxyError
from proxy.interactions.input import (
    input_steps,
    response_format,
    sign_texts,
    steps_to_items,
    tool_choice,
    tools_to_responses,
)
from proxy.interactions.stream_writer import InteractionsWriter, interaction_events
from proxy.interactions.translator import InteractionsTranslator, replay
from proxy.server import background, object_owners
from proxy.server.answer_turn import ReadyTurn, answer_turn, whole_answer
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import read_json, validate
from proxy.server.json_answer import json_answer
from proxy.server.translator_writer import DONE
from proxy.signatures.call_record import CallRecord
from proxy.store.base import StoredResponse, conversation_at
from proxy.to_gemini.conversation import Conversation
from proxy.to_gemini.input_to_contents import input_to_contents
from proxy.to_gemini.reasoning import thinking_config
from proxy.to_gemini.request_body import assemble_request
from proxy.tools.hosted_tools import warning_headers
from proxy.wire.interactions import CreateInteraction

log = logging.getLogger(__name__)
OBJECT = "interaction"
# Create fields this proxy cannot honour: each is a 400 naming it, never ignored.
UNSERVED = ("agent", "agent_config", "environment", "webhook_config", "cached_content", "continuation_token",
            "safety_settings")
TASKS = web.AppKey("interaction_tasks", dict)  # interaction id -> its background task (this process)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _not_found(iid: str) -> ProxyError:
    return ProxyError(f"Interaction '{iid}' not found.", status=404, param="id", code="not_found")


def _refuse_unserved(req: CreateInteraction) -> None:
    for name in UNSERVED:
        if getattr(req, name) is not None:
            raise ProxyError(f"Invalid value for '{name}': this proxy serves model interactions only and cannot "
                             f"honour '{name}'.", param=name, code="unsupported_parameter")
    if req.response_modalities not in (None, ["text"]):
        raise ProxyError("Invalid value for 'response_modalities': this proxy produces text only.",
                         param="response_modalities", code="unsupported_value")
    if req.background and (req.stream or req.store is False):
        raise ProxyError("A background interaction is stored and polled: it cannot be streamed or have store "
                         "false.", param="background", code="invalid_value")


class _Turn:
    """One create request, prepared: the Gemini body, the translator, and how to keep the turn."""

    def __init__(self, ctx: Context, session: str, req: CreateInteraction, steps: list[dict[str, Any]],
                 prior: Conversation | None, conv: Conversation, body: dict[str, Any], model: str,
                 translator: InteractionsTranslator, warnings: list[str]) -> None:
        self.ctx, self.session, self.req, self.steps, self.warnings = ctx, session, req, steps, warnings
        self.prior, self.conv, self.body, self.model, self.t = prior, conv, body, model, translator

    async def remember(self, ok: bool) -> None:
        """Call records always (stateless clients resend their history); the turn when stored."""
        if not ok:
            return
        await self.ctx.keep_calls(self.session, self.t.calls, "interactions", model=self.model)
        if self.req.store is False:
            return
        added, system = self.conv.added_since(self.prior, self.t.model_content())
        self.t.interaction["updated"] = _now()
        await self.ctx.store.put_response(self.session, StoredResponse(
            id=self.t.interaction["id"], response={"interaction": self.t.interaction, "input": self.steps},
            contents=added, system=system, pending=[c.call_id for c in self.t.calls],
            parent=self.req.previous_interaction_id, model=self.model))

    def whole(self, answers: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
        self.t.start()
        for answer in answers:
            self.t.feed(answer)
        events = self.t.finish()
        if self.t.interaction["status"] == "failed":
            error = events[-1]["error"]
            raise ProxyError(error["message"], status=502, type="server_error")
        return self.t.interaction, True

    def ready(self, key: str | None, stream: bool) -> ReadyTurn:
        """For the one turn skeleton (no `tools`: the Interactions API has no hosted tool search)."""
        return ReadyTurn(model=self.model, body=self.body, key=key, stream=stream,
                         writer=lambda: InteractionsWriter(self.t), whole=self.whole, remember=self.remember,
                         headers=warning_headers(self.warnings))


async def _prepare(request: web.Request, req: CreateInteraction) -> _Turn:
    ctx: Context = request.app[CONTEXT]
    session = session_of(request)
    if not req.model:
        raise ProxyError("Missing required parameter: 'model'.", param="model", code="missing_required_parameter")
    _refuse_unserved(req)
    steps = input_steps(req.input)
    if not steps:
        raise ProxyError("Missing required parameter: 'input'.", param="input", code="missing_required_parameter")
    converted = steps_to_items(steps)
    prior = None
    if req.previous_interaction_id:
        if await ctx.store.get_response(session, req.previous_interaction_id) is None:
            raise ProxyError(f"Previous interaction '{req.previous_interaction_id}' not found.", status=404,
                             param="previous_interaction_id", code="not_found")
        prior = await conversation_at(ctx.store, session, req.previous_interaction_id, ctx.gemini_model(req.model))
    model, tools, calls = await ctx.prepare(request, session, req.model, tools_to_responses(req.tools),
                                            converted.items)
    for cid, signature in converted.call_signatures.items():
        if cid not in calls:  # history this process never saw: the client's thought step signs its call
            name = converted.call_names[cid]
            calls[cid] = CallRecord(cid, name, tools.names.to_gemini(name), cid, signature)
    conv = input_to_contents(converted.items, prior=prior, calls=calls, names=tools.names, model=model,
                             result_parts=ctx.rules.result_parts(model))
    added = conv.contents[len(prior.contents) if prior else 0:]
    sign_texts(added, converted.text_signatures)
    if req.store is not False:
        ctx.store.refuse_unkeepable([added, steps], "This interaction's input", "input")
    gc = req.generation_config
    summaries = "auto" if gc and gc.thinking_summaries == "auto" else None
    generation = {
        "temperature": gc.temperature if gc else None, "topP": gc.top_p if gc else None,
        "seed": gc.seed if gc else None, "stopSequences": gc.stop_sequences if gc else None,
        "maxOutputTokens": gc.max_output_tokens if gc else None,
        "thinkingConfig": thinking_config(model, gc.thinking_level if gc else None, summaries),
        **response_format(req.response_format, req.response_mime_type)}
    declared = [t["name"] for t in tools.echo if t.get("name")]
    body = assemble_request(conv, tools, tool_choice(gc.tool_choice if gc else None, declared),
                            instructions=req.system_instruction, generation=generation)
    await object_owners.refuse_foreign(request, body)
    now = _now()
    interaction = {"id": ids.interaction_id(), "object": OBJECT, "model": req.model, "created": now,
                   "updated": now, "role": "model"}
    if req.previous_interaction_id:
        interaction["previous_interaction_id"] = req.previous_interaction_id
    return _Turn(ctx, session, req, steps, prior, conv, body, model, InteractionsTranslator(interaction, tools),
                 tools.warnings)


async def create_interaction(request: web.Request) -> web.StreamResponse:
    req = validate(CreateInteraction, await read_json(request))
    turn = await _prepare(request, req)
    await request.app[CONTEXT].admit(request)
    ready = turn.ready(api_key_of(request), bool(req.stream))
    if req.background:
        return json_answer(await _start_background(request, turn, ready), headers=ready.headers)
    return await answer_turn(request, ready)


async def _start_background(request: web.Request, turn: _Turn, ready: ReadyTurn) -> dict[str, Any]:
    """Store the interaction as in progress, answer at once, and let a task finish it (background.py
    keeps its lease and hears stop requests from other instances)."""
    iid = turn.t.interaction["id"]
    turn.t.interaction["status"] = "in_progress"
    placeholder = {"interaction": dict(turn.t.interaction), "input": turn.steps}
    lease = turn.ctx.limits.background_lease
    release = background.reserve(request)  # over the client's cap: a 429, nothing stored
    try:
        await background.claim(turn.ctx.store, turn.session, iid, lease)
        await turn.ctx.store.put_response(turn.session, StoredResponse(id=iid, response=placeholder, contents=[],
                                                                       parent=turn.req.previous_interaction_id))
    except BaseException:
        release()
        raise
    tasks = request.app[TASKS]

    async def run() -> None:
        try:
            await whole_answer(request, ready)
        except asyncio.CancelledError:
            if background.shut_down():  # not a client's cancel: the process stops
                background.failed(background.shutdown_error())
                await _settle(turn, "failed", background.SHUT_DOWN)
            else:
                await _settle(turn, "cancelled", None)
            raise
        except ProxyError as e:
            background.failed(e)
            await _settle(turn, "failed", e.message)
        except Exception as e:
            log.exception("background interaction %s failed", iid)
            error = ProxyError("The proxy failed while running this interaction; see its log.", status=500)
            error.__cause__ = e
            background.failed(error)
            await _settle(turn, "failed", error.message)
        finally:
            tasks.pop(iid, None)

    tasks[iid] = background.launch(request, turn.ctx.store, turn.session, iid, run(), lease, turn.ctx.recorder,
                                   release=release)
    return turn.t.interaction


def _ended(interaction: dict[str, Any], status: str, error: tuple[str, str] | None) -> dict[str, Any]:
    """An interaction as it ends without an answer: its status, and the error (code, message) if any."""
    ended = {**interaction, "status": status, "updated": _now()}
    if error:
        ended["errors"] = [{"code": error[0], "message": error[1]}]
    return ended


async def _settle(turn: _Turn, status: str, message: str | None) -> None:
    interaction = _ended({**turn.t.interaction, "steps": []}, status, ("INTERNAL", message) if message else None)
    await turn.ctx.store.put_response(turn.session, StoredResponse(
        id=interaction["id"], response={"interaction": interaction, "input": turn.steps}, contents=[],
        parent=turn.req.previous_interaction_id))


ABANDONED = ("The instance running this background interaction stopped before it finished (its lease ran out); "
             "create it again.")


async def _settle_abandoned(ctx: Context, session: str, stored: StoredResponse, status: str) -> StoredResponse:
    """End an interaction nobody runs any more: `failed` when found so, `cancelled` when asked to."""
    interaction = _ended(stored.response["interaction"], status,
                         ("UNAVAILABLE", ABANDONED) if status == "failed" else None)
    settled = StoredResponse(id=stored.id, response={**stored.response, "interaction": interaction},
                             contents=stored.contents, parent=stored.parent)
    await ctx.store.put_response(session, settled)
    return settled


async def _stored(request: web.Request) -> tuple[str, StoredResponse]:
    """The stored interaction; one left in progress by an instance that is gone is failed first."""
    ctx: Context = request.app[CONTEXT]
    iid = request.match_info["interaction_id"]
    session = session_of(request)
    stored = await ctx.store.get_response(session, iid)
    if stored is None or "interaction" not in stored.response:
        raise _not_found(iid)
    if (stored.response["interaction"].get("status") == "in_progress" and iid not in request.app[TASKS]
            and not await background.lease_alive(ctx.store, session, iid)):
        stored = await _settle_abandoned(ctx, session, stored, "failed")
    return iid, stored


def _timeline(stored: StoredResponse, include_input: bool) -> dict[str, Any]:
    """GET's view: the whole timeline, the client's input steps first (as Google's GET shows it)."""
    interaction = dict(stored.response["interaction"])
    steps = stored.response.get("input") or []
    interaction["steps"] = [*steps, *interaction.get("steps", [])]
    if include_input:
        interaction["input"] = steps
    return interaction


async def get_interaction(request: web.Request) -> web.StreamResponse:
    _, stored = await _stored(request)
    query = request.query
    if query.get("stream") != "true":
        if "last_event_id" in query:
            raise ProxyError("'last_event_id' can only be used with stream=true.", param="last_event_id")
        return web.json_response(_timeline(stored, query.get("include_input") == "true"))
    interaction = stored.response["interaction"]
    if interaction["status"] == "in_progress":
        raise ProxyError("This interaction is still running in the background; poll it without stream until it "
                         "completes.", status=409, param="stream", code="in_progress")
    events = replay(interaction, interaction.get("steps", []), query.get("last_event_id"))
    resp = web.StreamResponse(headers={"content-type": InteractionsWriter.content_type, "cache-control": "no-cache"})
    await resp.prepare(request)
    await resp.write(interaction_events(events) + DONE)
    await resp.write_eof()
    return resp


async def delete_interaction(request: web.Request) -> web.Response:
    """The stop request goes first: the instance running it (this one or another) stops, and its
    end, stored meanwhile, is removed again (background.py)."""
    iid, stored = await _stored(request)
    running = stored.response["interaction"]["status"] == "in_progress"
    await background.delete(request.app[CONTEXT].store, session_of(request), iid, running, request.app[TASKS])
    return web.json_response({})


async def cancel_interaction(request: web.Request) -> web.Response:
    iid, stored = await _stored(request)
    ctx: Context = request.app[CONTEXT]
    session = session_of(request)
    if stored.response["interaction"]["status"] != "in_progress":
        return web.json_response(_timeline(stored, False))  # already ended: cancelling it changes nothing
    task = request.app[TASKS].get(iid)
    if task is not None:
        task.cancel()
        await asyncio.wait([task])  # its cancelled state is stored when it ends
        _, stored = await _stored(request)
    else:
        stored = await _cancel_elsewhere(ctx, session, iid)
    return web.json_response(_timeline(stored, False))


async def _cancel_elsewhere(ctx: Context, session: str, iid: str) -> StoredResponse:
    """Another instance runs it: ask it to stop, and wait until it has stored the end (it looks on
    every lease renewal). Should it go away meanwhile, nothing runs any more: cancelled."""
    async def ended() -> StoredResponse | None:
        now = await ctx.store.get_response(session, iid)
        if now is None:
            raise _not_found(iid)
        if now.response["interaction"]["status"] != "in_progress":
            return now
        if not await background.lease_alive(ctx.store, session, iid):
            return await _settle_abandoned(ctx, session, now, "cancelled")
        return None

    found = await background.cancel_elsewhere(ctx.store, session, iid, ctx.limits.background_lease, ended)
    if found is not None:
        return found
    raise ProxyError(f"Interaction '{iid}' runs on another instance, which has not confirmed the cancel yet; it "
                     "will stop at its next lease renewal. Poll it.", status=503, param="id", code="cancel_pending",
                     headers={"Retry-After": "1"})


def add_routes(app: web.Application) -> None:
    app[TASKS] = {}
    version = "{version:v1|v1beta|v1alpha}"
    app.router.add_post(f"/{version}/interactions", create_interaction)
    app.router.add_get(f"/{version}/interactions/{{interaction_id}}", get_interaction)
    app.router.add_delete(f"/{version}/interactions/{{interaction_id}}", delete_interaction)
    app.router.add_post(f"/{version}/interactions/{{interaction_id}}/cancel", cancel_interaction)
    # (background runs end with the requests: app.py's end_requests)
