"""The session-store interface. Every key lives inside a session: sessions never see each other.

Methods are async so a networked backend (Redis, for several proxy instances) fits the same shape.
"""

from dataclasses import dataclass, field
from typing import Any, Protocol

from proxy.translate.calls import CallRecord
from proxy.translate.tool_context import ToolContext, ToolRound


@dataclass
class StoredResponse:
    """A Responses answer kept for previous_response_id and GET /v1/responses/{id}."""

    id: str
    response: dict[str, Any]                 # the Response object as returned to the client
    contents: list[dict[str, Any]]           # Gemini history including this answer's model turn
    system: list[dict[str, Any]] = field(default_factory=list)  # system/developer parts from input
    pending: list[str] = field(default_factory=list)  # call ids of the final model turn


class SessionStore(Protocol):
    async def put_response(self, session: str, stored: StoredResponse) -> None: ...
    async def get_response(self, session: str, response_id: str) -> StoredResponse | None: ...
    async def put_calls(self, session: str, calls: list[CallRecord]) -> None: ...
    async def get_calls(self, session: str, call_ids: list[str]) -> dict[str, CallRecord]: ...
    async def get_conversation(self, session: str, conversation: str) -> list[dict[str, Any]]: ...
    async def put_conversation(self, session: str, conversation: str, contents: list[dict[str, Any]]) -> None: ...

    # Tool contexts for intercepted traffic. Each method is one atomic step: the addon appends
    # rounds while the front-end records results, and neither may lose the other's write.
    async def get_tool_context(self, session: str) -> ToolContext | None: ...
    async def set_tools(self, session: str, declarations: list[dict[str, Any]], tool_config: dict[str, Any] | None,
                        client_names: dict[str, str]) -> None: ...
    async def add_round(self, session: str, rnd: ToolRound) -> None: ...
    async def add_results(self, session: str, results: dict[str, dict[str, Any]]) -> list[str]:
        """Record outputs by call_id; returns the call ids no round knows (nothing is recorded then)."""
        ...
    async def drop_tool_context(self, session: str) -> None: ...
