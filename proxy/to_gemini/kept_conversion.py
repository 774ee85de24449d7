"""A stateless client's history converted once per client scope (issue 62).

An agent that keeps no state with the proxy (Codex with `store: false`, Claude Code, every Chat
client) sends its whole history on every turn: the turn before's items again, and the answer's
call and its results after them. Their conversion to Gemini's contents was a fifth of a large
request's instructions, each turn the same work as the turn before plus a little.

So the history builder's state after a request's items (input_to_contents.py's `_Builder`, before
its end closes what is pending) is kept per client scope, and a later request whose items begin
with the very same items, converted with the same tool names and the same call records, continues
from it: only the items after them are converted. The request shares the kept turns (but for the
last one's dict and parts list, which its items may grow) when no repair could change a part or a turn
in place (repair_history.Survey.in_place: the front-ends' own histories on most models); otherwise it
gets a copy deep enough for the repairs (they change parts and turns in place, and each request's
repairs note in its own journal what they changed). What is kept is never changed: the conftest
holds every kept state to a fresh conversion after each test, so a step that changed a shared turn
in place would show there. The state after the new items is kept in the same way, sharing the kept
turns that did not change.

Per client scope (another tenant's identical history is converted again; the items a scope matches
are its own kept ones, wire/resent_items.py), its RECENT_PER_SCOPE latest (an agent and its
subagents interleave their turns), within CONVERSIONS_BYTES, counted in gtp_cache_bytes{cache=
"conversions"}. tests/shared_tools_check.py checks after every test that each kept state is what a
fresh conversion of its items gives.
"""

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proxy.signatures.call_record import CallRecord
from proxy.to_gemini.repair_history import Survey
from proxy.wire.resent_items import SizedLRU

# All scopes together: a large agent history's state is 50-70 KB of objects, so about sixty
# conversations in progress.
CONVERSIONS_BYTES = 4 * 1024 * 1024
RECENT_PER_SCOPE = 4
# A history this short is converted whole, as before: keeping its state costs about what it saves.
MIN_ITEMS = 8
# What a kept state is counted for (measured by tests/test_kept_conversion.py): each turn's dict and
# parts list, each part's dict and its functionCall/functionResponse dict, the items' slots.
CONTENT_BYTES = 400
PART_BYTES = 700
ITEM_BYTES = 16
OVERHEAD = 1024

Part = dict[str, Any]
Content = dict[str, Any]


@dataclass(slots=True, eq=False)
class Snapshot:
    """The builder's state after `items`, as converted with `names` (ToolNames' client-to-Gemini map)
    and `records` (each call record it looked up, None where there was none). Never handed out."""

    items: list[Any]
    names: dict[str, str]
    records: dict[Any, CallRecord | None]
    contents: list[Content]
    system: list[Part]
    pending: list[tuple[str, str, str | None]]
    outputs: dict[str, Part]
    model_open: bool
    search: str  # the latest tool search's id (an output without a call_id answers it)
    head: Survey  # of all its turns but the last (the one the next items may still grow)
    size: int = 0

    def __post_init__(self) -> None:
        parts = sum(len(c["parts"]) for c in self.contents) + len(self.outputs) + len(self.system)
        self.size = (OVERHEAD + CONTENT_BYTES * len(self.contents) + PART_BYTES * parts
                     + ITEM_BYTES * (len(self.items) + len(self.records)))

    def continues(self, items: list[Any], calls: Mapping[Any, CallRecord], names: Mapping[str, str]) -> bool:
        """Whether `items` begin with this state's (the same objects, or equal ones: a route may make
        an item anew, Anthropic's system prompt), and their calls and names are as they were."""
        n = len(self.items)
        if len(items) < n:
            return False
        if not all(map(operator.is_, items[:n], self.items)) and any(
                a is not b and a != b for a, b in zip(items, self.items, strict=False)):
            return False
        if names != self.names:
            return False
        get = calls.get
        return all(get(cid) == rec for cid, rec in self.records.items())


class _Scope:
    __slots__ = ("size", "states")

    def __init__(self, states: list[Snapshot]) -> None:
        self.states = states
        self.size = sum(s.size for s in states)


kept_conversions = SizedLRU(CONVERSIONS_BYTES)


def find(scope: str, items: list[Any], calls: Mapping[Any, CallRecord], names: Mapping[str, str]) -> Snapshot | None:
    """The scope's kept state that `items` continue, or None."""
    if len(items) < MIN_ITEMS:
        return None
    found = kept_conversions.get(scope)
    if found is None:
        return None
    return next((s for s in found.states if s.continues(items, calls, names)), None)


def keep(scope: str, state: Snapshot, replaces: Snapshot | None) -> None:
    """Keep `state` (of MIN_ITEMS items or more: the caller builds none of fewer) as the scope's latest;
    the state it continued (`replaces`) goes: the next turn continues this one."""
    if state.size > CONVERSIONS_BYTES // 4:
        return
    found = kept_conversions.get(scope)
    others = [s for s in found.states if s is not replaces] if found is not None else []
    kept_conversions.put(scope, _Scope([state, *others][:RECENT_PER_SCOPE]))


def private_part(part: Part) -> Part:
    """A part the repairs may change: a call's or a result's own dict, and its own functionCall /
    functionResponse (repair_history.py sets their ids and replaces a response; the sentinel signs a
    call). What they hold (arguments, a response's value, media) and the other parts (text, media) are
    shared: nothing changes them in place."""
    if "functionCall" not in part and "functionResponse" not in part:
        return part
    out = dict(part)
    call = out.get("functionCall")
    if type(call) is dict:
        out["functionCall"] = dict(call)
    answer = out.get("functionResponse")
    if type(answer) is dict:
        out["functionResponse"] = dict(answer)
    return out


def private_contents(contents: list[Content]) -> list[Content]:
    """Turns the repairs may change: each its own dict and parts list, each part private_part's."""
    return [{**c, "parts": [private_part(p) for p in c["parts"]]} for c in contents]
