"""In-memory session store: bounded and expiring, for one proxy process."""

import copy
from typing import Any

from cachetools import TTLCache

from proxy.intercept.session_tools import ToolContext, ToolRound
from proxy.signatures.call_record import CallRecord
from proxy.store.base import StoredResponse

# Defaults sized for a developer machine: a session is one client conversation or tool loop.
DEFAULT_MAX_SESSIONS = 1024
DEFAULT_MAX_ENTRIES = 4096  # responses, calls and conversations per session, each
DEFAULT_TTL_SECONDS = 6 * 3600  # long enough for a working day's agent session to pause and resume


class _Session:
    def __init__(self, max_entries: int, ttl: float) -> None:
        self.responses: TTLCache[str, StoredResponse] = TTLCache(max_entries, ttl)
        self.calls: TTLCache[str, CallRecord] = TTLCache(max_entries * 4, ttl)
        self.conversations: TTLCache[str, list[dict[str, Any]]] = TTLCache(max_entries, ttl)
        self.tools: ToolContext | None = None
        self.max_rounds = max_entries


class MemoryStore:
    def __init__(self, max_sessions: int = DEFAULT_MAX_SESSIONS, max_entries: int = DEFAULT_MAX_ENTRIES,
                 ttl: float = DEFAULT_TTL_SECONDS) -> None:
        self._sessions: TTLCache[str, _Session] = TTLCache(max_sessions, ttl)
        self._max_entries, self._ttl = max_entries, ttl

    def _session(self, name: str) -> _Session:
        s = self._sessions.get(name)
        if s is None:
            s = self._sessions[name] = _Session(self._max_entries, self._ttl)
        else:
            self._sessions[name] = s  # touch: an active session does not expire
        return s

    async def put_response(self, session: str, stored: StoredResponse) -> None:
        self._session(session).responses[stored.id] = copy.deepcopy(stored)

    async def get_response(self, session: str, response_id: str) -> StoredResponse | None:
        found = self._session(session).responses.get(response_id)
        return copy.deepcopy(found) if found else None

    async def put_calls(self, session: str, calls: list[CallRecord]) -> None:
        s = self._session(session)
        for c in calls:
            s.calls[c.call_id] = c

    async def get_calls(self, session: str, call_ids: list[str]) -> dict[str, CallRecord]:
        s = self._session(session)
        return {cid: s.calls[cid] for cid in call_ids if cid in s.calls}

    async def get_conversation(self, session: str, conversation: str) -> list[dict[str, Any]]:
        return copy.deepcopy(self._session(session).conversations.get(conversation, []))

    async def append_conversation(self, session: str, conversation: str, contents: list[dict[str, Any]]) -> None:
        s = self._session(session)
        history = s.conversations.get(conversation) or []
        history.extend(copy.deepcopy(contents))
        s.conversations[conversation] = history

    async def get_tool_context(self, session: str) -> ToolContext | None:
        ctx = self._session(session).tools
        return copy.deepcopy(ctx) if ctx else None

    async def set_tools(self, session: str, declarations: list[dict[str, Any]], tool_config: dict[str, Any] | None,
                        client_names: dict[str, str]) -> None:
        s = self._session(session)
        rounds = s.tools.rounds if s.tools else []
        s.tools = ToolContext(copy.deepcopy(declarations), copy.deepcopy(tool_config), dict(client_names), rounds)

    async def add_round(self, session: str, rnd: ToolRound) -> None:
        s = self._session(session)
        if s.tools is None:
            s.tools = ToolContext()
        s.tools.rounds.append(copy.deepcopy(rnd))
        del s.tools.rounds[:-s.max_rounds]

    async def add_results(self, session: str, results: dict[str, dict[str, Any]]) -> list[str]:
        ctx = self._session(session).tools
        unknown = [cid for cid in results if ctx is None or ctx.find_call(cid) is None]
        if unknown or ctx is None:
            return unknown
        for cid, response in results.items():
            found = ctx.find_call(cid)
            assert found is not None
            found[0].results[cid] = copy.deepcopy(response)
        return []

    async def drop_tool_context(self, session: str) -> None:
        self._session(session).tools = None
