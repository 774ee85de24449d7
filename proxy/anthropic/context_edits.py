"""Anthropic context editing (beta `context-management-2025-06-27`: `context_management.edits`),
applied to the Gemini contents the request becomes: Gemini has no server-side editing, so the proxy
does what Anthropic's server does before the prompt reaches the model, and reports each edit it
applied as Anthropic does (`context_management.applied_edits`). The client keeps its full history,
as with Anthropic (platform.claude.com/docs/en/build-with-claude/context-editing).

- `clear_tool_uses_20250919`: once `trigger` is passed (default 100,000 input tokens; or a number
  of tool uses), the oldest tool results beyond the `keep` most recent tool uses (default 3) are
  replaced by a placeholder, except the uses of `exclude_tools`; `clear_tool_inputs` (true, or tool
  names) also empties those calls' arguments -- but never in the current turn, whose calls Gemini 3
  checks against their thought signatures. With `clear_at_least`, nothing is cleared unless that
  many tokens would be.
- `clear_thinking_20251015`: what Gemini keeps of its thinking in history is the thought signature
  on each model turn's parts (thought text is never sent back); the signatures of all but the `keep`
  most recent assistant turns (default 1; `"all"` keeps every one) are removed -- again never in the
  current turn, which Gemini 3 validates -- and the turns get the documented sentinel where Gemini
  wants one.
- `compact_20260112` (beta `compact-2026-01-12`) and any other edit are refused with a 400 naming
  the edit: the proxy does not make Anthropic's compaction blocks, and an edit it ignored would be a
  silent no-op.

Token counts are the local estimate (to_gemini/token_estimate.py); the placeholder is the proxy's own
wording (Anthropic's is not published).
"""

from typing import Any

from proxy.errors import ProxyError
from proxy.signatures.sentinel import SENTINEL, sign_unsigned_turns
from proxy.to_gemini.token_estimate import estimate_tokens, part_tokens
from proxy.tools.tool_names import ToolNames

CLEARED = "[This tool result was cleared by context management to save context; run the tool again if needed.]"
DEFAULT_TRIGGER = {"type": "input_tokens", "value": 100_000}
DEFAULT_KEEP_TOOL_USES = 3
COMPACT_BETA = "compact-2026-01-12"


def _count(value: Any, kinds: tuple[str, ...], where: str) -> tuple[str, int]:
    """A `{type, value}` threshold, checked: a bad one is a 400 naming it."""
    if not (isinstance(value, dict) and value.get("type") in kinds and isinstance(value.get("value"), int)
            and not isinstance(value.get("value"), bool) and value["value"] >= 0):
        raise ProxyError(f"{where}: expected {{\"type\": {' or '.join(repr(k) for k in kinds)}, \"value\": a "
                         "non-negative integer}.", param=where)
    return value["type"], value["value"]


def _current_turn(contents: list[dict[str, Any]]) -> int:
    """Index of the last user content holding text (not only function responses): the current turn."""
    start = 0
    for i, c in enumerate(contents):
        if c.get("role") == "user" and any("text" in p for p in c.get("parts") or []):
            start = i
    return start


def check_edits(edits: Any) -> list[dict[str, Any]]:
    """The edits, each of a kind the proxy applies; anything else is a 400 naming it."""
    if edits is None:
        return []
    if not isinstance(edits, list):
        raise ProxyError("context_management.edits: expected a list of edits.", param="context_management.edits")
    for i, edit in enumerate(edits):
        kind = edit.get("type") if isinstance(edit, dict) else None
        where = f"context_management.edits[{i}]"
        if kind == "compact_20260112":
            raise ProxyError(f"{where}: compact_20260112 (beta {COMPACT_BETA}) is not supported by this proxy: it "
                             "cannot make Anthropic's compaction blocks. Use clear_tool_uses_20250919 or "
                             "clear_thinking_20251015, or compact on the client.", param=f"{where}.type")
        if kind not in ("clear_tool_uses_20250919", "clear_thinking_20251015"):
            raise ProxyError(f"{where}.type: {kind!r} is not a context management edit this proxy applies "
                             "(clear_tool_uses_20250919, clear_thinking_20251015).", param=f"{where}.type")
    return edits


def apply_edits(edits: list[dict[str, Any]], system: list[dict[str, Any]], contents: list[dict[str, Any]],
                names: ToolNames, model: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The contents with the edits applied (in order; the input is not changed) and the applied
    edits' report, as Anthropic's `context_management.applied_edits` lists them."""
    applied = []
    for i, edit in enumerate(edits):
        where = f"context_management.edits[{i}]"
        if edit["type"] == "clear_tool_uses_20250919":
            contents, report = _clear_tool_uses(edit, where, system, contents, names)
        else:
            contents, report = _clear_thinking(edit, where, contents, model)
        if report is not None:
            applied.append(report)
    return contents, applied


def _tool_uses(contents: list[dict[str, Any]]) -> list[tuple[int, int, int, int]]:
    """(model content, call part, user content, response part) of each call and its response, in order."""
    uses = []
    for i, c in enumerate(contents):
        if c.get("role") != "model" or i + 1 >= len(contents):
            continue
        calls = [j for j, p in enumerate(c.get("parts") or []) if "functionCall" in p]
        answers = [j for j, p in enumerate(contents[i + 1].get("parts") or []) if "functionResponse" in p]
        uses += [(i, j, i + 1, k) for j, k in zip(calls, answers, strict=False)]
    return uses


def _clear_tool_uses(edit: dict[str, Any], where: str, system: list[dict[str, Any]], contents: list[dict[str, Any]],
                     names: ToolNames) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    kind, limit = _count(edit.get("trigger") or DEFAULT_TRIGGER, ("input_tokens", "tool_uses"), f"{where}.trigger")
    _, keep = _count(edit.get("keep") or {"type": "tool_uses", "value": DEFAULT_KEEP_TOOL_USES}, ("tool_uses",),
                     f"{where}.keep")
    least = _count(edit["clear_at_least"], ("input_tokens",), f"{where}.clear_at_least")[1] if edit.get(
        "clear_at_least") else 0
    excluded = edit.get("exclude_tools") or []
    inputs = edit.get("clear_tool_inputs") or False
    if not (isinstance(excluded, list) and all(isinstance(n, str) for n in excluded)):
        raise ProxyError(f"{where}.exclude_tools: expected a list of tool names.", param=f"{where}.exclude_tools")
    if not (isinstance(inputs, bool) or isinstance(inputs, list) and all(isinstance(n, str) for n in inputs)):
        raise ProxyError(f"{where}.clear_tool_inputs: expected true, false or a list of tool names.",
                         param=f"{where}.clear_tool_inputs")
    uses = _tool_uses(contents)
    size = len(uses) if kind == "tool_uses" else estimate_tokens(system, contents)
    if size <= limit:
        return contents, None
    current = _current_turn(contents)
    out = [{**c, "parts": list(c.get("parts") or [])} for c in contents]
    cleared = tokens = 0
    for i, j, u, k in uses[:max(len(uses) - keep, 0)]:
        call = out[i]["parts"][j]["functionCall"]
        tool = names.client(call.get("name", ""))
        if tool in excluded:
            continue
        answer = out[u]["parts"][k]
        placeholder = {"functionResponse": {**{x: y for x, y in answer["functionResponse"].items() if x != "parts"},
                                            "response": {"output": CLEARED}}}
        if placeholder == answer:
            continue  # cleared before (a client that sends back what it was told)
        tokens += part_tokens(answer) - part_tokens(placeholder)
        out[u]["parts"][k] = placeholder
        if (inputs is True or isinstance(inputs, list) and tool in inputs) and i < current and call.get("args"):
            part = out[i]["parts"][j]
            emptied = {**part, "functionCall": {**call, "args": {}}}
            tokens += part_tokens(part) - part_tokens(emptied)
            out[i]["parts"][j] = emptied
        cleared += 1
    if not cleared or tokens < least:
        return contents, None
    return out, {"type": "clear_tool_uses_20250919", "cleared_tool_uses": cleared,
                 "cleared_input_tokens": max(tokens, 0)}


def _clear_thinking(edit: dict[str, Any], where: str, contents: list[dict[str, Any]], model: str
                    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    keep_spec = edit.get("keep", {"type": "thinking_turns", "value": 1})
    if keep_spec == "all" or keep_spec == {"type": "all"}:
        return contents, None
    _, keep = _count(keep_spec, ("thinking_turns",), f"{where}.keep")
    current = _current_turn(contents)
    turns = [i for i, c in enumerate(contents) if c.get("role") == "model"]
    older = [i for i in turns[:max(len(turns) - keep, 0)] if i < current]  # the current turn is Gemini's to check
    out = list(contents)
    cleared = removed = 0
    for i in older:
        parts = contents[i].get("parts") or []
        signed = [p for p in parts if p.get("thoughtSignature") not in (None, SENTINEL)]
        if not signed:
            continue
        removed += sum(len(p["thoughtSignature"]) for p in signed)
        out[i] = {**contents[i], "parts": [{k: v for k, v in p.items() if k != "thoughtSignature"}
                                           if p.get("thoughtSignature") not in (None, SENTINEL) else p
                                           for p in parts]}
        cleared += 1
    if not cleared:
        return contents, None
    out[:current] = [{**c, "parts": [dict(p) for p in c["parts"]]} if c.get("role") == "model" else c
                     for c in out[:current]]
    before = sum(len(p.get("thoughtSignature", "")) for c in out for p in c.get("parts") or [])
    sign_unsigned_turns(out, model)  # the sentinel where Gemini 3 wants a signature on a turn's first call
    added = sum(len(p.get("thoughtSignature", "")) for c in out for p in c.get("parts") or []) - before
    return out, {"type": "clear_thinking_20251015", "cleared_thinking_turns": cleared,
                 "cleared_input_tokens": max((removed - added) // 4, 0)}
