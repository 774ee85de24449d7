"""Google Search in Gemini's answer -> what OpenAI clients see, and what goes back into history.

- `toolCall`/`toolResponse` parts (Gemini 3 with `includeServerSideToolInvocations`): the search
  Gemini ran itself. Each becomes a Responses `web_search_call` item; the parts themselves are
  kept exactly as sent (ids, `thoughtSignature`) in a record under the item's id, so a stateless
  client's replayed item puts them back, and on the next function call's record, for Chat clients.
- `groundingMetadata`: the sources. Its supports mark answer spans by UTF-8 *byte* offsets
  (checked against the segment's own text when Gemini sends it); OpenAI's `url_citation`
  annotations count characters of one message's text.
"""

import bisect
import dataclasses
import logging
from typing import Any

from proxy import fast_json, ids
from proxy.errors import ProxyError
from proxy.signatures.call_record import CallRecord

log = logging.getLogger(__name__)
SEARCH_TOOL_TYPES = ("GOOGLE_SEARCH_WEB", "GOOGLE_SEARCH_IMAGE")
SERVER_PARTS = ("toolCall", "toolResponse")


def is_server_part(part: dict[str, Any]) -> bool:
    return server_part_key(part) is not None


def server_part_key(part: dict[str, Any]) -> tuple[str, Any] | None:
    """("toolCall" | "toolResponse", id): how a replayed part is recognised (never sent twice)."""
    for kind in SERVER_PARTS:
        if isinstance(part.get(kind), dict):
            return kind, part[kind].get("id")
    return None


class PartsBeforeCall:
    """Server-side parts seen since the last function call: they ride on the next call's record."""

    def __init__(self) -> None:
        self.parts: list[dict[str, Any]] = []

    def hold(self, part: dict[str, Any]) -> bool:
        """Keep `part` if it is a server-side part (a search's toolCall or toolResponse; any other
        server tool is refused); False for any other part."""
        call = part.get("toolCall")  # (is_server_part's test, inline: every part of every answer comes here)
        if isinstance(call, dict):
            require_search(call)
        elif not isinstance(part.get("toolResponse"), dict):
            return False
        self.add(part)
        return True

    def add(self, part: dict[str, Any]) -> None:
        self.parts.append(fast_json.copied(part))

    def onto(self, record: CallRecord) -> CallRecord:
        if not self.parts:
            return record
        record, self.parts = dataclasses.replace(record, server_parts=self.parts), []
        return record


def require_search(call: dict[str, Any]) -> None:
    """Server-side tools other than search have no OpenAI item here: the answer is refused."""
    kind = call.get("toolType")
    if kind not in SEARCH_TOOL_TYPES:
        raise ProxyError(f"Gemini answered with a server-side tool call of type {kind!r}, which this proxy cannot "
                         "represent; the answer is refused rather than passed on without it.", status=502,
                         type="server_error", code="unsupported_answer_part")


def search_call(part: dict[str, Any]) -> dict[str, Any]:
    """The `web_search_call` item (in progress) for a toolCall part."""
    require_search(part["toolCall"])
    return search_item(_queries(part["toolCall"].get("args") or {}))


def search_item(queries: list[str], status: str = "in_progress") -> dict[str, Any]:
    action: dict[str, Any] = {"type": "search", "query": queries[0] if queries else ""}
    if len(queries) > 1:
        action["queries"] = queries
    return {"id": ids.web_search_id(), "type": "web_search_call", "status": status, "action": action}


def _queries(args: dict[str, Any]) -> list[str]:
    found = args.get("queries")
    if isinstance(found, list):
        return [q for q in found if isinstance(q, str)]
    return [args["query"]] if isinstance(args.get("query"), str) else []


def grounding_queries(grounding: dict[str, Any] | None) -> list[str]:
    found = (grounding or {}).get("webSearchQueries")
    return [q for q in found if isinstance(q, str)] if isinstance(found, list) else []


def hosted_record(item_id: str, parts: list[dict[str, Any]]) -> CallRecord:
    """What a web_search_call item replays: Gemini's own parts (none for a search seen only in
    groundingMetadata: its answer's text is all the history holds)."""
    gemini_id = next((p["toolCall"].get("id") for p in parts if isinstance(p.get("toolCall"), dict)), None)
    return CallRecord(item_id, "web_search", "", gemini_id, None, server_parts=parts)


def citations(grounding: dict[str, Any] | None, texts: list[str]) -> list[list[dict[str, Any]]]:
    """Responses `url_citation` annotations for each of `texts` (the answer's messages, in order)."""
    out: list[list[dict[str, Any]]] = [[] for _ in texts]
    if not grounding or not texts:
        return out
    whole = "".join(texts)
    data = whole.encode()
    starts, at = [], 0
    for t in texts:
        starts.append(at)
        at += len(t)
    chunks = grounding.get("groundingChunks") if isinstance(grounding.get("groundingChunks"), list) else []
    for support in grounding.get("groundingSupports") or []:
        seg = support.get("segment") if isinstance(support, dict) else None
        span = _span(whole, data, seg) if isinstance(seg, dict) else None
        if span is None:
            log.info("a grounding support could not be placed in the answer's text: no citation for it")
            continue
        k = bisect.bisect_right(starts, span[0]) - 1
        start, end = span[0] - starts[k], min(span[1], starts[k] + len(texts[k])) - starts[k]
        for ci in support.get("groundingChunkIndices") or []:
            web = chunks[ci].get("web") if isinstance(ci, int) and 0 <= ci < len(chunks) and isinstance(
                chunks[ci], dict) else None
            if isinstance(web, dict) and isinstance(web.get("uri"), str):
                out[k].append({"type": "url_citation", "start_index": start, "end_index": end, "url": web["uri"],
                               "title": web.get("title") or web.get("domain") or web["uri"]})
    return out


def _span(whole: str, data: bytes, seg: dict[str, Any]) -> tuple[int, int] | None:
    """The segment as character offsets into `whole`: its byte offsets when they hold its text,
    else where its text first occurs."""
    lo, hi, text = seg.get("startIndex", 0), seg.get("endIndex"), seg.get("text")
    if isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi <= len(data):
        start = len(data[:lo].decode("utf-8", "ignore"))
        end = len(data[:hi].decode("utf-8", "ignore"))
        if start < end and (not isinstance(text, str) or whole[start:end] == text):
            return start, end
    if isinstance(text, str) and text and (found := whole.find(text)) >= 0:
        return found, found + len(text)
    return None


def web_sources(grounding: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The pages a search grounded the answer on, as `web_search_call.action.sources` lists them."""
    chunks = (grounding or {}).get("groundingChunks")
    out, seen = [], set()
    for chunk in chunks if isinstance(chunks, list) else []:
        web = chunk.get("web") if isinstance(chunk, dict) else None
        if isinstance(web, dict) and isinstance(web.get("uri"), str) and web["uri"] not in seen:
            seen.add(web["uri"])
            out.append({"type": "url", "url": web["uri"]})
    return out


def chat_annotations(grounding: dict[str, Any] | None, text: str) -> list[dict[str, Any]]:
    """Chat's `message.annotations`: the same citations, nested as the Chat API has them."""
    return [{"type": "url_citation", "url_citation": {k: a[k] for k in ("start_index", "end_index", "title", "url")}}
            for a in citations(grounding, [text])[0]]
