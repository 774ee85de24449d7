"""Tool search run by the proxy within one answer (Anthropic's tool-search server tools, the Responses
API's hosted `tool_search`): Gemini calls the search function, the proxy searches the request's
deferred tools (tools/tool_search.py), declares what it found, and asks Gemini again with the call
and its result in the history -- the client sees one answer holding the search and what followed.

The hops are chunks to the translators: each search's result comes as a part of the proxy's own
(`gtpToolSearch`, model_turn.py), which the translators show as the search's result block or item
and keep in history as the user turn answering the call. A hop that ends having only searched goes
on (its finishReason withheld); one that also called the client's tools, or stopped for another
reason, ends the answer with its searches answered. Usage is the sum of the hops, as Gemini billed
them. A hop after the first is sent uncached: the tools found are new declarations, and a request
reading a cachedContent may not declare tools (prompt_cache.py).
"""

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from proxy.from_gemini.model_turn import SEARCH_RESULT, ModelTurn
from proxy.from_gemini.usage import SUMMED, added_usage
from proxy.tools.prepare_tools import PreparedTools
from proxy.tools.tool_search import SearchError, search
from proxy.wire.gemini import first_candidate_parts

Chunk = dict[str, Any]
MAX_SEARCH_HOPS = 8  # searches in a row: past them the answer ends with the last search answered


def runs_searches(tools: PreparedTools) -> bool:
    return any(kind != "client" for kind in tools.searches.values())


def run_search(tools: PreparedTools, call: dict[str, Any]) -> dict[str, Any]:
    """One search, as the part that carries its result: the tools found are declared in `tools` (the
    request's) and loaded in its deferral; `response` is the functionResponse Gemini is given."""
    kind = tools.searches[call["name"]]
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    deferral = tools.deferral
    found: list[str] = []
    error: SearchError | None = None
    try:
        text = args.get("query", args.get("pattern"))  # (Anthropic's docs show `pattern` for the regex tool)
        found = search(deferral.entries, kind, text, args.get("limit")) if deferral else []
    except SearchError as e:
        error = e
    declared = tools.load(deferral.definitions(found)) if found else []
    if deferral is not None:
        deferral.loaded |= set(found)
    described = [{"name": d["name"], "description": d.get("description", "")} for d in declared]
    already = [n for n in found if tools.names.to_gemini(n) not in {d["name"] for d in declared}]
    response: dict[str, Any] = ({"error": str(error)} if error else
                                {"tools": described + [{"name": tools.names.to_gemini(n), "declared": "already"}
                                                       for n in already]} if found else
                                {"tools": [], "note": "No deferred tool matched; try other words."})
    fr: dict[str, Any] = {"name": call["name"], "response": response}
    if call.get("id"):
        fr["id"] = call["id"]
    return {SEARCH_RESULT: {"found": found, "error_code": error.code if error else None,
                            "response": {"functionResponse": fr}}}


def _finish_of(chunk: Chunk) -> str | None:
    cands = chunk.get("candidates") or []
    return cands[0].get("finishReason") if cands and isinstance(cands[0], dict) else None


def _without_finish(chunk: Chunk) -> Chunk:
    out = dict(chunk)
    out["candidates"] = [{k: v for k, v in out["candidates"][0].items() if k not in ("finishReason",
                                                                                   "finishMessage")}]
    return out


def _with_usage(chunk: Chunk, before: dict[str, Any]) -> Chunk:
    """The chunk with the earlier hops' usage added to its own (Gemini counts each hop alone)."""
    usage = chunk.get("usageMetadata")
    if not before or not isinstance(usage, dict):
        return chunk
    return {**chunk, "usageMetadata": added_usage(usage, before)}


def _results_chunk(parts: list[dict[str, Any]]) -> Chunk:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}


async def searched(first: Awaitable[AsyncIterator[Chunk]], again: Callable[[dict[str, Any]], Awaitable[
        AsyncIterator[Chunk]]], body: dict[str, Any], tools: PreparedTools | None) -> AsyncIterator[Chunk]:
    """The answer's chunks across its hops. `first` is the first hop opened (its failure to open is
    raised here, before any chunk); `again(body)` opens a later hop uncached; `body` is the request
    without a cache."""
    chunks = await first
    if tools is None or not runs_searches(tools):  # (None: a protocol with no hosted tool search)
        return chunks
    return _hops(chunks, again, body, tools)


async def _hops(chunks: AsyncIterator[Chunk], again: Callable[[dict[str, Any]], Awaitable[AsyncIterator[Chunk]]],
                body: dict[str, Any], tools: PreparedTools) -> AsyncIterator[Chunk]:
    contents = list(body.get("contents") or [])
    used: dict[str, Any] = {}
    for hop in range(MAX_SEARCH_HOPS + 1):
        turn, next_chunks = ModelTurn(), None
        try:
            async for chunk in chunks:
                for part in first_candidate_parts(chunk):
                    turn.add(part)
                finish = _finish_of(chunk)
                if finish is None:
                    yield _with_usage(chunk, used)
                    continue
                calls = [p["functionCall"] for p in turn.parts if isinstance(p.get("functionCall"), dict)]
                searches = [c for c in calls if tools.searches.get(c.get("name", "")) not in (None, "client")]
                if not searches:
                    yield _with_usage(chunk, used)
                    continue
                results = [run_search(tools, c) for c in searches]
                if len(searches) < len(calls) or finish != "STOP" or hop == MAX_SEARCH_HOPS:
                    # the answer ends here: its searches answered, then its finish
                    yield _with_usage(_without_finish(chunk), used)
                    yield _results_chunk(results)
                    yield _with_usage({"candidates": [{"content": {"role": "model", "parts": []}, "index": 0,
                                                       "finishReason": finish}],
                                       **({"usageMetadata": chunk["usageMetadata"]} if "usageMetadata" in chunk
                                          else {})}, used)
                    continue
                yield _with_usage(_without_finish(chunk), used)
                yield _results_chunk(results)
                usage = chunk.get("usageMetadata") if isinstance(chunk.get("usageMetadata"), dict) else None
                used = {k: v for k, v in (added_usage(used, usage) or {}).items() if k in SUMMED}
                contents += [{"role": "model", "parts": copy.deepcopy(turn.parts)},
                             {"role": "user", "parts": [r[SEARCH_RESULT]["response"] for r in results]}]
                again_body = {**body, "contents": contents, "tools": tools.gemini_tools()}
                next_chunks = again(again_body)
                break
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
        if next_chunks is None:
            return
        chunks = await next_chunks


async def _one(answer: Awaitable[Chunk]) -> AsyncIterator[Chunk]:
    yield await answer


async def searched_whole(first: Awaitable[Chunk], again: Callable[[dict[str, Any]], Awaitable[Chunk]],
                         body: dict[str, Any], tools: PreparedTools | None) -> list[Chunk]:
    """The same over whole answers (no stream): the chunks a translator is fed, in order."""
    if tools is None or not runs_searches(tools):
        return [await first]
    async def first_stream() -> AsyncIterator[Chunk]:
        return _one(first)

    async def again_stream(b: dict[str, Any]) -> AsyncIterator[Chunk]:
        return _one(again(b))

    return [chunk async for chunk in await searched(first_stream(), again_stream, body, tools)]
