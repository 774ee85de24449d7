"""Placeholder history rewrite: an app's model turn that is only the placeholder text (what a relay
app was told instead of the real call) becomes that round's real functionCall parts, signatures on
the same parts, followed by a user turn of functionResponse parts in call order. A placeholder with
no captured round is refused, never forwarded malformed."""

from typing import Any

from proxy.defaults import DEFAULT_PLACEHOLDER  # noqa: E402, F401 (the options' default)
from proxy.errors import ProxyError
from proxy.journal import exchange
from proxy.session.session_tools import ToolRound
from proxy.signatures.call_record import CallRecord
from proxy.signatures.model_bound import for_model

DUMMY_TEXTS = frozenset({"", "."})  # AGCC and zerogravity send "." as the relay app's prompt
NO_HISTORY = ("Tool results were provided, but no captured functionCall history was available for replay. "
              "Refusing to forward a malformed tool-result turn.")


def _is_placeholder(content: dict[str, Any], placeholder: str) -> bool:
    parts = content.get("parts") or []
    if content.get("role") != "model" or not parts:
        return False
    if len(parts) == 1:  # most turns: no list, no join (a long answer's text is only compared)
        text = parts[0].get("text")
        return type(text) is str and not parts[0].get("thought") and text.strip() == placeholder
    texts = [p.get("text") for p in parts if not p.get("thought")]
    return all(isinstance(t, str) for t in texts) and "".join(texts).strip() == placeholder


def _calls_turn(calls: list[CallRecord], ids: bool) -> dict[str, Any]:
    parts = [c.part() for c in calls]
    if ids:  # the call's own id (the one its client answered) where the model gave none
        for call, part in zip(calls, parts, strict=True):
            part["functionCall"].setdefault("id", call.call_id)
    return {"role": "model", "parts": parts}


def _results_turn(rnd: ToolRound, ids: bool) -> dict[str, Any]:
    parts = []
    for call in rnd.calls:
        if call.call_id not in rnd.results:
            raise ProxyError(f"No tool output found for function call {call.call_id} ({call.name}); send it before "
                             "the next turn.", param="input")
        response: dict[str, Any] = {"name": call.gemini_name, "response": rnd.results[call.call_id]}
        if call.gemini_id or ids:
            response["id"] = call.gemini_id or call.call_id
        parts.append({"functionResponse": response})
    return {"role": "user", "parts": parts}


def _is_dummy(content: dict[str, Any]) -> bool:
    """A user turn holding only the relay prompt's dummy text ("." once its marker is gone)."""
    parts = content.get("parts") or []
    texts = [p.get("text") for p in parts]
    return (content.get("role") == "user" and bool(parts) and all(isinstance(t, str) for t in texts)
            and "".join(texts).strip() in DUMMY_TEXTS)


def placeholder_count(contents: list[dict[str, Any]], placeholder: str = DEFAULT_PLACEHOLDER) -> int:
    """How many captured rounds a history refers to: the rounds the store must give back for it."""
    return sum(1 for c in contents if isinstance(c, dict) and _is_placeholder(c, placeholder))


def rewrite_history(contents: list[dict[str, Any]], rounds: list[ToolRound],
                    placeholder: str = DEFAULT_PLACEHOLDER, model: str | None = None, ids: bool = False
                    ) -> list[dict[str, Any]]:
    """Replace placeholder model turns with the captured rounds (the latest placeholders get the latest
    rounds); sent to `model`, a call another model made goes without its signature (model_bound.py).
    `ids`: every functionCall and functionResponse written carries an id (Claude on Antigravity's wire
    refuses one without), the call's record's when the model sent none (tools/call_ids.py)."""
    marks = [i for i, c in enumerate(contents) if _is_placeholder(c, placeholder)]
    if not marks:
        return contents
    usable = [r for r in rounds if r.calls]  # an empty round would make an empty model turn (zerogravity#73)
    if len(usable) < len(marks):
        raise ProxyError(NO_HISTORY)
    aligned = dict(zip(marks, usable[len(usable) - len(marks):], strict=True))
    if exchange.recording():
        _note(aligned)
    out: list[dict[str, Any]] = []
    for i, content in enumerate(contents):
        if i in aligned:
            rnd = aligned[i]
            calls = rnd.calls if model is None else [for_model(c, model) for c in rnd.calls]
            out.append(_calls_turn(calls, ids))
            out.append(_results_turn(rnd, ids))
        elif i - 1 in aligned and _is_dummy(content):
            continue  # the app's "go on" after the placeholder: the function responses say it now
        else:
            out.append(content)
    return out


def _note(aligned: dict[int, ToolRound]) -> None:
    """The journal's decisions: which turn became which captured round, and each call's record (its
    thought signature, Gemini's id and arguments) restored from the MITM capture."""
    for at, rnd in aligned.items():
        names = [c.name for c in rnd.calls]
        exchange.note("history", f"placeholder turn {at} became the captured round: {len(names)} call(s) "
                                 f"({', '.join(names[:20])}) and their results", at=at, calls=names[:200])
        for call in rnd.calls:
            signed = bool(call.signature)
            exchange.note("signature", f"call {call.call_id}: record restored from the MITM capture"
                                       + (" with its thought signature" if signed else " (it had no signature)"),
                          call_id=call.call_id, source="capture", signed=signed)
