"""Relay mode (the Language-Server pattern, docs/wire.md#relay).

The front-end does not call Gemini itself. For each generate call it opens a *turn* and asks a
relay client (any Gemini app whose traffic goes through this MITM) to make a request whose prompt
carries the turn's marker. The addon recognises the marker, swaps in the turn's real contents,
tools and settings, hands Gemini's real answer (chunk by chunk) to the waiting front-end request,
and gives the relay app a benign STOP. The app's follow-up requests within the turn get a fake
STOP as well and never reach Google.
"""

import asyncio
import contextlib
import json
import logging
import shlex
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp

from proxy.errors import UpstreamError
from proxy.intercept.session_marker import marker_text
from proxy.wire.merge_chunks import merge_chunks

log = logging.getLogger(__name__)

# Turns kept for recognising follow-ups; a relay app rarely lingers on more than a handful.
MAX_TURNS = 256
from proxy.defaults import RELAY_TIMEOUT as DEFAULT_TIMEOUT  # noqa: E402 (the options' default)


@dataclass
class RelayTurn:
    marker: str
    model: str
    body: dict[str, Any]
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    state: Literal["waiting", "forwarded", "done"] = "waiting"

    def push(self, kind: str, payload: Any = None) -> None:
        self.queue.put_nowait((kind, payload))


class RelayBroker:
    def __init__(self) -> None:
        self._turns: OrderedDict[str, RelayTurn] = OrderedDict()

    def open(self, model: str, body: dict[str, Any]) -> RelayTurn:
        turn = RelayTurn(f"relay-{uuid.uuid4().hex[:16]}", model, body)
        self._turns[turn.marker] = turn
        while len(self._turns) > MAX_TURNS:
            self._turns.popitem(last=False)
        return turn

    def get(self, marker: str | None) -> RelayTurn | None:
        return self._turns.get(marker) if marker else None


def relay_prompt(marker: str) -> str:
    return f"{marker_text(marker)} ."


class RelayUpstream:
    """Stands where GeminiUpstream stands in the front-end; the relay app's request does the calling."""

    def __init__(self, broker: RelayBroker, trigger: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.broker, self.trigger, self.timeout = broker, trigger, timeout
        self._procs: set[asyncio.subprocess.Process] = set()
        self._tasks: set[asyncio.Task] = set()

    async def close(self) -> None:
        for proc in list(self._procs):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        for task in list(self._tasks):
            task.cancel()

    async def _fire(self, marker: str) -> None:
        prompt = relay_prompt(marker)
        if self.trigger.startswith(("http://", "https://")):
            try:
                async with aiohttp.ClientSession() as s, s.post(self.trigger, json={"prompt": prompt, "marker": marker},
                                                                timeout=aiohttp.ClientTimeout(total=30)) as r:
                    if r.status >= 400:
                        raise UpstreamError(f"The relay client at {self.trigger} answered HTTP {r.status}.", 502,
                                            type="server_error")
            except aiohttp.ClientError as e:
                raise UpstreamError(f"Could not reach the relay client at {self.trigger}: {e}", 502,
                                    type="server_error") from e
            return
        argv = [a.replace("{prompt}", prompt).replace("{marker}", marker) for a in shlex.split(self.trigger)]
        try:
            proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL)
        except OSError as e:
            raise UpstreamError(f"Could not start the relay client {argv[0]!r}: {e}", 502, type="server_error") from e
        self._procs.add(proc)
        task = asyncio.create_task(self._reap(proc))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _reap(self, proc: asyncio.subprocess.Process) -> None:
        code = await proc.wait()
        self._procs.discard(proc)
        if code:
            log.warning("relay client exited with status %s", code)

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        turn = self.broker.open(model, body)
        await self._fire(turn.marker)
        try:
            first = await asyncio.wait_for(turn.queue.get(), self.timeout)
        except TimeoutError:
            turn.state = "done"
            raise UpstreamError(f"The relay client sent no request within {self.timeout:.0f} s.", 504,
                                type="server_error") from None
        kind, payload = first
        if kind == "error":
            status, err = payload
            raise UpstreamError.from_gemini(err, status)
        return self._chunks(turn, first)

    async def _chunks(self, turn: RelayTurn, first: tuple[str, Any]) -> AsyncIterator[dict[str, Any]]:
        item = first
        while True:
            kind, payload = item
            if kind == "end":
                return
            if kind == "error":
                yield {"error": payload[1]}
                return
            yield payload
            item = await asyncio.wait_for(turn.queue.get(), self.timeout)

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        chunks = [c async for c in await self.stream(model, body, api_key)]
        errors = [c for c in chunks if "error" in c]
        if errors:
            err = errors[0]["error"]
            raise UpstreamError.from_gemini(err, int(err.get("code") or 502))
        return merge_chunks(chunks)


def fake_stop(text: str, sse: bool, wrapped: bool, stream_json: bool = False) -> bytes:
    """The benign answer a relay app gets instead of Gemini's real one."""
    answer: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                              "finishReason": "STOP", "index": 0}],
                              "usageMetadata": {"promptTokenCount": 0, "candidatesTokenCount": 0,
                                                "totalTokenCount": 0}}
    if wrapped:
        answer = {"response": answer, "traceId": "gemini-tool-proxy-relay"}
    data = json.dumps(answer)
    if sse:
        return f"data: {data}\r\n\r\n".encode()
    return f"[{data}]".encode() if stream_json else data.encode()
