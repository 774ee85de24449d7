"""One response in the making, whatever carries it (HTTP+SSE in routes.py, a WebSocket in
websocket.py): the request checked, the history found (the store, or a WebSocket's own cache of
its last response), the Gemini body built, and the turn stored once the answer is whole."""

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from proxy import fast_json
from proxy.errors import ProxyError
from proxy.responses.compaction import (
    compact,
    compaction_threshold,
    expand_compacted,
    items_at,
    open_compactions,
    refuse_unopened,
    rendered_tokens,
)
from proxy.responses.response_object import response_skeleton
from proxy.responses.stream_writer import ResponsesWriter
from proxy.responses.translator import ResponsesTranslator
from proxy.server import object_owners
from proxy.server.answer_turn import ReadyTurn, open_answer, prepared, whole_answer
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import kept_scope, validate
from proxy.signatures.model_bound import without_signatures
from proxy.store.base import StoredResponse, TurnInput, conversation_at
from proxy.to_gemini.conversation import Conversation
from proxy.to_gemini.input_to_contents import input_to_contents, parse_input
from proxy.to_gemini.request_body import build_gemini_request
from proxy.tools.deferral import loaded_in_contents
from proxy.tools.hosted_tools import warning_headers
from proxy.tools.prepare_tools import PreparedTools
from proxy.wire.resent_items import ResentItems
from proxy.wire.responses import INCLUDE_VALUES, ResponsesRequest

ENCRYPTED_REASONING = "reasoning.encrypted_content"


@dataclass
class Recent:
    """A WebSocket connection's cache: its most recent response's whole history, so that the next
    `response.create` continues it by `previous_response_id` even with `store: false`."""

    id: str | None = None
    history: Conversation | None = None
    model: str | None = None  # the Gemini model the history was sent to and answered by

    def get(self, response_id: str, model: str | None = None) -> Conversation | None:
        """The history, as `model` may be sent it: without thought signatures when another model
        made it (model_bound.py)."""
        if response_id != self.id or self.history is None:
            return None
        if model is None or self.model is None or model == self.model:
            return self.history
        h = self.history
        return Conversation(without_signatures(h.contents), h.system, h.pending)

    def keep(self, response_id: str, history: Conversation, model: str | None = None) -> None:
        self.id, self.history, self.model = response_id, history, model

    def evict(self, response_id: str | None) -> None:
        if response_id is not None and response_id == self.id:
            self.id = self.history = self.model = None


@dataclass
class Turn:
    request: web.Request
    ctx: Context
    session: str
    req: ResponsesRequest
    input: list[dict[str, Any]]     # the input items as sent, for GET .../input_items (as_items)
    prior: Conversation | None
    conv: Conversation
    model: str
    tools: PreparedTools
    body: dict[str, Any]
    translator: ResponsesTranslator
    key: str | None
    headers: dict[str, str] = field(default_factory=dict)
    recent: Recent | None = None
    known: TurnInput | None = None  # its stored input, serialized before Gemini is asked
    # The whole answer's JSON once remember() stored it: the client is sent the same bytes (one
    # serialization of the response, with its echoed tools, for both).
    answer_json: bytes | None = None
    # The stored turn it continues: previous_response_id, unless compaction on create made this turn
    # the start of a new chain (its stored input is the compacted conversation).
    parent: str | None = None
    # False when the input ended with Codex's compaction_trigger: the answer is the compaction alone.
    generates: bool = True

    @property
    def response(self) -> dict[str, Any]:
        return self.translator.response

    def ready(self, stream: bool) -> ReadyTurn:
        """This turn for the one turn skeleton (server/answer_turn.py); the proxy's tool searches run
        within the answer (search_hops.py)."""
        return ReadyTurn(model=self.model, body=self.body, key=self.key, stream=stream,
                         writer=lambda: ResponsesWriter(self.translator), whole=self._whole, remember=self.remember,
                         tools=self.tools, headers=self.headers, answer_text=lambda: self.answer_json)

    def _whole(self, answers: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
        """A failed response is an answer of its own (status failed, its error), kept by nobody."""
        self.translator.start()
        for answer in answers:
            self.translator.feed(answer)
        self.translator.finish()
        return self.response, self.response["status"] != "failed"

    async def open_stream(self) -> AsyncIterator[dict[str, Any]]:
        """The answer's stream, for a transport of its own (the WebSocket)."""
        ready = self.ready(True)
        first, _ = await prepared(self.request, ready)
        return await open_answer(self.request, ready, first)

    async def run_whole(self) -> dict[str, Any]:
        """The whole answer (no stream), stored before it is returned."""
        return await whole_answer(self.request, self.ready(False))

    def without_generation(self) -> list[dict[str, Any]]:
        """`generate: false` (Codex warms a WebSocket up with it): the response is created and
        completed with no output and Gemini is not asked; its input becomes history to continue.
        So is a compaction_trigger's answer, whose only output is the compaction item."""
        return self.translator.complete_empty()

    async def remember(self, ok: bool) -> None:
        """Keep call records always (stateless clients resend history) and the turn when store allows.
        Only what this turn added is stored, with a pointer to the turn before (linear memory)."""
        if not ok:
            if self.recent is not None:
                self.recent.evict(self.req.previous_response_id)  # a failed continuation is not retried from it
            return
        t = self.translator
        await self.ctx.keep_calls(self.session, t.calls, "responses", t.hosted, self.model)
        turn = t.model_content()
        if self.recent is not None:
            self.recent.keep(t.response["id"], Conversation(self.conv.contents + turn,
                                                           self.conv.system, [c.call_id for c in t.calls]),
                             self.model)
        if self.req.store is False:
            return
        added, system = self.conv.added_since(self.prior, turn)
        self.answer_json = fast_json.dumps(t.response)
        await self.ctx.store.put_response(self.session, StoredResponse(
            id=t.response["id"], response=t.response, contents=added, system=system,
            pending=[c.call_id for c in t.calls], parent=self.parent, input=self.input,
            model=self.model),
            chained=True, known=self.known, response_json=self.answer_json)


def _check_options(req: ResponsesRequest) -> None:
    for i, value in enumerate(req.include or []):
        if value not in INCLUDE_VALUES:
            raise ProxyError(f"Invalid value for 'include[{i}]': '{value}'. Supported values are: "
                             f"{', '.join(sorted(INCLUDE_VALUES))}.", param=f"include[{i}]", code="invalid_value")
        if value == "message.output_text.logprobs":
            raise ProxyError("Gemini's answers through this proxy carry no log probabilities: "
                             "'message.output_text.logprobs' cannot be included.", param=f"include[{i}]",
                             code="unsupported_value")
    if req.top_logprobs:
        raise ProxyError("Gemini's answers through this proxy carry no log probabilities: 'top_logprobs' must be "
                         "0 or absent.", param="top_logprobs", code="unsupported_value")
    if req.background and (req.stream or req.store is False):
        raise ProxyError("A background response is stored and polled: it cannot be streamed or have store false.",
                         param="background", code="invalid_value")


async def prepare_turn(request: web.Request, sent: Any, recent: Recent | None = None) -> Turn:
    """Everything before Gemini is asked; any refusal here is an ordinary error answer."""
    ctx: Context = request.app[CONTEXT]
    req = validate(ResponsesRequest, sent)
    if type(sent.get("input")) is ResentItems:  # (checked as list[Any]: a copy holding the same items)
        req.input = sent["input"]
    _check_options(req)
    session = session_of(request)
    items = parse_input(req.input)
    trigger = _trigger(items)
    if trigger:  # (compacted below: the rest of the input is what the compaction stands for)
        req.input, items = req.input[:-1], items[:-1]

    prior = None
    if req.previous_response_id:
        gemini_model = ctx.gemini_model(req.model)  # (the history is made ready for it: model_bound.py)
        prior = recent.get(req.previous_response_id, gemini_model) if recent else None
        if prior is None:
            prior = await conversation_at(ctx.store, session, req.previous_response_id, gemini_model)
        if prior is None:
            raise ProxyError(f"Previous response with id '{req.previous_response_id}' not found.",
                             param="previous_response_id", code="previous_response_not_found", status=400)

    # The tools as sent: strict validation accepted them unchanged (tests/test_wire_models.py), so
    # there is no need to dump 20 schemas back out of the models.
    loaded = loaded_in_contents(prior.contents) if prior else set()  # deferred tools it loaded
    await ctx.admit(request)
    model, tools, calls = await ctx.prepare(request, session, req.model, sent.get("tools"), items, loaded=loaded)
    seal = ctx.seal(request, model)
    summaries, compacted = open_compactions(seal, items)
    # The input items as sent: GET .../input_items gives them their ids and statuses (as_items).
    sent_input = [{"type": "message", "role": "user", "content": req.input}] if isinstance(req.input, str) else (
        req.input)
    if summaries:  # a compaction made on create stands for the input it replaced (compaction.py)
        expanded = expand_compacted(seal, sent_input)
        if expanded is not sent_input:
            sent_input, items = expanded, parse_input(expanded)
            model, tools, calls = await ctx.prepare(request, session, req.model, sent.get("tools"), items,
                                                    loaded=loaded)
            summaries, compacted = open_compactions(seal, items)
    conv = input_to_contents(items, prior=prior, calls={**compacted, **calls}, names=tools.names, model=model,
                             result_parts=ctx.rules.result_parts(model), summaries=summaries,
                             scope=kept_scope(request, req.input))
    parent, preface, summary_usage = req.previous_response_id, [], None
    threshold = compaction_threshold(req)
    if trigger or (threshold is not None and rendered_tokens(conv) > threshold):
        history = list(sent_input)
        if req.previous_response_id:
            stored = await items_at(ctx.store, session, req.previous_response_id)
            if stored is None:  # continued from a WebSocket's own cache, never stored (store: false)
                raise ProxyError("The conversation passed compact_threshold but the response it continues was not "
                                 "stored (store: false), so it cannot be compacted; send the conversation as input.",
                                 param="context_management", code="invalid_value")
            history = stored + history
        whole = parse_input(history)
        model, tools, calls = await ctx.prepare(request, session, req.model, sent.get("tools"), whole, loaded=loaded)
        old_summaries, carried = open_compactions(seal, whole)
        refuse_unopened(whole, old_summaries, len(history) - len(sent_input), req.previous_response_id)
        done = await compact(ctx, api_key_of(request), seal, model, history, whole, {**carried, **calls},
                             old_summaries, req.instructions, everything=trigger,
                             covers=None if trigger else req.input if isinstance(req.input, list) else [])
        sent_input, items = done.output, parse_input(done.output)
        summaries, compacted = open_compactions(seal, items)
        conv = input_to_contents(items, calls={**compacted, **calls}, names=tools.names, model=model,
                                 result_parts=ctx.rules.result_parts(model), summaries=summaries)
        prior, parent, preface = None, None, [done.compaction]  # a new chain starts here, compacted
        summary_usage = done.usage
    known = None
    if req.store is not False:  # what storing the turn will keep: its contents and its input items
        known = ctx.store.turn_input(conv.contents[len(prior.contents) if prior else 0:],
                                     conv.system[len(prior.system) if prior else 0:], sent_input,
                                     "This turn's input", "input")
    body = build_gemini_request(req, conv, tools, model)
    await object_owners.refuse_foreign(request, body)
    carry = ENCRYPTED_REASONING in (req.include or [])
    translator = ResponsesTranslator(response_skeleton(req, tools), tools,
                                     keep_first_call_only=req.parallel_tool_calls is False,
                                     carrier=ctx.seal(request, model) if carry else None, snapshots=False,
                                     sources="web_search_call.action.sources" in (req.include or []))
    translator.preface, translator.preface_usage = preface, summary_usage
    return Turn(request, ctx, session, req, sent_input, prior, conv, model, tools, body, translator,
                api_key_of(request), warning_headers(tools.warnings), recent, known, parent=parent,
                generates=not trigger)


def _trigger(items: list[Any]) -> bool:
    """Whether the input ends with a compaction_trigger (anywhere else it is a 400 naming it)."""
    at = [i for i, item in enumerate(items) if item.type == "compaction_trigger"]
    if at and at != [len(items) - 1]:
        raise ProxyError(f"Invalid 'input[{at[0]}]': a compaction_trigger must be the last input item.",
                         param=f"input[{at[0]}]", code="invalid_value")
    return bool(at)
