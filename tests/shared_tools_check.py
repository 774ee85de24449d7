"""What tests/conftest.py checks after every test: the tool lists wire/shared_tools.py keeps are
shared by later requests of any client key, so none may have been changed in place."""

from pydantic import BaseModel

from proxy.anthropic.routes import CORE_TOOLS
from proxy.anthropic.to_items import tools_for_core
from proxy.to_gemini.input_to_contents import INPUT_ITEM
from proxy.wire import resent_items, shared_tools
from proxy.wire.anthropic import MessagesRequest
from proxy.wire.json_body import parse_json


def changed_resent_items() -> list[str]:
    """A kept history item (wire/resent_items.py) that no longer equals its text, or whose typed item
    (parse_input's) no longer holds what was sent: later requests of its client get the same objects."""
    out = []
    for (_, text), kept in list(resent_items.kept_items.entries.items()):
        sent = parse_json(text)
        if kept.value != sent:
            out.append(f"the kept item {text[:200]!r}")
        for by, checked in kept.checked.items():
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
