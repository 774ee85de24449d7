"""Apply a session's tool context to a Gemini request body: the one rewrite the interceptor and
the front-end's native paths share (ARCHITECTURE.md "Rules of thumb").

- tools: the session's functionDeclarations replace the app's own (or are merged with them); its
  toolConfig goes along;
- history: placeholder turns become the captured rounds (session/placeholders.py);
- repairs, with or without a session: the app's schemas sanitized (session/app_tools.py), the
  shared history repairs (to_gemini/repair_history.py), and the sentinel on the current turn's
  first unsigned functionCall on gemini-3.

The body must be camelCase and checked by the Gemini wire model (wire/gemini.py) first.
"""

import copy
from typing import Any

from proxy import fast_json
from proxy.session.app_tools import declared_names, note_repairs, repair_app_tools
from proxy.session.placeholders import DEFAULT_PLACEHOLDER, rewrite_history
from proxy.session.session_tools import ToolContext
from proxy.signatures.sentinel import requires_signatures, sign_current_turn
from proxy.to_gemini.repair_history import Survey, repair_history
from proxy.tools import claude_schema
from proxy.tools.call_ids import needs_call_ids


def apply_tool_context(body: dict[str, Any], ctx: ToolContext | None, model: str, *, merge: bool = False,
                       placeholder: str = DEFAULT_PLACEHOLDER, result_parts: bool | None = None,
                       placeholders: int | None = None) -> dict[str, Any]:
    """The request with the session's tools, rewritten history and repairs; `body` is not modified.
    `placeholders`: the placeholder turns in its contents, when the caller has counted them
    (placeholder_count, for the store's rounds): none spares rewrite_history the same search."""
    out = apply_session_tools(body, ctx, merge=merge, model=model)
    contents = out.pop("contents", None) or []
    if placeholders != 0:
        contents = rewrite_history(contents, ctx.rounds if ctx else [], placeholder, model, ids=needs_call_ids(model))
    survey = Survey(contents)
    if survey.in_place(model, result_parts, signs=requires_signatures(model)):
        contents = _own_tool_turns(contents)
    else:  # the repairs only put new turns in the list (merged, reordered): the app's turns are shared
        contents = list(contents)
    contents = repair_history(contents, model, result_parts=result_parts, survey=survey)
    sign_current_turn(contents, model)
    out["contents"] = contents
    return out


def apply_session_tools(body: dict[str, Any], ctx: ToolContext | None, *, merge: bool = False,
                        model: str = "") -> dict[str, Any]:
    """The request with the session's tools and toolConfig, the app's own schemas repaired (and in
    the subset `model` takes: tools/claude_schema.py); its contents as they were (the addon calls this
    alone for a history it keeps as bytes, intercept/text_history.py). `body` is not modified."""
    out = copy.copy(body)
    app = out.pop("tools", None) or []
    config = out.pop("toolConfig", None)
    if ctx is not None and ctx.declarations:
        session_names = {d["name"] for d in ctx.declarations}
        if merge:
            note_repairs(app, dropped=session_names)
            mine = [dict(t, functionDeclarations=[d for d in t.get("functionDeclarations") or []
                                                  if d.get("name") not in session_names])
                    for t in repair_app_tools(app)]
            mine = [t for t in mine if t.get("functionDeclarations") or len(t) > 1]
            tools = mine + [{"functionDeclarations": ctx.declarations}]
        else:  # the app's tools are not sent: nothing of theirs is repaired
            tools = [{"functionDeclarations": ctx.declarations}]
            config = None  # the app's config may name functions that are gone
        if ctx.tool_config:
            config = ctx.tool_config  # the store hands each request its own copy: nothing to copy here
    else:
        note_repairs(app)
        tools = repair_app_tools(app)
    if tools:
        out["tools"] = claude_schema.for_model(tools, model)
    if config is not None and declared_names(tools):
        out["toolConfig"] = config
    return out


# The parts the history repairs and the sentinel change in place (repair_history.py, sentinel.py):
# a turn without any of them is only ever read, or replaced by a new dict when turns are merged.
_TOOL_PARTS = frozenset({"functionCall", "functionResponse", "toolCall", "toolResponse"})


def _own_tool_turns(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A new list of the contents in which each turn holding a tool part is a copy of its own (a JSON
    round trip, several times faster than deepcopy), so the repairs never touch the app's body: the
    caller compares the result with it to send the app's own bytes when nothing changed. Text turns
    (most of a long history) are shared, not copied. Only made when a repair will change a turn in
    place (Survey.in_place): Gemini CLI's calls carry no ids and its results are text, so its
    history is usually only read (a 50-turn agent history's copy cost about 60 us a request)."""
    out = list(contents)
    tool_turns = [i for i, c in enumerate(out) if any(not _TOOL_PARTS.isdisjoint(p) for p in c.get("parts") or ())]
    if tool_turns:
        for i, copied in zip(tool_turns, fast_json.loads(fast_json.dumps([out[i] for i in tool_turns])), strict=True):
            out[i] = copied
    return out
