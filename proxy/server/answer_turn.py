"""The one turn skeleton every generating handler ends in: a protocol's conversion has read the
request, found its history and built the Gemini body (a `ReadyTurn`); `answer_turn` asks Gemini and
gives the client a stream or a whole answer, and keeps the turn once the answer is whole.

What differs between protocols is named, here or on the protocol's record (server/protocol.py):
whether Gemini is asked to stream call arguments (`ClientProtocol.streams_arguments`), how whole
answers become the client's JSON and what failure looks like (`whole`), the stream's writer
(`writer`), how the turn is kept (`remember`), and whether something must happen once the body is
final (`ready`: Anthropic attaches its prompt cache there, and opens the hops itself).
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from proxy.server import search_hops
from proxy.server.context import CONTEXT
from proxy.server.json_answer import json_answer
from proxy.server.protocol import protocol_of
from proxy.server.stream import StreamWriter, run_stream
from proxy.to_gemini.request_body import stream_arguments
from proxy.tools.prepare_tools import PreparedTools
from proxy.wire.gemini import checked

Chunk = dict[str, Any]


@dataclass(kw_only=True)
class ReadyTurn:
    """One turn ready for Gemini, as a protocol's conversion made it."""

    model: str                      # the Gemini model asked
    body: dict[str, Any]            # the Gemini request body (final but for streamed arguments)
    key: str | None                 # the client's key, for the upstream's key choice
    stream: bool
    writer: Callable[[], StreamWriter]  # a streamed answer's writer (over the protocol's translator)
    # The whole answers (one per search hop) -> (the client's JSON, whether the turn is kept); a
    # protocol whose failures are errors raises it here (never an empty success).
    whole: Callable[[list[Chunk]], tuple[Any, bool]]
    remember: Callable[[bool], Awaitable[None]] | None = None  # keep the turn once the answer is whole
    tools: PreparedTools | None = None  # the proxy's tool searches run within the answer (search_hops)
    headers: dict[str, str] = field(default_factory=dict)
    keep_alive: tuple[float, bytes] | None = None  # a stream's frame when quiet that long (stream._Sender)
    # Once the body is final, before Gemini is asked: how to open the first hop instead of asking the
    # upstream itself (stream, whole), or Nones. Anthropic's prompt cache is attached here.
    ready: Callable[[], Awaitable[tuple[Awaitable[AsyncIterator[Chunk]] | None, Awaitable[Chunk] | None]]] | None = None
    # The whole answer's bytes once `remember` made them (Responses serializes its stored response
    # once, for the store and the client); None: the JSON is written from `whole`'s value.
    answer_text: Callable[[], bytes | None] | None = None


async def prepared(request: web.Request, turn: ReadyTurn) -> tuple[Any, Any]:
    """The body made final (streamed arguments asked for where the protocol and the model have
    them), then `ready`: before any writer starts, as what it does may show in the opening events
    (Anthropic's cache_written)."""
    protocol = protocol_of(request)
    if turn.stream and protocol is not None and protocol.streams_arguments and \
            request.app[CONTEXT].rules.streams_arguments(turn.model):
        stream_arguments(turn.body)
    return await turn.ready() if turn.ready is not None else (None, None)


async def open_answer(request: web.Request, turn: ReadyTurn,
                      first: Awaitable[AsyncIterator[Chunk]] | None = None) -> AsyncIterator[Chunk]:
    """A streamed answer's chunks across its search hops (any transport: HTTP, a WebSocket);
    `first`: the first hop as `prepared` opened it."""
    upstream, model, key = request.app[CONTEXT].upstream, turn.model, turn.key
    first = first if first is not None else upstream.stream(model, turn.body, key)
    return await search_hops.searched(first, lambda b: upstream.stream(model, b, key), turn.body, turn.tools)


async def whole_answer(request: web.Request, turn: ReadyTurn) -> Any:
    """The whole answer (no stream) as the client's JSON, kept by `remember` when it is to be."""
    _, first = await prepared(request, turn)
    upstream, model, key = request.app[CONTEXT].upstream, turn.model, turn.key
    first = first if first is not None else upstream.generate(model, turn.body, key)
    answers = await search_hops.searched_whole(first, lambda b: upstream.generate(model, b, key), turn.body,
                                               turn.tools)
    answers = [checked(a) for a in answers]
    await asyncio.sleep(0)  # a large answer's check and its translation: two stretches, the loop served between
    data, keep = turn.whole(answers)
    if turn.remember is not None:
        await turn.remember(keep)
    return data


async def answer_turn(request: web.Request, turn: ReadyTurn) -> web.StreamResponse:
    """Ask Gemini for `turn` and answer over HTTP: a stream through its writer (`remember` once it
    ended, ok or not), or the whole answer as JSON."""
    if turn.stream:
        first, _ = await prepared(request, turn)
        return await run_stream(request, open_answer(request, turn, first), turn.writer(), headers=turn.headers,
                                on_end=turn.remember, keep_alive=turn.keep_alive)
    data = await whole_answer(request, turn)
    return json_answer(data, headers=turn.headers, text=turn.answer_text() if turn.answer_text else None)
