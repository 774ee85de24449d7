"""What tests/conftest.py checks after every test: the tool lists wire/shared_tools.py keeps are
shared by later requests of any client key, so none may have been changed in place."""

from pydantic import BaseModel

from proxy.anthropic import to_items as anthropic_items
from proxy.anthropic.routes import CORE_TOOLS
from proxy.anthropic.to_items import tools_for_core
from proxy.chat import to_items as chat_items
from proxy.to_gemini import kept_conversion
from proxy.to_gemini.input_to_contents import INPUT_ITEM, fresh_state
from proxy.wire import resent_items, shared_tools
from proxy.wire.anthropic import MessagesRequest
from proxy.wire.chat import ChatRequest
from proxy.wire.json_body import parse_json

# The conversions resent_items.converted keeps beside a check: the check's key, the message's items.
_CONVERSIONS = {chat_items.KEPT_ITEMS: (ChatRequest, chat_items.message_items),
                anthropic_items.KEPT_ITEMS: (MessagesRequest, anthropic_items.message_items)}


def changed_resent_items() -> list[str]:
    """A kept history item (wire/resent_items.py: the item cache's, a recent history's) that no longer
    equals its text, or whose checked copies (parse_input's typed item, a request model's) no longer
    hold what was sent, or whose items a route kept (Chat's, Anthropic's) are no longer what its
    checked message gives: later requests of its client get the same objects."""
    kept = [(text, k) for (_, text), k in resent_items.kept_items.entries.items()]
    for recents in resent_items.recent_histories.entries.values():
        for h in recents.histories:
            starts = [0, *h.ends][:len(h.ends)]
            kept += [(h.text[a:b].lstrip(b"[, \t\r\n"), k) for a, b, k in zip(starts, h.ends, h.kept, strict=True)]
    out = []
    for text, k in kept:
        sent = parse_json(text)
        if k.value != sent:
            out.append(f"the kept item {text[:200]!r}")
        for by, checked in k.checked.items():
            if by in _CONVERSIONS:  # a route's items made of its checked message (resent_items.converted)
                check, convert = _CONVERSIONS[by]
                if [item.wire() for item in checked] != convert(0, k.checked[check]):
                    out.append(f"{by} of {text[:200]!r}")
                continue
            wire = checked.wire() if by == INPUT_ITEM else checked  # (a typed item, a TypedDict's, a model)
            if (wire.model_dump(by_alias=True, exclude_unset=True) if isinstance(wire, BaseModel) else wire) != sent:
                out.append(f"{by}'s checked copy of {text[:200]!r}")
    return out


def changed_shared_tools() -> list[str]:
    """What no longer equals the text it was parsed from: a kept list, or a wire model's checked
    copy of it (a TypedDict check gives what was sent; a pydantic model's, Anthropic's Tool, dumps
    back to it)."""
    out = []
    for text, kept in list(shared_tools._kept.items()):
        sent = parse_json(text)  # as the body was parsed: an integer past 64 bits stays exact
        if list(kept) != sent:
            out.append(f"the shared tool list {text[:200]!r}")
        out.extend(f"{model.__name__}'s checked copy of {text[:200]!r}" for model, checked in kept.checked.items()
                   if _sent_form(checked) != sent)
        core = kept.facts.get(CORE_TOOLS)  # Anthropic's tools as the core's, converted once
        if core is not None and list(core) != tools_for_core(kept.checked[MessagesRequest]):
            out.append(f"the core's copy of the Anthropic tools {text[:200]!r}")
    return out


def _sent_form(checked: list) -> list:
    return [t.model_dump(by_alias=True, exclude_unset=True) if isinstance(t, BaseModel) else t for t in checked]


def changed_kept_conversions() -> list[str]:
    """A kept history conversion (to_gemini/kept_conversion.py) that is no longer what a fresh conversion
    of its items gives, with its call records and tool names: later requests of its client continue it."""
    out = []
    for scope, kept in kept_conversion.kept_conversions.entries.items():
        for state in kept.states:
            fresh = fresh_state(state.items, {c: r for c, r in state.records.items() if r is not None}, state.names)
            for field in ("contents", "system", "pending", "outputs", "model_open", "search"):
                if getattr(fresh, field) != getattr(state, field):
                    out.append(f"the {field} of scope {scope!r}'s kept conversion of {len(state.items)} items")
            if any(getattr(fresh.head, f) != getattr(state.head, f) for f in fresh.head.__slots__):
                out.append(f"the survey of scope {scope!r}'s kept conversion of {len(state.items)} items")
    return out
