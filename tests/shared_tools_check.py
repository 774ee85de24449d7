"""What tests/conftest.py checks after every test: the tool lists wire/shared_tools.py keeps are
shared by later requests of any client key, so none may have been changed in place."""

from proxy.wire import shared_tools
from proxy.wire.json_body import parse_json


def changed_shared_tools() -> list[str]:
    """What no longer equals the text it was parsed from: a kept list, or a wire model's checked
    copy of it (a TypedDict check gives what was sent)."""
    out = []
    for text, kept in list(shared_tools._kept.items()):
        sent = parse_json(text)  # as the body was parsed: an integer past 64 bits stays exact
        if list(kept) != sent:
            out.append(f"the shared tool list {text[:200]!r}")
        out.extend(f"{model.__name__}'s checked copy of {text[:200]!r}" for model, checked in kept.checked.items()
                   if checked != sent)
    return out
