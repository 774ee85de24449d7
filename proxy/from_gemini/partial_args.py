"""Streamed function-call arguments (`functionCall.partialArgs`) -> JSON text deltas and whole calls.

With `toolConfig.functionCallingConfig.streamFunctionCallArguments`, Gemini sends a call in pieces:
the first fragment names it (`name`, `id`, signature on the part), each fragment carries
`partialArgs[]` = {jsonPath, stringValue | numberValue | boolValue | nullValue, willContinue}, and
`functionCall.willContinue: true` says more fragments follow (docs/wire.md#streamed-arguments).
Recorded Vertex streams (tests/recorded/, from @ai-sdk/google's fixtures) end a call with a bare
`{"functionCall": {}}`: proto3 JSON omits `willContinue: false`, so the end marker has no field at all.
It is never a call of its own (ADK and ADK Java skip it the same way).

`ArgumentText` writes the argument object as JSON text as the pieces arrive, never taking back
what it wrote: the concatenated deltas are exactly the final `arguments` (the Vercel AI SDK's
GoogleJSONAccumulator does the same). `PartialCalls` tells fragments from whole parts and hands
back each call whole when it ends, for history and capture.
"""

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from proxy.errors import ProxyError

# RFC 9535 paths as Gemini writes them: $.a.b[0]['c d']
_SEGMENT = re.compile(r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]")
# A streamed call's argument text may not grow past this (a runaway stream is refused, not buffered).
MAX_ARGUMENT_CHARS = 16 * 1024 * 1024


class PartialArgsError(ProxyError):
    """A fragment that cannot be placed (a bad path, a value missing): Gemini's fault, a 502."""

    def __init__(self, what: str) -> None:
        super().__init__(f"Gemini streamed function call arguments that cannot be joined: {what}", status=502,
                         type="server_error", code="upstream_error")


def parse_path(path: str) -> list[str | int]:
    if not path.startswith("$"):
        raise PartialArgsError(f"jsonPath must start with '$': {path[:80]!r}")
    out: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if not m:
            raise PartialArgsError(f"cannot read jsonPath {path[:80]!r} at {pos}")
        name, index, single, double = m.groups()
        if index is not None:
            out.append(int(index))
        else:
            raw = name if name is not None else (single if single is not None else double)
            out.append(re.sub(r"\\(.)", r"\1", raw))
        pos = m.end()
    if not out:
        raise PartialArgsError("jsonPath '$' names no argument")
    return out


def _scalar(arg: dict[str, Any]) -> str | None:
    """The JSON text of a non-string value, or None for a string value."""
    if "stringValue" in arg:
        return None
    if "numberValue" in arg:
        n = arg["numberValue"]
        if isinstance(n, bool) or not isinstance(n, int | float):
            raise PartialArgsError(f"numberValue is not a number: {n!r}")
        return json.dumps(int(n) if isinstance(n, float) and n.is_integer() and abs(n) < 2**53 else n)
    if "boolValue" in arg:
        return "true" if arg["boolValue"] else "false"
    if "nullValue" in arg:
        return "null"
    return None


@dataclass
class ArgumentText:
    """The argument object written as JSON text, piece by piece."""

    pieces: list[str] = field(default_factory=list)
    _open: list[str | int] = field(default_factory=list)  # path of the open containers below the root
    _closers: list[str] = field(default_factory=list)  # "]" or "}" for each of them
    _members: list[int] = field(default_factory=lambda: [0])  # members written per open container (root first)
    _string: list[str | int] | None = None  # path of a string still being written
    _size: int = 0
    started: bool = False
    closed: bool = False

    def _emit(self, text: str) -> str:
        self._size += len(text)
        if self._size > MAX_ARGUMENT_CHARS:
            raise PartialArgsError(f"streamed arguments exceed {MAX_ARGUMENT_CHARS} characters")
        self.pieces.append(text)
        return text

    def feed(self, arg: dict[str, Any]) -> str:
        """One partialArg; returns the JSON text it adds."""
        if self.closed:
            raise PartialArgsError("arguments continue after their call ended")
        path = parse_path(str(arg.get("jsonPath", "")))
        out = [] if self.started else ["{"]
        self.started = True
        if self._string is not None:
            if path == self._string and "stringValue" in arg:
                return self._emit("".join(out) + self._string_piece(arg))
            out.append('"')
            self._string = None
        parent, leaf = path[:-1], path[-1]
        common = 0
        while common < min(len(self._open), len(parent)) and self._open[common] == parent[common]:
            common += 1
        while len(self._open) > common:  # leave containers the new path is not in
            self._open.pop()
            out.append(self._closers.pop())
            self._members.pop()
        for depth in range(common, len(parent)):  # enter the new ones
            out.append(self._member(parent[depth]))
            array = isinstance(path[depth + 1], int)
            out.append("[" if array else "{")
            self._open.append(parent[depth])
            self._closers.append("]" if array else "}")
            self._members.append(0)
        out.append(self._member(leaf))
        scalar = _scalar(arg)
        if scalar is not None:
            out.append(scalar)
        elif "stringValue" in arg:
            out.append('"')
            self._string = path
            out.append(self._string_piece(arg))
        else:
            raise PartialArgsError(f"partialArg for {arg.get('jsonPath')!r} carries no value")
        return self._emit("".join(out))

    def _member(self, key: str | int) -> str:
        """Separator and key for the next member of the innermost open container."""
        sep = ", " if self._members[-1] else ""  # json.dumps' separators: the same text as a call sent whole
        self._members[-1] += 1
        return sep if isinstance(key, int) else sep + json.dumps(key, ensure_ascii=False) + ": "

    def _string_piece(self, arg: dict[str, Any]) -> str:
        value = arg.get("stringValue")
        if not isinstance(value, str):
            raise PartialArgsError("stringValue is not a string")
        text = json.dumps(value, ensure_ascii=False)[1:-1]
        if not arg.get("willContinue"):
            self._string = None
            return text + '"'
        return text

    def close(self) -> str:
        """The text that ends the object (all of it, `{}`, when no argument came)."""
        if self.closed:
            return ""
        out = [] if self.started else ["{"]
        if self._string is not None:
            out.append('"')
            self._string = None
        out += reversed(self._closers)
        out.append("}")
        self._open, self._closers, self.closed = [], [], True
        return self._emit("".join(out))

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def is_fragment(part: dict[str, Any]) -> bool:
    """A piece of a streamed call (as opposed to a call sent whole)."""
    fc = part.get("functionCall")
    return isinstance(fc, dict) and ("partialArgs" in fc or "willContinue" in fc)


def is_end_marker(part: dict[str, Any]) -> bool:
    """Google's bare end of a streamed call: a functionCall naming nothing and carrying nothing."""
    fc = part.get("functionCall")
    return isinstance(fc, dict) and not any(fc.get(k) for k in ("name", "id", "args", "partialArgs", "willContinue"))


@dataclass
class StreamedCall:
    """A call being streamed: its first fragment (name, id, signature) and its argument text."""

    first: dict[str, Any]
    arguments: ArgumentText = field(default_factory=ArgumentText)
    whole_args: dict[str, Any] | None = None  # `args` if Gemini also sent them whole

    @property
    def name(self) -> str:
        return str(self.first["functionCall"].get("name") or "")

    def feed(self, fc: dict[str, Any]) -> str:
        if isinstance(fc.get("args"), dict) and fc["args"]:
            self.whole_args = fc["args"]
        return "".join(self.arguments.feed(a) for a in fc.get("partialArgs") or [] if isinstance(a, dict))

    def whole_part(self) -> dict[str, Any]:
        """The call as one ordinary functionCall part (for history), signature where it came."""
        args = json.loads(self.arguments.text) if self.arguments.closed else {}
        if not self.arguments.started and self.whole_args is not None:  # nothing streamed but whole args
            args = self.whole_args
        fc = {k: v for k, v in self.first["functionCall"].items() if k not in ("partialArgs", "willContinue")}
        fc["args"] = args
        return {**{k: v for k, v in self.first.items() if k != "functionCall"}, "functionCall": fc}


@dataclass(frozen=True)
class CallEvent:
    """`start` (the call's first fragment arrived), `delta` (argument text), `end` (its closing text)."""

    kind: Literal["start", "delta", "end"]
    call: StreamedCall
    text: str = ""


class PartialCalls:
    """Feeds parts through; fragments are joined into the call they belong to. A new call (a
    fragment with a name) ends the one before it; so does any other part, and the stream's end."""

    def __init__(self) -> None:
        self.current: StreamedCall | None = None

    def feed(self, part: dict[str, Any]) -> tuple[list[CallEvent], dict[str, Any] | None]:
        """The call events `part` causes, and the part itself when it is not a fragment."""
        fc = part.get("functionCall")
        if not isinstance(fc, dict):  # (most parts: text, a thought; what follows would say the same, in two calls)
            return (self.finish() if self.current is not None else []), part
        events: list[CallEvent] = []
        if is_end_marker(part):  # ends the call in progress (if a fragment without willContinue has not)
            sig = part.get("thoughtSignature")
            if self.current is not None and sig and "thoughtSignature" not in self.current.first:
                self.current.first["thoughtSignature"] = sig
            return self.finish(), None
        fragment = is_fragment(part)
        if self.current is not None and (not fragment or fc.get("name")):
            events += self.finish()
        if not fragment:
            return events, part
        if self.current is None:
            if not fc.get("name"):
                raise PartialArgsError("a streamed function call fragment arrived without a call to belong to")
            self.current = StreamedCall(part)
            events.append(CallEvent("start", self.current))
        call = self.current
        delta = call.feed(fc)
        if delta:
            events.append(CallEvent("delta", call, delta))
        if not fc.get("willContinue"):
            events += self.finish()
        return events, None

    def finish(self) -> list[CallEvent]:
        """End the call in progress (the stream ended, or another part came)."""
        call, self.current = self.current, None
        return [] if call is None else [CallEvent("end", call, call.arguments.close())]
