"""`POST /v1/messages` (Claude Code appends `?beta=true`), `POST /v1/messages/count_tokens`, and the
model list in Anthropic's shape: the Anthropic Messages API over Gemini. `anthropic-version` and
`anthropic-beta` are accepted whatever they say; an unknown beta is never an error, but `thread`
without its beta is (threads.py holds threads)."""

from typing import Any

from aiohttp import web

from proxy.anthropic import threads
from proxy.anthropic.cache_breakpoints import breakpoints
from proxy.anthropic.context_edits import apply_edits, check_edits
from proxy.anthropic.stream_writer import AnthropicWriter, keep_alive
from proxy.anthropic.to_items import (
    KEPT_ITEMS,
    joined,
    message_items,
    referenced_tools,
    system_items,
    tool_choice_for_core,
    tools_for_core,
)
from proxy.anthropic.translator import AnthropicTranslator
from proxy.errors import PairingError, ProxyError
from proxy.server import object_owners, prompt_cache
from proxy.server.answer_turn import ReadyTurn, answer_turn
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import kept_scope, read_json, validate
from proxy.signatures.sentinel import requires_signatures
from proxy.to_gemini.cached_prefix import prefix_sizes
from proxy.to_gemini.conversation import Conversation
from proxy.to_gemini.input_to_contents import input_to_contents, own_items
from proxy.to_gemini.reasoning import budget_in_range, thinking_config
from proxy.to_gemini.request_body import assemble_request
from proxy.tools.deferral import loaded_in_contents
from proxy.tools.hosted_tools import warning_headers
from proxy.tools.prepare_tools import PreparedTools
from proxy.wire.anthropic import CountTokensRequest, MessagesRequest, check_ranges
from proxy.wire.resent_items import converted
from proxy.wire.shared_tools import SharedTools

# Anthropic's effort levels, each also one of the core's (reasoning.py).
EFFORTS = frozenset({"low", "medium", "high", "max"})


def _thinking(model: str, req: MessagesRequest) -> dict[str, Any] | None:
    """`thinking` and `output_config.effort` -> thinkingConfig: a budget for 2.5, a level for 3.x
    (reasoning.py); thoughts are asked back whenever the client asked for thinking."""
    thinking = req.thinking
    effort = (req.output_config or {}).get("effort")
    effort = effort if effort in EFFORTS else None
    if thinking is None or thinking.type == "adaptive":
        config = thinking_config(model, effort, "auto" if thinking is not None else None)
        return config or ({"includeThoughts": True} if thinking is not None else None)
    if thinking.type == "disabled":  # Gemini 3 cannot switch thinking off: its default stands
        return None if requires_signatures(model) else thinking_config(model, "none", None)
    budget = thinking.budget_tokens or 1024
    config = thinking_config(model, effort or ("low" if budget <= 1024 else "medium" if budget <= 8192 else "high"),
                             "auto") or {}
    if "thinkingBudget" in config:  # 2.5: the client's own budget, within the model's range
        config["thinkingBudget"] = budget_in_range(model, budget)
    return config


# Where a shared tools text (wire/shared_tools.py) keeps its tools as the core's, converted once.
CORE_TOOLS = "anthropic core tools"


def _core_tools(req: MessagesRequest | CountTokensRequest, sent: SharedTools | None) -> list[dict[str, Any]] | None:
    """tools_for_core(req.tools); once per tools text while they are the shared ones (`sent`: the
    body's SharedTools, whose checked copy they are unless a thread set its own), as a SharedTools
    of their own, so that their preparation is looked up by a key worked out once (prepare_tools)."""
    if sent is None or req.tools is None or req.tools is not sent.checked.get(MessagesRequest):
        return tools_for_core(req.tools)
    core = sent.facts.get(CORE_TOOLS)
    if core is None:
        core = sent.facts[CORE_TOOLS] = SharedTools(tools_for_core(req.tools), sent.text)
    return core


async def _prepare(request: web.Request, req: MessagesRequest | CountTokensRequest,
                   prior: Conversation | None = None, sent: SharedTools | None = None, history: Any = None
                   ) -> tuple[str, PreparedTools, dict[str, Any], Conversation, dict[str, Any] | None]:
    """The Gemini model, the tools, the Gemini body (generation settings only for a message:
    countTokens takes none), its history (`prior`: a thread's held history the messages follow) and
    the context editing report (None: none was asked for; a thread refuses editing, threads.py).
    `sent`: the body's tools when they are shared (wire/shared_tools.py); `history`: its messages as
    read (ResentItems when their items were split: wire/resent_items.py)."""
    ctx: Context = request.app[CONTEXT]
    session = session_of(request)
    # (a resent message's typed items: made once per client scope, shared by its later turns)
    per_message = converted(history, req.messages, MessagesRequest, KEPT_ITEMS,
                            lambda i, m: own_items(message_items(i, m)))
    items = own_items(system_items(req.system)) + joined(per_message)
    loaded = referenced_tools(req.messages) | (loaded_in_contents(prior.contents) if prior else set())
    model, tools, calls = await ctx.prepare(request, session, req.model, _core_tools(req, sent), items,
                                            loaded=loaded)
    try:
        conv = input_to_contents(items, prior=prior, calls=calls, names=tools.names, model=model,
                                 result_parts=ctx.rules.result_parts(model), scope=kept_scope(request, history))
    except PairingError as e:
        what = (f"a tool_use ({e.call_id}) without a tool_result in the next user turn" if e.missing_output
                else f"a tool_result for {e.call_id} without the tool_use it answers")
        raise ProxyError(f"messages: {what}.", param="messages") from None
    report = None
    if req.context_management is not None:  # applied to what Gemini gets; the client keeps its history
        edits = check_edits(req.context_management.edits)
        conv.contents, applied = apply_edits(edits, conv.system, conv.contents, tools.names, model)
        report = {"applied_edits": applied}
    generation = {"temperature": req.temperature, "topP": req.top_p, "topK": req.top_k,
                  "stopSequences": req.stop_sequences, "maxOutputTokens": req.max_tokens,
                  "thinkingConfig": _thinking(model, req)} if isinstance(req, MessagesRequest) else None
    body = assemble_request(conv, tools, tool_choice_for_core(req.tool_choice), generation=generation)
    await object_owners.refuse_foreign(request, body)
    return model, tools, body, conv, report


async def create_message(request: web.Request) -> web.StreamResponse:
    ctx: Context = request.app[CONTEXT]
    sent = await read_json(request, shared_tools=True, history="messages")  # only read (SharedTools, ResentItems)
    req = validate(MessagesRequest, sent)
    shared = sent.get("tools")
    shared = shared if type(shared) is SharedTools else None
    check_ranges(req)
    if (req.model_extra or {}).get("compaction") is not None:  # a compaction request: never answered as a turn
        raise ProxyError("compaction: this proxy does not make Anthropic's signed compaction blocks (the "
                         "`compaction` parameter of beta compact-2026-09-04), so the request is refused rather than "
                         "answered as an ordinary turn. Use context_management edits (clear_tool_uses_20250919, "
                         "clear_thinking_20251015) or the Responses API's /v1/responses/compact.",
                         param="compaction")
    session = session_of(request)
    thread = await threads.begin(request, ctx, session, req)
    if thread is None:
        return await _answer(request, req, session, None, shared, sent.get("messages"))
    try:
        return await _answer(request, req, session, thread, shared, sent.get("messages"))
    finally:
        await thread.release()  # (nothing when the answer was held)


async def _answer(request: web.Request, req: MessagesRequest, session: str,
                  thread: threads.ThreadTurn | None, shared: SharedTools | None = None,
                  history: Any = None) -> web.StreamResponse:
    ctx: Context = request.app[CONTEXT]
    prior = thread.prior if thread is not None else None
    model, tools, body, conv, report = await _prepare(request, req, prior, shared, history)
    await ctx.admit(request)
    if thread is not None:  # before Gemini is asked: a turn too large to hold is not billed and lost
        ctx.store.refuse_unkeepable(conv.contents[len(prior.contents) if prior else 0:], "This turn", "messages")
    key = api_key_of(request)
    single = bool(req.tool_choice and req.tool_choice.disable_parallel_tool_use)
    translator = AnthropicTranslator(req.model, tools, ctx.seal(request, model), keep_first_call_only=single,
                                     keep_turn=thread is not None)
    translator.context_management = report
    headers = warning_headers(tools.warnings)

    async def remember(ok: bool) -> None:
        if ok:
            await ctx.keep_calls(session, translator.calls, "anthropic", model=model)
            if thread is not None:
                added, system = conv.added_since(prior, translator.model_content())
                await thread.keep(translator.id, added, system, [c.call_id for c in translator.calls], model)

    async def ready() -> tuple[Any, Any]:
        """The prompt cache the breakpoints ask for, attached to the final body (a search's later
        hops go uncached: search_hops.py); its first hop opened through it."""
        marks = breakpoints(req)
        sent, cache = await prompt_cache.attach(request, model, body,
                                                prefix_sizes(marks.turns, body["contents"], marks.roles), marks.ttls)
        translator.cache_written = cache is not None and cache.created
        if req.stream:
            return prompt_cache.stream(request, model, sent, cache, key), None
        return None, prompt_cache.generate(request, model, sent, cache, key)

    def whole(answers: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
        translator.start()
        for answer in answers:
            translator.feed(answer)
        failure = translator.finish()
        if translator.failed:  # never an empty success: the failure in Anthropic's own shape
            raise ProxyError(failure[-1]["error"]["message"], status=502, type="server_error")
        return translator.message(), True

    return await answer_turn(request, ReadyTurn(model=model, body=body, key=key, stream=bool(req.stream),
                                                writer=lambda: AnthropicWriter(translator), whole=whole,
                                                remember=remember, tools=tools, headers=headers,
                                                keep_alive=keep_alive() if req.stream else None, ready=ready))


async def count_tokens(request: web.Request) -> web.Response:
    """Gemini's countTokens on the request the proxy would send (history, tools, system)."""
    ctx: Context = request.app[CONTEXT]
    req = validate(CountTokensRequest, await read_json(request))
    if (req.model_extra or {}).get("thread") is not None:  # it would count only the new turn: never silently
        raise ProxyError("thread: Extra inputs are not permitted: count_tokens takes no `thread` (the SDK's "
                         "count_tokens params have none); count the whole conversation.", param="thread")
    # Counted after the context edits, as Anthropic counts (its `original_input_tokens` would take a
    # second count, so the field is left out).
    model, _, body, _, _report = await _prepare(request, req)
    return web.json_response({"input_tokens": await ctx.count_tokens(model, body, api_key_of(request))})


def wants_anthropic_list(request: web.Request) -> bool:
    return "anthropic-version" in request.headers


async def list_models(request: web.Request) -> web.Response:
    """Anthropic's model list: the Gemini models and the aliases (claude-… names) the proxy serves."""
    ctx: Context = request.app[CONTEXT]
    names = [*ctx.models, *ctx.aliases]
    data = [{"type": "model", "id": m, "display_name": m, "created_at": "1970-01-01T00:00:00Z", "lifecycle": "active"}
            for m in names]
    return web.json_response({"data": data, "has_more": False, "first_id": names[0] if names else None,
                              "last_id": names[-1] if names else None})


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/messages", create_message)
    app.router.add_post("/v1/messages/count_tokens", count_tokens)
