"""The session store over an Entries backend (memory or Redis): what is kept, under which names.

- a stored response is one entry; a call record one entry per call id;
- a `/v1/gemini` conversation is one entry with a document per turn (appending costs the turn);
- a session's tool context is three entries: its tools, its captured rounds (a document per round,
  the newest `max_rounds` kept) and the results recorded for them (a document per posting). The
  addon asks only for the rounds a rewrite refers to, so its cost does not grow with the session.
"""

from typing import Any

import orjson

from proxy import fast_json, malloc_tuning
from proxy.errors import ProxyError
from proxy.session.session_tools import ToolContext, ToolRound
from proxy.signatures.call_record import CallRecord
from proxy.signatures.model_bound import without_signatures
from proxy.store.base import StoredResponse, TurnInput
from proxy.store.entries import Entries, Evicted, Key, TooLarge
from proxy.store.history_cache import HISTORY_CACHE_BYTES, HistoryCache
from proxy.store.shared_input import restore_shared, strip_shared

DEFAULT_MAX_ROUNDS = 4096  # captured tool rounds kept per session (the oldest go first)
EVICTED = "was evicted to stay within the store's memory limits; start a new one (or resend its history)."


def _too_large(what: str, e: TooLarge, kept: str = "") -> ProxyError:
    """A 413 for a write the store refused; `kept` says what stays as it was (the store changed nothing)."""
    return ProxyError(f"{what} is too large to keep: {e}.{kept}", status=413, code="session_too_large")


def _evicted(conversation: str, how: str) -> ProxyError:
    return ProxyError(f"Conversation '{conversation}' {how}", status=409, param="conversation",
                      code="conversation_evicted")


# The stored response's fields _response_doc joins in.
_SPLICED = ("response", "contents", "system", "input", "input_shared")


def _response_doc(stored: StoredResponse, known: TurnInput | None, response_json: bytes | None = None) -> bytes:
    """The stored response's document: what `known` holds, and the response as `response_json` (the
    answer's own bytes), are not serialized again but joined in, each copied once (orjson given them
    as Fragments copied them into a buffer it grew by doubling, copying it each time). Text the
    standard library wrote (a leading space: an integer past 64 bits) is never spliced, so the whole
    document is read back by the parser that keeps it exact."""
    if known is not None:
        more = fast_json.dumps(stored.contents[known.count:])
        if response_json is None:
            response_json = fast_json.dumps(stored.response)
        if not any(part[:1] == b" " for part in (known.contents, known.system, known.input, more, response_json)):
            try:
                head = orjson.dumps({k: v for k, v in vars(stored).items() if k not in _SPLICED})
            except (orjson.JSONEncodeError, TypeError):
                pass
            else:
                return b"".join((memoryview(head)[:-1], b',"response":', response_json, b',"contents":',
                                 *fast_json.array_pieces(known.contents, more), b',"system":', known.system,
                                 b',"input":', known.input,
                                 *((b',"input_shared":', known.shared) if known.shared != b"[]" else ()), b"}"))
    # vars(), not asdict(): asdict deep-copies the whole response only to serialize it.
    return fast_json.dumps(vars(stored))


def read_response(doc: bytes) -> StoredResponse:
    """A stored response's document as the response, its input items whole again (shared_input.py)."""
    stored = StoredResponse(**fast_json.loads(doc))
    if stored.input_shared:
        stored.input = restore_shared(stored.input, stored.contents, stored.input_shared)
        stored.input_shared = None
    return stored


class EntryStore:
    """SessionStore over `entries`; every method is one or a few atomic entry operations."""

    def __init__(self, entries: Entries, max_rounds: int = DEFAULT_MAX_ROUNDS,
                 history_bytes: int = HISTORY_CACHE_BYTES) -> None:
        self.backend, self.max_rounds = entries, max_rounds
        # Whole histories of recent chains (this process's own; see history_cache.py).
        self.histories = HistoryCache(history_bytes)

    async def close(self) -> None:
        """Let go of the backend's connections (Redis); nothing to do in memory."""
        close = getattr(self.backend, "close", None)
        if close is not None:
            await close()

    async def usage(self) -> tuple[int, int]:
        """(bytes, entries) the backend keeps, for /metrics."""
        return await self.backend.usage()

    def refuse_unkeepable(self, doc: Any, what: str, param: str) -> None:
        """Before the upstream call: a 413 naming `param` when `doc` (what the turn will store, before
        the answer is added) is already more than one session may keep, so no answer is billed and
        then lost. Cheap (one serialization); the answer's own size is checked when it is stored."""
        if getattr(self.backend, "entry_limit", None) is not None:
            self._refuse_size(len(fast_json.dumps(doc)), what, param)

    def _refuse_size(self, size: int, what: str, param: str) -> None:
        limit = getattr(self.backend, "entry_limit", None)
        if limit is not None and size > limit:
            raise ProxyError(f"{what} is too large to keep: {size} bytes is more than a session may keep ({limit} "
                             "bytes). Send less, or ask for no storage (store: false / no conversation).",
                             status=413, param=param, code="session_too_large")

    async def claim(self, scoped: bool) -> None:
        """A shared store holds scoped sessions (client keys) or keyless ones, never both kinds of
        instance: a keyed instance marks the store, a keyless one refuses (ValueError) a marked store,
        whose tenants' sessions it could otherwise name. A store in this process's memory is its own."""
        claim = getattr(self.backend, "claim", None)
        if claim is not None:
            await claim(scoped)

    async def check(self) -> None:
        """Reach the backend: StoreUnavailable while it cannot be reached (it may come back), ValueError
        when it answers that it never will work as configured (a database index out of range, a wrong
        password)."""
        check = getattr(self.backend, "check", None)
        if check is not None:
            await check()

    async def _put(self, key: Key, docs: list[bytes], what: str) -> None:
        try:
            await self.backend.put(key, docs)
        except TooLarge as e:
            raise _too_large(what, e) from None

    async def _get(self, key: Key) -> list[bytes] | None:
        try:
            return await self.backend.get(key)
        except Evicted:
            return None

    def turn_input(self, contents: list[dict[str, Any]], system: list[dict[str, Any]], items: list[Any],
                   what: str, param: str) -> TurnInput:
        """A turn's stored input, serialized now (TurnInput), and refused with a 413 naming `param`
        when it is already more than one session may keep (refuse_unkeepable)."""
        kept, shared = strip_shared(items, contents)
        known = TurnInput(fast_json.dumps(contents), len(contents), fast_json.dumps(system), fast_json.dumps(kept),
                          fast_json.dumps(shared))
        self._refuse_size(len(known.contents) + len(known.system) + len(known.input) + len(known.shared) + 4,
                          what, param)  # (one array)
        return known

    async def put_response(self, session: str, stored: StoredResponse, chained: bool = False,
                           known: TurnInput | None = None, response_json: bytes | None = None) -> None:
        """Store a response. `chained`: its contents are exactly what it adds to its parent's history,
        so the history cache (history_cache.py) can keep its whole history for the next turn.
        `known`: its input as turn_input serialized it (its contents start with those);
        `response_json`: stored.response as the client is sent it."""
        try:
            await self.backend.put((session, "response", stored.id), [_response_doc(stored, known, response_json)])
        except TooLarge as e:
            kept = (f" It is not stored (its answer was produced); '{stored.parent}' and the turns before it are "
                    "unchanged." if stored.parent else " It is not stored (its answer was produced).")
            raise _too_large(f"Response '{stored.id}'", e, kept) from None
        if chained:
            self.histories.extend(session, stored.parent, stored.id, stored.pending, stored.contents, stored.system,
                                  stored.model)
        else:
            self.histories.forget(session, stored.id)

    async def get_response(self, session: str, response_id: str) -> StoredResponse | None:
        found = await self._get((session, "response", response_id))
        if not found:
            return None
        # Parsed into objects its reader frees as its request ends (a walked history's turns).
        malloc_tuning.transient(len(found[0]), idle_only=True)
        return read_response(found[0])

    async def all_stored(self, session: str, response_ids: list[str]) -> bool:
        """Whether every one of these responses is still stored, in one step (one Redis round trip)."""
        return await self.backend.alive([(session, "response", rid) for rid in response_ids])

    async def delete_response(self, session: str, response_id: str) -> bool:
        return await self.backend.pop((session, "response", response_id))

    async def put_mark(self, session: str, kind: str, key: str, value: dict[str, Any]) -> None:
        await self._put((session, kind, key), [fast_json.dumps(value)], f"The {kind} of '{key}'")

    async def get_mark(self, session: str, kind: str, key: str) -> dict[str, Any] | None:
        found = await self._get((session, kind, key))
        return fast_json.loads(found[0]) if found else None

    async def take_mark(self, session: str, kind: str, key: str) -> bool:
        """Forget a mark in one atomic step: True for the one caller that found it (a claim that
        instances sharing the store cannot both win)."""
        return await self.backend.pop((session, kind, key))

    async def put_calls(self, session: str, calls: list[CallRecord]) -> None:
        for c in calls:
            await self._put((session, "call", c.call_id), [fast_json.dumps(c.to_dict())], f"Call '{c.call_id}'")

    async def get_calls(self, session: str, call_ids: list[str]) -> dict[str, CallRecord]:
        """The records kept of these calls (an evicted one is as good as never kept), asked for in one
        step: an agent's history names every call it made, and a shared store took a round trip each."""
        if not call_ids:
            return {}
        docs = await self.backend.firsts([(session, "call", cid) for cid in call_ids])
        return {cid: CallRecord.from_dict(fast_json.loads(doc)) for cid, doc in zip(call_ids, docs, strict=True)
                if doc is not None}

    async def get_conversation(self, session: str, conversation: str, model: str | None = None
                               ) -> list[dict[str, Any]]:
        """A conversation's contents, as `model` may be sent them: the turns another model answered
        go without their thought signatures (model_bound.py)."""
        try:
            docs = await self.backend.get((session, "conversation", conversation))
        except Evicted:
            raise _evicted(conversation, EVICTED) from None
        out: list[dict[str, Any]] = []
        for doc in docs or []:
            turn = fast_json.loads(doc)
            if isinstance(turn, dict):  # {"model", "contents"}; a bare array: kept before turns named their model
                made_by, turn = turn.get("model"), turn.get("contents") or []
                if model is not None and made_by is not None and made_by != model:
                    turn = without_signatures(turn)
            out += turn
        return out

    async def append_conversation(self, session: str, conversation: str, contents: list[dict[str, Any]],
                                  model: str | None = None) -> None:
        """Append one turn's contents, with `model`: the Gemini model that answered it."""
        doc = fast_json.dumps({"model": model, "contents": contents} if model is not None else contents)
        try:
            await self.backend.append((session, "conversation", conversation), doc, fresh=False)
        except Evicted:
            raise _evicted(conversation, "was evicted while this turn ran; its turn is not kept.") from None
        except TooLarge as e:
            kept = (" This turn is not kept (its answer was produced, and is not in the conversation); the "
                    "conversation is unchanged: continue it with a shorter turn, or start a new one.")
            raise _too_large(f"Conversation '{conversation}' with this turn", e, kept) from None

    # Tool contexts.

    async def get_tool_context(self, session: str, rounds: int | None = None) -> ToolContext | None:
        """The session's tools with its captured rounds: all of them, or only the newest `rounds`."""
        tools = await self._get((session, "tools", ""))
        docs = await self.backend.tail((session, "rounds", ""), -1 if rounds is None else rounds)
        if tools is None and docs is None:
            return None
        if tools and type(tools[0]) is bytes:
            ctx: ToolContext = LazyToolContext(tools[0])
        else:
            head = fast_json.loads(tools[0]) if tools else {}
            ctx = ToolContext(head.get("declarations") or [], head.get("tool_config"), head.get("client_names") or {})
        if docs:
            results: dict[str, Any] = {}
            for doc in await self._get((session, "results", "")) or []:
                results.update(fast_json.loads(doc))
            for doc in docs:
                calls = [CallRecord.from_dict(c) for c in fast_json.loads(doc)]
                ctx.rounds.append(ToolRound(calls, {c.call_id: results[c.call_id] for c in calls
                                                    if c.call_id in results}))
        return ctx

    async def set_tools(self, session: str, declarations: list[dict[str, Any]], tool_config: dict[str, Any] | None,
                        client_names: dict[str, str]) -> None:
        head = {"declarations": declarations, "tool_config": tool_config, "client_names": client_names}
        await self._put((session, "tools", ""), [fast_json.dumps(head)], f"Session '{session}'s tools")

    async def add_round(self, session: str, rnd: ToolRound) -> None:
        try:
            await self.backend.append((session, "rounds", ""), fast_json.dumps([c.to_dict() for c in rnd.calls]),
                                      keep=self.max_rounds)
        except TooLarge as e:
            raise _too_large(f"Session '{session}'s captured calls", e) from None
        if rnd.results:
            await self._append_results(session, rnd.results)

    async def add_results(self, session: str, results: dict[str, dict[str, Any]]) -> list[str]:
        ctx = await self.get_tool_context(session)
        unknown = [cid for cid in results if ctx is None or ctx.find_call(cid) is None]
        if unknown or ctx is None:
            return unknown
        await self._append_results(session, results)
        return []

    async def _append_results(self, session: str, results: dict[str, dict[str, Any]]) -> None:
        try:
            # As many postings as rounds are kept: a result outlives its round by at most that many.
            await self.backend.append((session, "results", ""), fast_json.dumps(results), keep=self.max_rounds)
        except TooLarge as e:
            raise _too_large(f"Session '{session}'s tool results", e) from None

    async def drop_tool_context(self, session: str) -> None:
        for kind in ("tools", "rounds", "results"):
            await self.backend.pop((session, kind, ""))


class LazyToolContext(ToolContext):
    """A ToolContext whose tools are read from their stored text when first asked for: the addon
    asks only for `version` when it already made a request of these very tools (intercept/rewrite.py),
    and parsing a session's 20 declarations cost more than the rest of its request hook. Each
    instance parses its own copy, as ToolContext's callers expect (they may change it)."""

    def __init__(self, text: bytes) -> None:  # noqa: D107 (ToolContext's fields, read from `text`)
        self.version = text
        self.rounds = []
        self._head: dict[str, Any] | None = None

    def __eq__(self, other: object) -> bool:  # equal to the ToolContext of the same fields, as an eager one
        if not isinstance(other, ToolContext):
            return NotImplemented
        return (self.declarations, self.tool_config, self.client_names, self.rounds) == (
            other.declarations, other.tool_config, other.client_names, other.rounds)

    __hash__ = None  # type: ignore[assignment]

    def _read(self) -> dict[str, Any]:
        if self._head is None:
            head = fast_json.loads(self.version or b"{}")
            self._head = {"declarations": head.get("declarations") or [], "tool_config": head.get("tool_config"),
                          "client_names": head.get("client_names") or {}}
        return self._head

    @property  # type: ignore[override]
    def declarations(self) -> list[dict[str, Any]]:
        return self._read()["declarations"]

    @declarations.setter
    def declarations(self, value: list[dict[str, Any]]) -> None:
        self._read()["declarations"] = value

    @property  # type: ignore[override]
    def tool_config(self) -> dict[str, Any] | None:
        return self._read()["tool_config"]

    @tool_config.setter
    def tool_config(self, value: dict[str, Any] | None) -> None:
        self._read()["tool_config"] = value

    @property  # type: ignore[override]
    def client_names(self) -> dict[str, str]:
        return self._read()["client_names"]

    @client_names.setter
    def client_names(self, value: dict[str, str]) -> None:
        self._read()["client_names"] = value
