"""The session-store interface. Every key lives inside a session: sessions never see each other.

Methods are async so a networked backend (Redis, for several proxy instances) fits the same shape.
"""

from dataclasses import dataclass, field
from typing import Any, Protocol

from proxy.translate.calls import CallRecord


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
