"""`--upstream-api interactions`: Gemini bodies answered by Google's Interactions API
(`POST /{version}/interactions`) instead of generateContent, for the models it is asked for.

Server-side state: every interaction is stored at Google, and this client remembers which stored
interaction ends which history (request.turn_keys: by key and model, blind to what a stateless
resend loses). A later request whose history extends a remembered one sends only the new steps
with `previous_interaction_id` — a Responses client's previous_response_id, or a Codex-style
client's full resend, costs Google only the new turn. When Google no longer has the interaction
(404), the whole history is sent instead: the answer never depends on the shortcut. A long answer
Google stops at its decode limit is continued hop by hop and passed on whole (continuation.py).
"""

import hashlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from cachetools import LRUCache
from yarl import URL

from proxy.errors import UpstreamError
from proxy.journal import exchange
from proxy.journal.exchange import upstream_call
from proxy.upstream.gemini.client import GeminiUpstream
from proxy.upstream.interactions import continuation
from proxy.upstream.interactions.answer import StreamTranslator, gemini_answer
from proxy.upstream.interactions.request import interactions_request, turn_keys

log = logging.getLogger(__name__)
# Remembered history ends (one key -> one interaction id, ~150 bytes each): plenty for a day of agents.
MAX_REMEMBERED = 100_000


class InteractionsUpstream(GeminiUpstream):
    WIRE = "interactions"
    STOPPED_BY = ("The Interactions upstream", "status requires_continuation")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.url = URL(self.base_url).joinpath(self.api_version, "interactions")
        self.ends: LRUCache[str, str] = LRUCache(MAX_REMEMBERED)

    def _scope(self, model: str, api_key: str | None) -> str:
        key = api_key or self.api_key or ""
        return f"{hashlib.sha256(key.encode()).hexdigest()}|{model}"  # never the key itself

    def _plan(self, model: str, body: dict[str, Any], api_key: str | None) -> tuple[dict[str, Any], str | None]:
        """The request to send (the shortest that continues a remembered interaction) and the
        remembered key it continues (None: the whole history)."""
        keys = turn_keys(self._scope(model, api_key), body["contents"])
        for i in range(len(keys) - 2, -1, -1):  # the last content is new: at least it is sent
            previous = self.ends.get(keys[i])
            if previous:
                return interactions_request(model, body, i + 1, previous), keys[i]
        return interactions_request(model, body), None

    def _remember(self, model: str, body: dict[str, Any], api_key: str | None, turn: dict[str, Any] | None,
                  interaction_id: str | None) -> None:
        """The stored interaction `interaction_id` ends the history `body` + `turn`."""
        if interaction_id and turn is not None:
            self.ends[turn_keys(self._scope(model, api_key), [*body["contents"], turn])[-1]] = interaction_id

    async def _send_planned(self, model: str, body: dict[str, Any], api_key: str | None, stream: bool,
                            deadline: float) -> tuple[Any, dict[str, Any]]:
        """The answer's response, and the request it answers."""
        req, continued = self._plan(model, body, api_key)
        if stream:
            req = {**req, "stream": True}
        try:
            return await self.send(self.url, req, api_key, stream, deadline), req
        except UpstreamError as e:
            if e.status != 404 or continued is None:
                raise
            log.info("the Interactions upstream no longer has %s; sending the whole history",
                     req["previous_interaction_id"])
            self.ends.pop(continued, None)  # not tried again by later turns
            exchange.note("history", f"the Interactions upstream no longer has {req['previous_interaction_id']}: "
                                     "the whole history was sent again, in a call of its own")
            req = interactions_request(model, body)
            if stream:
                req = {**req, "stream": True}
            exchange.new_upstream_call(model, req, stream)
            return await self.send(self.url, req, api_key, stream, deadline), req

    async def _send_hop(self, model: str, req: dict[str, Any], token: str, seen: list[str], added: bool,
                        issuer: str | None, hops: int, api_key: str | None, stream: bool, deadline: float) -> Any:
        """The response of the hop that continues the one `issuer` ended with `token` (a call of its
        own in the journal, or refused: GeminiUpstream._next_hop; `seen`: the tokens the answer was
        continued with, `added`: whether the hop before added any step)."""
        hop = continuation.next_request(req, token, issuer)
        self._next_hop(model, hop, token, seen, hops, added, stream)
        seen.append(token)
        return await self.send(self.url, hop, api_key, stream, deadline)

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        deadline = self._deadline()
        resp, req = await self._send_planned(model, body, api_key, False, deadline)
        hops = [await self._interaction(resp, deadline)]
        seen: list[str] = []
        while (token := continuation.token_of(hops[-1])) is not None:
            resp = await self._send_hop(model, req, token, seen, continuation.added_steps(hops[-1]),
                                        hops[-1].get("id"), len(hops), api_key, False, deadline)
            hops.append(await self._interaction(resp, deadline))
        interaction = continuation.merged(hops)
        answer = gemini_answer(interaction)
        self._remember(model, body, api_key, answer["candidates"][0].get("content"), interaction.get("id"))
        return answer

    async def _interaction(self, resp: Any, deadline: float) -> dict[str, Any]:
        """A whole answer's interaction, kept as read by the journal's current call."""
        interaction = await self._read_answer(resp, deadline, upstream_call(), parsed=False)
        if not isinstance(interaction, dict):
            raise self._unreadable("not an interaction.")
        return interaction

    def _unreadable(self, e: Exception | str) -> UpstreamError:
        return UpstreamError(f"The Interactions upstream sent an unreadable answer: {e}", status=502,
                             type="server_error")

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        deadline = self._deadline()
        resp, req = await self._send_planned(model, body, api_key, True, deadline)
        return self._translated(resp, req, model, body, api_key, deadline)

    async def _translated(self, resp: Any, req: dict[str, Any], model: str, body: dict[str, Any],
                          api_key: str | None, deadline: float) -> AsyncIterator[dict[str, Any]]:
        t = StreamTranslator()
        parts: list[dict[str, Any]] = []
        hops, seen = 1, []
        while True:
            events = self._events(resp, deadline, _event, upstream_call())
            try:
                async for event in events:
                    if "error" in event and "event_type" not in event:  # the reader's own (timeouts, cuts)
                        yield event
                        return
                    for chunk in t.event(event):
                        for cand in chunk.get("candidates") or []:
                            parts += (cand.get("content") or {}).get("parts") or []
                        yield chunk
            finally:
                await events.aclose()  # type: ignore[attr-defined]
            if t.continuation is None:
                break
            token, t.continuation = t.continuation, None
            added, t.hop_added = t.hop_added, False
            resp = await self._send_hop(model, req, token, seen, added, t.id, hops, api_key, True, deadline)
            hops += 1
        if t.interaction is not None:
            self._remember(model, body, api_key, {"role": "model", "parts": parts}, t.id)


def _event(payload: str) -> dict[str, Any] | None:
    if payload.strip() == "[DONE]":
        return None
    try:
        event = json.loads(payload)
    except json.JSONDecodeError:
        return {"error": {"code": 502, "status": "INTERNAL", "message": "The Interactions upstream sent an unreadable "
                                                                        "event"}}
    return event if isinstance(event, dict) else None
