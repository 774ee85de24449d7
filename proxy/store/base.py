"""The session-store interface. Every key lives inside a session: sessions never see each other.

Methods are async so a networked backend (Redis, for several proxy instances) fits the same shape.
"""

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from proxy.errors import ProxyError
from proxy.session.session_tools import ToolContext, ToolRound
from proxy.signatures.call_record import CallRecord
from proxy.signatures.model_bound import without_signatures
from proxy.store.history_cache import CachedHistory, HistoryCache
from proxy.to_gemini.conversation import Conversation


@dataclass
class StoredResponse:
    """A Responses answer kept for previous_response_id and GET /v1/responses/{id}.

    Each turn keeps only what it added to the history, with a pointer to the turn before: a chain
    of n turns costs memory linear in n, not n² (conversation_at rebuilds the whole history).
    """

    id: str
    response: dict[str, Any]                 # the Response object as returned to the client
    contents: list[dict[str, Any]]           # Gemini contents this turn added, incl. its model turn
    system: list[dict[str, Any]] = field(default_factory=list)  # system/developer parts this turn added
    pending: list[str] = field(default_factory=list)  # call ids of the final model turn
    parent: str | None = None                # previous_response_id of this turn
    input: list[dict[str, Any]] | None = None  # a response's input items, with ids (GET .../input_items)
    # The Gemini model its contents were sent to and answered by: their thought signatures are bound
    # to it (model_bound.py). None: not known (stored before turns named their model).
    model: str | None = None
    # Where the strings left out of `input` are in `contents` (shared_input.py): put back when read.
    input_shared: list[list[Any]] | None = None


# A chain longer than this is refused rather than walked (a loop in stored data, or a client that
# should use store=false): agent sessions reach a few hundred turns.
MAX_CHAIN = 10_000


async def _walk(store: "SessionStore", session: str, response_id: str, purpose: str,
                known: Callable[[str], Awaitable[bool]] | None = None) -> AsyncIterator[StoredResponse]:
    """A stored response and the turns before it, newest first, until the chain's start or until
    `known(rid)` says the rest is had already. An unknown response yields nothing; a missing ancestor
    is an error that names it (the response "cannot be `purpose`"), never a shortened chain."""
    rid: str | None = response_id
    walked = 0
    while rid is not None and not (known is not None and await known(rid)):
        stored = await store.get_response(session, rid)
        if stored is None:
            if not walked:
                return
            raise ProxyError(f"Previous response '{response_id}' cannot be {purpose}: an earlier turn of its "
                             f"conversation ('{rid}') is no longer stored.", param="previous_response_id",
                             code="previous_response_not_found")
        walked += 1
        if walked > MAX_CHAIN:
            raise ProxyError(f"The conversation behind '{response_id}' is longer than {MAX_CHAIN} turns.",
                             param="previous_response_id")
        yield stored
        rid = stored.parent


async def stored_chain(store: "SessionStore", session: str, response_id: str, purpose: str = "continued"
                       ) -> list[StoredResponse] | None:
    """A stored response and every turn before it, oldest first, or None when it is unknown."""
    chain = [stored async for stored in _walk(store, session, response_id, purpose)]
    chain.reverse()
    return chain or None


async def conversation_at(store: "SessionStore", session: str, response_id: str, model: str | None = None
                          ) -> Conversation | None:
    """The whole history up to and including a stored response, or None when it is unknown; as it
    may be sent to `model`: the turns another model answered go without their thought signatures.

    The newest turns are read from the store until one whose whole history the store's cache holds
    (history_cache.py) for `model` and whose chain is still stored; that history is kept for the
    response asked for, so the next turn reads one entry, not the chain."""
    histories: HistoryCache | None = getattr(store, "histories", None)
    found: list[CachedHistory] = []

    async def cached(rid: str) -> bool:
        hit = histories.get(session, rid) if histories is not None else None
        if hit is not None and hit.model == model and await store.all_stored(session, hit.chain):
            found.append(hit)
            return True
        return False

    newer = [stored async for stored in _walk(store, session, response_id, "continued", cached)]
    known = found[0] if found else None
    if known is None and not newer:
        return None
    if not newer:
        return known.conversation()
    newer.reverse()
    base = known.conversation() if known is not None else Conversation()
    conv = Conversation(base.contents + [c for s in newer for c in _contents_for(s, model)],
                        base.system + [p for s in newer for p in s.system], list(newer[-1].pending))
    if histories is not None and all(map(_settled, newer)):
        histories.put(session, response_id, (known.chain if known else []) + [s.id for s in newer], conv, model)
    return conv


def _contents_for(stored: StoredResponse, model: str | None) -> list[dict[str, Any]]:
    """A stored turn's contents as `model` may be sent them (model_bound.py)."""
    if model is None or stored.model is None or stored.model == model:
        return stored.contents
    return without_signatures(stored.contents)


def _settled(stored: StoredResponse) -> bool:
    """Not a background run still going (its entry is stored again, with its history, when it ends)."""
    r = stored.response
    status = r["interaction"].get("status") if isinstance(r.get("interaction"), dict) else r.get("status")
    return status not in ("queued", "in_progress")


@dataclass(frozen=True)
class TurnInput:
    """What a stored Responses turn keeps of its request, serialized before the upstream call: its
    objects are still in the CPU's caches then. Serializing them after Gemini's answer took four
    times as long (the bench's large turn, 100 KB: 92 us in place, 27 us right after; turn_input).
    """

    contents: bytes  # the contents the turn's input added (a JSON array; the model's turn is added when stored)
    count: int       # how many
    system: bytes    # the system parts it added
    input: bytes     # its input items as sent, without the strings its contents hold (shared_input.py)
    shared: bytes = b"[]"  # where those strings are in the contents


class SessionStore(Protocol):
    async def put_response(self, session: str, stored: StoredResponse, chained: bool = False,
                           known: TurnInput | None = None) -> None: ...
    async def get_response(self, session: str, response_id: str) -> StoredResponse | None: ...
    async def all_stored(self, session: str, response_ids: list[str]) -> bool:
        """Whether every one of these responses is still stored, in one step."""
        ...
    async def delete_response(self, session: str, response_id: str) -> bool:
        """Forget a stored response (an interaction's DELETE); False when it was not stored."""
        ...
    async def put_mark(self, session: str, kind: str, key: str, value: dict[str, Any]) -> None:
        """A small fact about `key` that instances share (a background run's lease, a stop request)."""
        ...
    async def get_mark(self, session: str, kind: str, key: str) -> dict[str, Any] | None: ...
    async def take_mark(self, session: str, kind: str, key: str) -> bool:
        """Forget a mark atomically; True only for the caller that found it (a claim)."""
        ...
    async def put_calls(self, session: str, calls: list[CallRecord]) -> None: ...
    async def get_calls(self, session: str, call_ids: list[str]) -> dict[str, CallRecord]: ...
    async def get_conversation(self, session: str, conversation: str, model: str | None = None
                               ) -> list[dict[str, Any]]: ...
    def refuse_unkeepable(self, doc: Any, what: str, param: str) -> None:
        """A 413 (session_too_large) naming `param` when `doc` alone is more than a session may keep:
        checked before the upstream call, so no answer is billed and then lost."""
        ...
    def turn_input(self, contents: list[dict[str, Any]], system: list[dict[str, Any]], items: list[Any],
                   what: str, param: str) -> TurnInput:
        """A Responses turn's stored input serialized before the upstream call, refused as
        refuse_unkeepable refuses."""
        ...
    async def append_conversation(self, session: str, conversation: str, contents: list[dict[str, Any]],
                                  model: str | None = None) -> None:
        """Append one turn's contents in one atomic step: concurrent turns of a conversation never
        overwrite each other (no read-modify-write across an await)."""
        ...

    # Tool contexts for intercepted traffic. Each method is one atomic step: the addon appends
    # rounds while the front-end records results, and neither may lose the other's write.
    async def get_tool_context(self, session: str, rounds: int | None = None) -> ToolContext | None:
        """The tools and captured rounds (all, or the newest `rounds`: the addon's cost must not grow
        with the session's history)."""
        ...
    async def set_tools(self, session: str, declarations: list[dict[str, Any]], tool_config: dict[str, Any] | None,
                        client_names: dict[str, str]) -> None: ...
    async def add_round(self, session: str, rnd: ToolRound) -> None: ...
    async def add_results(self, session: str, results: dict[str, dict[str, Any]]) -> list[str]:
        """Record outputs by call_id; returns the call ids no round knows (nothing is recorded then)."""
        ...
    async def drop_tool_context(self, session: str) -> None: ...
