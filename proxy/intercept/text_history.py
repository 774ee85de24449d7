"""A history of text turns only is kept as the app's bytes (issue 27: the addon touches only what it
must).

Every rewrite of the contents (placeholder rounds, the session marker, the history repairs, the
sentinel on unsigned calls) acts on tool parts, on a model turn next to another, on a trailing model
turn for models that refuse one, on a placeholder turn or on a marker. A history with none of them
passes through every one of those unchanged; parsing it into Python objects cost most of the
addon's time on a long conversation (a 55 KB body: about 0.4 ms of thread CPU inside mitmdump,
where allocating its ~1,300 objects also set off the garbage collector, against 0.03 ms to check
it as below). So the body is split (`members`): its top-level members other than `contents` are
parsed as before, the contents are only checked against a strict text-turns shape (`untouched`:
msgspec, one pass, no object per key) and, when the request is rewritten, put back as the bytes
the app sent (`join`).

Anything the shape does not describe (a tool part, inline data, a snake_case key, a lone surrogate,
an empty turn...) takes the full path, which is always right; this one is only faster.
"""


import msgspec
import orjson

from proxy.intercept.session_marker import MARKER
from proxy.to_gemini.repair_history import rejects_prefill
from proxy.wire.json_body import split_member


class _TextPart(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    text: str
    thought: bool | None = None
    thoughtSignature: str | None = None


class _TextTurn(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    parts: list[_TextPart]
    role: str | None = None


_TURNS = msgspec.json.Decoder(list[_TextTurn])


def members(raw: bytes, key: str = "contents") -> tuple[bytes, bytes] | None:
    """(the body without `key`, as a JSON object; `key`'s value as sent), or None when the body is
    not a JSON object holding `key` (the caller parses it whole, and says why). Cloud Code's body
    is split twice: its "request", then that request's contents."""
    split = split_member(raw, key)
    return None if split is None else split[1:]


def untouched(contents: bytes, model: str, placeholder: str) -> bool:
    """The contents are text turns the proxy leaves as they are: they can go out as the app's bytes."""
    try:
        return _untouched(_TURNS.decode(contents), model, placeholder)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return False


def join(rest: bytes, value: bytes, key: str = "contents") -> bytes:
    """The body: `rest` (a JSON object without `key`) with `key`'s bytes put back, first."""
    return joined(value, tail(rest), key)


def tail(rest: bytes) -> bytes:
    """What follows `key`'s value in join()'s body: made once for a rest sent again and again (the
    rewrite keeps it), so a body is one copy of the rest, not three (issue 62: each pass over a tool
    list the CPU's caches no longer hold costs more than the rest of the join)."""
    rest = rest.strip()  # fast_json marks text it wrote with the standard library by a leading space
    inner = rest[1:-1].strip()
    return b"".join((b",", inner, b"}")) if inner else b"}"


def joined(value: bytes, after: bytes, key: str = "contents") -> bytes:
    """join() with the rest's tail() made beforehand."""
    return b"".join((b'{"contents":' if key == "contents" else b"{" + orjson.dumps(key) + b":", value, after))


def _untouched(turns: list[_TextTurn], model: str, placeholder: str) -> bool:
    """Nothing in these text turns for the proxy to change (session/tool_context.apply_tool_context,
    intercept/session_marker.take_marker): each has parts, no model turn follows another (they would
    be merged), no trailing model turn for a model that refuses one, no placeholder turn (the relay's
    dummy prompts are only folded next to one), no marker."""
    previous = None
    for turn in turns:
        parts, role = turn.parts, turn.role
        if not parts:
            return False  # take_marker gives an empty user turn a "." part
        for part in parts:
            if "<session:" in part.text and MARKER.search(part.text):
                return False
        if role == "model":
            if previous == "model":
                return False
            if len(parts) == 1:  # most turns: no join (placeholders._is_placeholder)
                if not parts[0].thought and parts[0].text.strip() == placeholder:
                    return False
            elif "".join([p.text for p in parts if not p.thought]).strip() == placeholder:
                return False
        previous = role
    return not (turns and previous == "model" and rejects_prefill(model))


__all__ = ["join", "joined", "members", "tail", "untouched"]
