"""Server-held threads (`thread`, beta `message-threads-2026-08-12`): since anthropic-python 2.14,
`beta.messages.tool_runner()` opens with `thread: {"type": "create"}` and then sends only the new
turn with `thread: {"type": "continue", "previous_message_id": <the answer's id>}`, leaving `system`
and `tools` out: the server holds them and the history.

What the SDK's own types say the API does (anthropic/types/beta/beta_message_thread_param.py,
thread_*_error.py, lib/threads/_thread_state.py), and so what this does:
- the answer's shape is unchanged; its `id` names the held state, and each answer can be continued
  once: a second `continue` from it is 400 `thread_already_continued`, one while another is still
  running 400 `thread_continue_in_flight`; no usable state (unknown, expired, evicted, or another
  client key's id, which must look the same) is 404 `thread_not_found`. The SDK answers all three
  by replaying the whole conversation under a new thread;
- `system` and `tools` stay those the thread was created with: a `continue` that sends different
  ones is 400 `thread_fingerprint_mismatch` naming them;
- a request field whose effect on a held history cannot be honoured is 400
  `thread_unsupported_request` listing it (the tool runner then sends the whole history unthreaded);
- an answer cut before `message_stop` is not held ("the server holds either the whole reply or none
  of it"): the stream's `message_stop` waits until the turn is stored, and a failed turn leaves its
  `previous_message_id` free to continue again.

Stored with Responses' machinery (store/base.py): each answer is a StoredResponse (the Gemini
contents it added, with their thought signatures, a pointer to the answer before) in the client
key's session, so it is scoped, bounded and shared across instances exactly as previous_response_id
is; the thread's `system`/`tools` are one mark under the thread's first answer, and the right to
continue an answer is a mark taken atomically (one Redis script) by the request continuing it.
"""

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from proxy.errors import ProxyError
from proxy.server.context import Context
from proxy.store.base import StoredResponse, conversation_at
from proxy.to_gemini.conversation import Conversation
from proxy.wire.anthropic import Block, MessagesRequest, Tool

BETA = "message-threads-2026-08-12"
KIND = "anthropic_thread"            # a stored answer's marker, and the thread's system/tools mark
NEXT = "anthropic_thread_next"       # present while an answer may still be continued
CONTINUED = "anthropic_thread_done"  # an answer that was continued, and by which answer
# Fields the API lists as unsupported with threads (ThreadUnsupportedFeatureName) whose effect on a
# history the proxy holds it cannot honour: context editing and model fallbacks. (`thinking` and
# `cache_control`, also listed there, are honoured: signatures are held with the history, and
# cache_control has no effect through this proxy either way.)
UNSUPPORTED = ("context_management", "fallbacks")


@dataclass
class ThreadError(ProxyError):
    """A refusal the SDK maps to its own exception by `error.details.error_code`."""

    details: dict[str, Any] = field(default_factory=dict)


def _refuse(message: str, code: str, status: int = 400, **more: Any) -> ThreadError:
    return ThreadError(message, status=status, param="thread", code=code,
                       type="not_found_error" if status == 404 else "invalid_request_error",
                       details={"error_code": code, **more})


def _not_found(previous: str) -> ThreadError:
    return _refuse(f"thread.previous_message_id: no thread state is held for '{previous}' (unknown, expired or "
                   "evicted). Replay the full conversation with thread: {\"type\": \"create\"}.",
                   "thread_not_found", status=404)


def betas(request: web.Request) -> set[str]:
    return {b.strip() for h in request.headers.getall("anthropic-beta", []) for b in h.split(",") if b.strip()}


def _check(request: web.Request, req: MessagesRequest) -> None:
    thread = req.thread
    assert thread is not None
    if BETA not in betas(request):
        # An unknown field without its beta: the API refuses it (a guess at its words, not a recording).
        raise ProxyError(f"thread: Extra inputs are not permitted. `thread` needs the `{BETA}` beta: send "
                         f"`anthropic-beta: {BETA}`.", param="thread")
    if thread.type == "create" and thread.previous_message_id is not None:
        raise ProxyError("thread.previous_message_id: only a `continue` names a previous message; a `create` "
                         "starts a thread.", param="thread.previous_message_id")
    if thread.type == "continue" and not thread.previous_message_id:
        raise ProxyError("thread.previous_message_id: Field required for a `continue`.",
                         param="thread.previous_message_id")
    if thread.type == "continue" and not req.messages:  # the SDK's resume of a `pause_turn` answer
        raise ProxyError("messages: a `continue` with no messages resumes a paused turn, and this proxy never "
                         "pauses one (no answer has stop_reason `pause_turn`): send the new turn.", param="messages")
    extra = req.model_extra or {}
    unsupported = [f for f in UNSUPPORTED if getattr(req, f, None) is not None or extra.get(f) is not None]
    if unsupported:
        raise _refuse(f"thread: this proxy cannot hold a thread with {', '.join(unsupported)}: send the full "
                      "conversation without `thread`.", "thread_unsupported_request", unsupported=unsupported)


def _wire(value: Any) -> Any:
    if isinstance(value, list):
        return [v.wire() if isinstance(v, Tool | Block) else v for v in value]
    return value


@dataclass
class ThreadTurn:
    """One request on a thread: what a `continue` found, and how its answer is kept."""

    ctx: Context
    session: str
    root: str | None                 # the thread's first answer (None: this request creates it)
    previous: str | None             # the answer this continues (claimed until the turn ends)
    prior: Conversation | None       # the held history, as the request's model may be sent it
    fixed: dict[str, Any]            # the thread's system and tools as sent when it was created
    settled: bool = False

    async def keep(self, message_id: str, contents: list[dict[str, Any]], system: list[dict[str, Any]],
                   pending: list[str], model: str) -> None:
        """Hold the answer (the turn is whole): the client is told it ended only after this."""
        store = self.ctx.store
        root = self.root or message_id
        if self.root is None:
            await store.put_mark(self.session, KIND, root, self.fixed)
        await store.put_response(self.session, StoredResponse(
            id=message_id, response={KIND: root}, contents=contents, system=system, pending=pending,
            parent=self.previous, model=model), chained=True)
        await store.put_mark(self.session, NEXT, message_id, {})
        if self.previous is not None:
            await store.put_mark(self.session, CONTINUED, self.previous, {"by": message_id})
        self.settled = True

    async def release(self) -> None:
        """The turn failed (or was never answered): nothing was held, so its previous answer may be
        continued again."""
        if self.settled:
            return
        self.settled = True
        if self.previous is not None:
            await self.ctx.store.put_mark(self.session, NEXT, self.previous, {})


async def begin(request: web.Request, ctx: Context, session: str, req: MessagesRequest) -> ThreadTurn | None:
    """The request's thread, checked; for a `continue`, the held history (with the thread's system)
    and the claim on its previous answer, and `req.tools` set to the thread's."""
    if req.thread is None:
        return None
    _check(request, req)
    fixed = {"system": _wire(req.system), "tools": _wire(req.tools)}
    if req.thread.type == "create":
        ctx.store.refuse_unkeepable(fixed, "This thread's system and tools", "tools")
        return ThreadTurn(ctx, session, None, None, None, fixed)
    previous = req.thread.previous_message_id
    assert previous is not None
    store = ctx.store
    stored = await store.get_response(session, previous)
    root = stored.response.get(KIND) if stored is not None else None
    held = await store.get_mark(session, KIND, root) if isinstance(root, str) else None
    if held is None:
        raise _not_found(previous)
    changed = [f for f in ("system", "tools") if fixed[f] is not None and fixed[f] != held.get(f)]
    if changed:
        raise _refuse(f"thread: {' and '.join(changed)} differ from those this thread was created with; send the "
                      "thread's own (or none), or replay the full conversation with thread: {\"type\": \"create\"} "
                      "to change them.", "thread_fingerprint_mismatch")
    if not await store.take_mark(session, NEXT, previous):
        if await store.get_mark(session, CONTINUED, previous) is not None:
            raise _refuse(f"thread.previous_message_id: '{previous}' was already continued, and an answer can be "
                          "continued once. Continue from the thread's most recent answer.", "thread_already_continued")
        raise _refuse(f"thread.previous_message_id: another request is still continuing from '{previous}'. Wait "
                      "for it and continue from its answer, or replay the full conversation with "
                      "thread: {\"type\": \"create\"}.", "thread_continue_in_flight")
    turn = ThreadTurn(ctx, session, root, previous, None, held)
    try:
        try:
            turn.prior = await conversation_at(store, session, previous, ctx.gemini_model(req.model))
        except ProxyError as e:  # an earlier answer of the thread is no longer held
            if e.code != "previous_response_not_found":
                raise
            raise _not_found(previous) from None
        if turn.prior is None:
            raise _not_found(previous)
        req.system = None  # held with the history (prior.system): sent once
        req.tools = _typed(held.get("tools"))
    except BaseException:
        await turn.release()
        raise
    return turn


def _typed(tools: Any) -> list[Tool] | None:
    return [Tool.model_validate(t) for t in tools] if isinstance(tools, list) else None
