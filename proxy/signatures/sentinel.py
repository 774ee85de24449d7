"""Thought-signature rules (docs/wire.md#signatures)."""

from typing import Any

from proxy.journal import exchange

# Documented dummy value for calls Gemini did not produce (GEM-DOC thought-signatures#faqs;
# gemini-cli geminiChat.ts injects the same string).
SENTINEL = "skip_thought_signature_validator"


def requires_signatures(model: str) -> bool:
    """Gemini 3 validates signatures on the current turn's calls; 2.5 does not."""
    name = model.removeprefix("models/")
    return name.startswith("gemini-3")


def sign_unsigned_turns(contents: list[dict[str, Any]], model: str) -> None:
    """Give the first functionCall of each model turn the sentinel when no call in it is signed.

    Only the first call of a parallel batch carries a signature, so siblings stay unsigned.
    """
    if not requires_signatures(model):
        return
    for content in contents:
        if content.get("role") != "model":
            continue
        calls = [p for p in content.get("parts", []) if "functionCall" in p]
        if calls and not any(p.get("thoughtSignature") for p in calls):
            calls[0]["thoughtSignature"] = SENTINEL
            call = calls[0]["functionCall"]
            name = call.get("name") if isinstance(call, dict) else None
            exchange.note("signature", f"call {name!r}: no thought signature known; sent with the documented "
                                       "sentinel", source="sentinel")


def sign_current_turn(contents: list[dict[str, Any]], model: str) -> None:
    """Foreign history repair: the sentinel on the first call of each model turn of the current turn only.

    The current turn starts at the last user content that holds text rather than function responses
    (the scope Gemini validates, docs/wire.md#signatures). Nothing to look for on a model that
    validates none (the walk for the current turn cost a long history about 15 us a request).
    """
    if not requires_signatures(model):
        return
    start = 0
    for i, c in enumerate(contents):
        if c.get("role") == "user" and any("text" in p for p in c.get("parts") or [] if isinstance(p, dict)):
            start = i
    sign_unsigned_turns(contents[start:], model)
