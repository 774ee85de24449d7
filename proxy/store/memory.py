"""In-memory session store for one proxy process: bounded by bytes, least recently used first out.

Everything a session keeps (stored responses, call records, conversations, its tool context) is
one entry of a ByteLRU, as compact JSON: the limits below are exact, per session and in total.
An evicted conversation or response is reported as evicted, never continued as if it were new.
"""

import json
from dataclasses import asdict
from typing import Any

from proxy.errors import ProxyError
from proxy.intercept.session_tools import ToolContext, ToolRound
from proxy.signatures.call_record import CallRecord
from proxy.store.base import StoredResponse
from proxy.store.byte_lru import ByteLRU, Key, TooLarge

# Defaults sized for a developer machine; JSON bytes (Python's own objects would take 2-3x more).
DEFAULT_MAX_BYTES = 512 * 1024 * 1024      # the whole store
DEFAULT_SESSION_BYTES = 128 * 1024 * 1024  # one session: a long agent conversation with some images
DEFAULT_TTL_SECONDS = 6 * 3600  # long enough for a working day's agent session to pause and resume
DEFAULT_MAX_ROUNDS = 4096       # captured tool rounds kept per session (the oldest go first)


def _dump(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


class MemoryStore:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, session_bytes: int = DEFAULT_SESSION_BYTES,
                 ttl: float = DEFAULT_TTL_SECONDS, max_rounds: int = DEFAULT_MAX_ROUNDS) -> None:
        if session_bytes > max_bytes:
            raise ValueError(f"a session's limit ({session_bytes} bytes) exceeds the store's ({max_bytes} bytes)")
        self.entries = ByteLRU(max_bytes, session_bytes, ttl)
        self.max_rounds = max_rounds

    def _put(self, key: Key, value: list[bytes], what: str) -> None:
        try:
            self.entries.put(key, value)
        except TooLarge as e:
            raise ProxyError(f"{what} is too large to keep: {e}.", status=413, code="session_too_large") from None

    async def put_response(self, session: str, stored: StoredResponse) -> None:
        self._put((session, "response", stored.id), [_dump(asdict(stored))], f"Response '{stored.id}'")

    async def get_response(self, session: str, response_id: str) -> StoredResponse | None:
        found = self.entries.get((session, "response", response_id))
        return StoredResponse(**json.loads(found[0])) if found else None

    async def delete_response(self, session: str, response_id: str) -> bool:
        key = (session, "response", response_id)
        found = self.entries.get(key) is not None
        self.entries.pop(key)
        return found

    async def put_calls(self, session: str, calls: list[CallRecord]) -> None:
        for c in calls:
            self._put((session, "call", c.call_id), [_dump(c.to_dict())], f"Call '{c.call_id}'")

    async def get_calls(self, session: str, call_ids: list[str]) -> dict[str, CallRecord]:
        out = {}
        for cid in call_ids:
            found = self.entries.get((session, "call", cid))
            if found:
                out[cid] = CallRecord.from_dict(json.loads(found[0]))
        return out

    def _conversation(self, key: Key, evicted: str) -> list[bytes]:
        """A conversation's turns (none: a new one); one that was evicted is a 409 saying `evicted`."""
        found = self.entries.get(key)
        if found is None and self.entries.evicted(key):
            raise ProxyError(f"Conversation '{key[2]}' {evicted}", status=409, param="conversation",
                             code="conversation_evicted")
        return found or []

    async def get_conversation(self, session: str, conversation: str) -> list[dict[str, Any]]:
        docs = self._conversation((session, "conversation", conversation), "was evicted to stay within the store's "
                                  "memory limits; start a new one (or resend its history).")
        return [turn for doc in docs for turn in json.loads(doc)]

    async def append_conversation(self, session: str, conversation: str, contents: list[dict[str, Any]]) -> None:
        key = (session, "conversation", conversation)
        docs = self._conversation(key, "was evicted while this turn ran; its turn is not kept.")
        self._put(key, [*docs, _dump(contents)], f"Conversation '{conversation}'")

    def _tools(self, session: str) -> ToolContext | None:
        found = self.entries.get((session, "tools", ""))
        return ToolContext.from_dict(json.loads(found[0])) if found else None

    def _save_tools(self, session: str, ctx: ToolContext) -> None:
        del ctx.rounds[:-self.max_rounds]
        self._put((session, "tools", ""), [_dump(ctx.to_dict())], f"Session '{session}'s tool context")

    async def get_tool_context(self, session: str) -> ToolContext | None:
        return self._tools(session)

    async def set_tools(self, session: str, declarations: list[dict[str, Any]], tool_config: dict[str, Any] | None,
                        client_names: dict[str, str]) -> None:
        old = self._tools(session)
        self._save_tools(session, ToolContext(declarations, tool_config, dict(client_names), old.rounds if old else []))

    async def add_round(self, session: str, rnd: ToolRound) -> None:
        ctx = self._tools(session) or ToolContext()
        ctx.rounds.append(rnd)
        self._save_tools(session, ctx)

    async def add_results(self, session: str, results: dict[str, dict[str, Any]]) -> list[str]:
        ctx = self._tools(session)
        unknown = [cid for cid in results if ctx is None or ctx.find_call(cid) is None]
        if unknown or ctx is None:
            return unknown
        for cid, response in results.items():
            found = ctx.find_call(cid)
            assert found is not None
            found[0].results[cid] = response
        self._save_tools(session, ctx)
        return []

    async def drop_tool_context(self, session: str) -> None:
        self.entries.pop((session, "tools", ""))
