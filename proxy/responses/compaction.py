"""Compaction: a long conversation made short enough to continue, for `POST /v1/responses/compact`
(compact.py) and for `context_management: [{"type": "compaction", "compact_threshold": N}]` on
`POST /v1/responses` (turn.py), with one summariser, one seal and one scope.

The conversation is cut before its last user message. What comes after the cut is kept -- so every
call still waiting for its output, and every call/output pair of the current exchange, stays whole.
What comes before is told to Gemini as a transcript and replaced by its summary, sealed in a
`compaction` item (the same AES-GCM keys and client scope as the signature carrier: only this
deployment, for this client, reads it). The item also carries the kept calls' records, so their
thought signatures reach Gemini on the next turn even from a stateless client. /compact keeps the
user messages as they were (OpenAI's shape: the user messages, then the kept exchange, then the item).

A compaction made on create stands for the whole input of its turn (OpenAI: "the latest compaction
item carries the necessary context"): it also seals the items it kept and a digest of the input it
replaced. A stateless client appends the output to its input as usual; the next request's items
before that compaction item are then either that same input (dropped: the item holds what was kept
of it) or nothing (the client pruned them, as OpenAI's guide allows) -- anything else is history the
client changed, kept as sent.
"""

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from proxy import ids
from proxy.errors import ProxyError
from proxy.server.context import Context
from proxy.signatures.call_record import CallRecord
from proxy.signatures.carrier import CarrierSeal
from proxy.store.base import SessionStore, stored_chain
from proxy.to_gemini.agent_message import agent_message_text
from proxy.to_gemini.conversation import Conversation
from proxy.to_gemini.input_to_contents import unopened_compaction
from proxy.to_gemini.token_estimate import estimate_tokens
from proxy.wire.gemini import checked, first_candidate_parts
from proxy.wire.responses import (
    CompactionItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputItem,
    MessageItem,
    ResponsesRequest,
)

PROMPT = ("Summarize the conversation transcript below for the assistant who will continue it without seeing "
          "it. Keep every fact, name, number, decision, tool result and open task that may matter later; "
          "leave out small talk. Write only the summary.\n\n")


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


def cut_at(items: list[Any]) -> int:
    """Where the kept part starts: at the last user message (0: nothing can be dropped)."""
    for i in range(len(items) - 1, -1, -1):
        if isinstance(items[i], MessageItem) and items[i].role == "user":
            return i
    return 0


async def summarize(ctx: Context, model: str, text: str, instructions: str | None, key: str | None
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


def open_compactions(seal: CarrierSeal, items: list[InputItem]) -> tuple[dict[str, str], dict[str, CallRecord]]:
    """The summaries of the compaction items among `items` (by their content) and the call records
    they carry; one that does not open is left out, and input_to_contents refuses it by name."""
    summaries: dict[str, str] = {}
    calls: dict[str, CallRecord] = {}
    for item in items:
        if isinstance(item, CompactionItem) and item.encrypted_content not in summaries:
            opened = seal.open_compaction(item.encrypted_content)
            if opened is not None:
                summaries[item.encrypted_content], found = opened
                calls.update(found)
    return summaries, calls


def as_items(items: list[dict[str, Any]], owner: str | None = None) -> list[dict[str, Any]]:
    """Items as the Responses API gives them (GET .../input_items, a compaction's output): each with an
    id and a status, a message's text as content parts (the client's own fields stay). The ids of a
    stored response's input items are derived from its id (`owner`), so they need not be stored and
    read the same every time; without an owner they are fresh."""
    out = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            out.append(item)
            continue
        kind = item.get("type", "message")
        prefix = "msg" if kind == "message" else "fc"
        made = ids.derived(prefix, owner, n) if owner else ids.message_id() if kind == "message" else (
            ids.function_item_id())
        item = {"id": made, "type": kind, "status": "completed", **{k: v for k, v in item.items() if v is not None}}
        if kind == "message" and isinstance(item.get("content"), str):
            assistant = item.get("role") == "assistant"
            part = ({"type": "output_text", "text": item["content"], "annotations": []} if assistant
                    else {"type": "input_text", "text": item["content"]})
            item["content"] = [part]
        elif kind == "message" and isinstance(item.get("content"), list):
            item["content"] = [{"annotations": [], **c} if isinstance(c, dict) and c.get("type") == "output_text"
                               else c for c in item["content"]]
        out.append(item)
    return out


# Without compact_threshold: 80 % of the 1,048,576-token input window of Gemini 2.5 and 3 (OpenAI names
# no default in its types; a threshold past the window would never compact before Gemini refuses).
DEFAULT_THRESHOLD = 838_860


def compaction_threshold(req: ResponsesRequest) -> int | None:
    """The rendered-token count past which this request compacts; None when it did not ask. A kind of
    context management other than compaction is a 400 (never ignored)."""
    threshold = None
    for i, entry in enumerate(req.context_management or []):
        if entry.type != "compaction":
            raise ProxyError(f"Invalid value for 'context_management[{i}].type': {entry.type!r}; the supported "
                             "value is 'compaction'.", param=f"context_management[{i}].type", code="invalid_value")
        if entry.compact_threshold is not None and entry.compact_threshold < 1:
            raise ProxyError(f"Invalid 'context_management[{i}].compact_threshold': expected a positive number of "
                             "tokens.", param=f"context_management[{i}].compact_threshold", code="invalid_value")
        value = entry.compact_threshold or DEFAULT_THRESHOLD
        threshold = value if threshold is None else min(threshold, value)
    return threshold


def rendered_tokens(conv: Conversation) -> int:
    """The rendered-token count compact_threshold is checked against (token_estimate.py)."""
    return estimate_tokens(conv.system, conv.contents)


def refuse_unopened(items: list[InputItem], summaries: dict[str, str], stored: int, previous: str | None) -> None:
    """A compaction item among `items` that does not open is refused by name (`stored`: how many of
    them came from the chain behind `previous`, before the input's)."""
    for n, item in enumerate(items):
        if isinstance(item, CompactionItem) and item.encrypted_content not in summaries:
            if n >= stored:
                raise unopened_compaction(n - stored)
            raise ProxyError(f"A compaction item stored with '{previous}' no longer opens here (sealed under a "
                             "retired key); send its conversation as input.", param="previous_response_id",
                             code="invalid_encrypted_content")


def digest(items: list[Any]) -> str:
    """What a compaction made on create stands for: its input's items, as the client sent them."""
    return hashlib.sha256(json.dumps(items, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                     default=str).encode()).hexdigest()[:32]


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


@dataclass
class Compacted:
    output: list[dict[str, Any]]      # the user messages, the kept exchange, then the compaction item
    compaction: dict[str, Any]
    usage: dict[str, Any] | None      # the summariser's usageMetadata (None: nothing was summarised)


async def compact(ctx: Context, key: str | None, seal: CarrierSeal, model: str, history: list[Any],
                  items: list[InputItem], calls: dict[str, CallRecord], summaries: dict[str, str],
                  instructions: str | None, covers: list[Any] | None = None, everything: bool = False) -> Compacted:
    """Compact `history` (raw items, parsed as `items`; every compaction item among them opened).
    `covers`: on create, the request's input as the client sent it (what the item stands for).
    `everything`: nothing is kept beside the summary (Codex's compaction_trigger: it keeps only its
    own messages and the item, so a kept exchange would be lost)."""
    cut = len(items) if everything else cut_at(items)
    # What the summary stands for: everything before the cut, and any earlier compaction (a summary
    # of a summary is folded in, never kept beside the new one).
    dropped = [i for n, i in enumerate(items) if n < cut or i.type == "compaction"]
    summary, usage = "", None
    if dropped and all(i.type == "compaction" for i in dropped):  # only earlier summaries: no need to ask
        summary = "\n\n".join(summaries.get(i.encrypted_content, "") for i in dropped)
    elif dropped:
        summary, usage = await summarize(ctx, model, transcript(dropped, summaries), instructions, key)
    # /compact keeps the user messages before the cut as they were (OpenAI's shape); a compaction on
    # create stands for them too (OpenAI's is opaque), or a long first message would compact every turn.
    users = [] if covers is not None else [raw for raw, i in zip(history[:cut], items[:cut], strict=True)
                                           if isinstance(i, MessageItem) and i.role == "user"]
    kept = [raw for raw, i in zip(history[cut:], items[cut:], strict=True) if i.type != "compaction"]
    kept_calls = [calls[i.call_id] for i in items[cut:] if getattr(i, "call_id", None) in calls
                  and i.type in ("function_call", "custom_tool_call")]
    output = as_items(users + kept)
    content = (seal.seal_compaction(summary, kept_calls, output, digest(covers)) if covers is not None
               else seal.seal_compaction(summary, kept_calls))
    compaction = {"type": "compaction", "id": ids.compaction_id(), "encrypted_content": content}
    return Compacted([*output, compaction], compaction, usage)


def expand_compacted(seal: CarrierSeal, raw: list[Any]) -> list[Any]:
    """`raw` input with its latest compaction made on create standing for what it replaced: the items
    before it, when they are the input it was made from or nothing, become the items it kept."""
    for k in range(len(raw) - 1, -1, -1):
        item = raw[k]
        if not (isinstance(item, dict) and item.get("type") == "compaction"
                and isinstance(item.get("encrypted_content"), str)):
            continue
        whole = seal.open_compaction_whole(item["encrypted_content"])
        if whole is None or "items" not in whole:
            return raw  # another kind (or unopened: input_to_contents refuses it by name)
        if k and digest(raw[:k]) != whole.get("covers"):
            return raw  # history the client changed: kept as sent, the summary still first
        return [*whole["items"], item, *raw[k + 1:]]
    return raw
