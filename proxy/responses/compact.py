"""`POST /v1/responses/compact`: a long conversation made short enough to continue.

The conversation (the stored chain behind `previous_response_id`, then `input`) is cut before its
last user message. What comes after the cut is kept -- so every call still waiting for its output,
and every call/output pair of the current exchange, stays whole. What comes before is told to Gemini
as a transcript and replaced by its summary, sealed in a `compaction` item (the same AES-GCM keys and
client scope as the signature carrier: only this deployment, for this client, reads it). The item
also carries the kept calls' records, so their thought signatures reach Gemini on the next turn even
from a stateless client. The output has OpenAI's shape: the user messages, then the kept exchange,
then the compaction item. Fed back as `input`, it continues the conversation: the summary opens the
history (input_to_contents puts a compaction's summary first, wherever the item stands).
"""

import time
from typing import Any

from aiohttp import web

from proxy import ids
from proxy.errors import ProxyError
from proxy.from_gemini.usage import map_usage
from proxy.responses.turn import as_items, open_compactions
from proxy.server.context import CONTEXT, Context, api_key_of, session_of
from proxy.server.errors import read_json, validate
from proxy.server.json_answer import json_answer
from proxy.store.base import SessionStore, stored_chain
from proxy.to_gemini.agent_message import agent_message_text
from proxy.to_gemini.input_to_contents import parse_input, unopened_compaction
from proxy.wire.gemini import checked, first_candidate_parts
from proxy.wire.responses import CompactionItem, CompactRequest, FunctionCallItem, FunctionCallOutputItem, MessageItem

PROMPT = ("Summarize the conversation transcript below for the assistant who will continue it without seeing "
          "it. Keep every fact, name, number, decision, tool result and open task that may matter later; "
          "leave out small talk. Write only the summary.\n\n")


async def items_at(store: SessionStore, session: str, response_id: str) -> list[dict[str, Any]] | None:
    """The items of a stored chain, oldest first (each turn's input, then its output); None when unknown."""
    chain = await stored_chain(store, session, response_id, "compacted")
    if chain is None or "interaction" in chain[-1].response:  # an interaction's id is not a response's
        return None
    for stored in chain:
        if stored.input is None:
            raise ProxyError(f"Response '{stored.id}' was stored before its input items were kept; compact with "
                             "the conversation as input instead.", param="previous_response_id")
    return [item for s in chain for item in (*as_items(s.input, s.id), *s.response.get("output", []))]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        kind = part.get("type")
        if isinstance(part.get("text"), str):
            out.append(part["text"])
        elif kind in ("input_image", "image_url"):
            out.append("[an image]")
        elif kind == "input_file":
            out.append(f"[a file: {part.get('filename') or part.get('file_id') or 'attached'}]")
        elif kind == "refusal":
            out.append(f"[refused: {part.get('refusal', '')}]")
    return " ".join(out)


def transcript(items: list[Any], summaries: dict[str, str]) -> str:
    """The dropped items as plain text for the summarizing model (no calls for it to pair up)."""
    lines = []
    for item in items:
        kind = item.type
        if isinstance(item, MessageItem):
            lines.append(f"{item.role}: {_text(item.content)}")
        elif isinstance(item, FunctionCallItem):
            lines.append(f"assistant called {item.name}({item.arguments}) [call {item.call_id}]")
        elif kind == "custom_tool_call":
            lines.append(f"assistant called {item.name} with: {item.input} [call {item.call_id}]")
        elif isinstance(item, FunctionCallOutputItem):
            lines.append(f"result of call {item.call_id}: {_text(item.output)}")
        elif kind == "web_search_call":
            lines.append(f"assistant searched the web: {(item.action or {}).get('query', '')}")
        elif kind == "agent_message":
            lines.append(agent_message_text(item, 0))
        elif kind == "compaction":
            lines.append(f"(summary of what came before) {summaries.get(item.encrypted_content, '')}")
    return "\n".join(line for line in lines if line.strip())


def _cut(items: list[Any]) -> int:
    """Where the kept part starts: at the last user message (0: nothing can be dropped)."""
    for i in range(len(items) - 1, -1, -1):
        if isinstance(items[i], MessageItem) and items[i].role == "user":
            return i
    return 0


async def _summarize(ctx: Context, model: str, text: str, instructions: str | None, key: str | None
                     ) -> tuple[str, dict[str, Any] | None]:
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": PROMPT + text}]}]}
    if instructions:
        body["systemInstruction"] = {"parts": [{"text": instructions}]}
    answer = checked(await ctx.upstream.generate(model, body, key))
    summary = "".join(p["text"] for p in first_candidate_parts(answer)
                      if isinstance(p.get("text"), str) and not p.get("thought")).strip()
    if not summary:
        raise ProxyError("Gemini gave no summary for the turns to compact; nothing was compacted. Try again.",
                         status=502, type="server_error", code="empty_summary")
    return summary, answer.get("usageMetadata")


async def compact_route(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    req = validate(CompactRequest, await read_json(request))
    session = session_of(request)
    history: list[Any] = []
    stored = 0  # how many items the stored chain gave, before the input's
    if req.previous_response_id:
        found = await items_at(ctx.store, session, req.previous_response_id)
        if found is None:
            raise ProxyError(f"Previous response with id '{req.previous_response_id}' not found.",
                             param="previous_response_id", code="previous_response_not_found")
        history, stored = found, len(found)
    if isinstance(req.input, str):
        history.append({"type": "message", "role": "user", "content": req.input})
    elif req.input:
        history.extend(req.input)
    if not history:
        raise ProxyError("Nothing to compact: give 'input', 'previous_response_id', or both.", param="input",
                         code="missing_required_parameter")
    items = parse_input(history)
    model, _tools, calls = await ctx.prepare(request, session, req.model, None, items)
    seal = ctx.seal(request, model)
    summaries, carried = open_compactions(seal, items)
    for n, item in enumerate(items):  # one that does not open is refused by name, as /v1/responses does
        if isinstance(item, CompactionItem) and item.encrypted_content not in summaries:
            if n >= stored:
                raise unopened_compaction(n - stored)
            raise ProxyError(f"A compaction item stored with '{req.previous_response_id}' no longer opens here "
                             "(sealed under a retired key); send its conversation as input.",
                             param="previous_response_id", code="invalid_encrypted_content")
    calls = {**carried, **calls}
    cut = _cut(items)
    # What the summary stands for: everything before the cut, and any earlier compaction (a summary
    # of a summary is folded in, never kept beside the new one).
    dropped = [i for n, i in enumerate(items) if n < cut or i.type == "compaction"]
    summary, usage = "", None
    if dropped and all(i.type == "compaction" for i in dropped):  # only earlier summaries: no need to ask
        summary = "\n\n".join(summaries.get(i.encrypted_content, "") for i in dropped)
    elif dropped:
        summary, usage = await _summarize(ctx, model, transcript(dropped, summaries), req.instructions,
                                          api_key_of(request))
    # OpenAI's shape: the user messages, then what the current exchange still needs, then the
    # compaction item last. Each kept item as the Responses API gives items (ids, statuses).
    users = [raw for raw, i in zip(history[:cut], items[:cut], strict=True)
             if isinstance(i, MessageItem) and i.role == "user"]
    kept = [raw for raw, i in zip(history[cut:], items[cut:], strict=True) if i.type != "compaction"]
    kept_calls = [calls[i.call_id] for i in items[cut:] if getattr(i, "call_id", None) in calls
                  and i.type in ("function_call", "custom_tool_call")]
    compaction = {"type": "compaction", "id": ids.compaction_id(),
                  "encrypted_content": seal.seal_compaction(summary, kept_calls)}
    return json_answer({"id": ids.response_id(), "object": "response.compaction",
                        "output": [*as_items(users + kept), compaction], "created_at": int(time.time()),
                        "usage": map_usage(usage)})
