"""What every text dialect is made of: the tools it renders, the calls it parses, and the rules for
finding a call block in streamed text (docs/wire.md#dialects).

A dialect is a stateless object; the state of one answer lives in a `TextParser` (text_parser.py),
which feeds the dialect's `block_end`/`parse_block` with what it buffered.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from proxy.tools.tool_names import loose_name

# A call block longer than this is not a call a model would write: kept as text with a warning
# rather than parsed (and held) without bound. Real calls with whole files as arguments reach a few
# hundred KB; vLLM and Ollama set no limit at all, llama.cpp bounds by context length.
MAX_BLOCK_CHARS = 1 << 20
# Nesting deeper than this in a parsed value is refused (recursion is bounded, as in json's own C parser).
MAX_DEPTH = 64


class ParseFailure(ValueError):
    """A block that looked like a call and is not one (kept as text, with this as the warning)."""


class PartialBlock(Exception):  # noqa: N818 - an outcome, not an error: some calls parsed
    """A block holding several calls of which some parsed and some did not: the good calls go out,
    the others stay in the content as their own text, with `why` as the warning (vLLM drops them)."""

    def __init__(self, calls: list["Call"], rest: str, why: str) -> None:
        super().__init__(why)
        self.calls, self.rest, self.why = calls, rest, why


@dataclass(frozen=True)
class ToolSpec:
    """A declared function as a dialect renders it: JSON Schema parameters, lower-case types."""
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Result:
    """A tool's answer as history shows it: the call's name and its response object."""
    name: str
    response: Any


# What `block_end` says of a buffer that starts with an opener.
INCOMPLETE = -1   # the block may still close: read more
NOT_A_CALL = -2   # the opener was text after all: emit its first character and scan on


@dataclass(frozen=True)
class ThinkTags:
    """Reasoning delimiters a dialect's models write at the start of an answer: each opener with
    its closer (`closes[i]` ends `opens[i]`; one closer serves all when only one is given)."""
    opens: tuple[str, ...]
    closes: tuple[str, ...]
    names: tuple[str, ...] = ()  # a channel name right after the opener, not part of the reasoning

    def closer(self, opener: str | None) -> str:
        i = self.opens.index(opener) if opener in self.opens else 0
        return self.closes[i] if i < len(self.closes) else self.closes[0]


THINK = ThinkTags(("<think>", "<thinking>"), ("</think>", "</thinking>"))


@dataclass
class Dialect:
    """Subclasses render and parse one dialect. Class attributes describe the grammar."""
    name: str = ""
    openers: tuple[str, ...] = ()             # text that starts a call block
    think: ThinkTags | None = THINK
    stops: tuple[str, ...] = ()               # stop sequences that end a turn after a call
    noise: tuple[str, ...] = ()               # stray markers dropped right after a call block
    # Openers with no marker of their own (`{`, `[`): a call only when the whole message, after
    # whitespace, is call blocks (text that merely quotes JSON or a list is never a call).
    bare: tuple[str, ...] = ()
    think_anywhere: bool = False              # the think opener is a special token: reasoning mid-answer too
    call_ends_thinking: bool = False          # a call marker inside the thought ends it (Qwen3 does this)
    declarations_in_user: bool = False        # the template puts tools in the first user turn
    system_turn: bool = True                  # the model has a system turn of its own
    single_call: bool = False                 # the template refuses parallel calls in history
    extra: dict[str, Any] = field(default_factory=dict)

    # --- rendering -------------------------------------------------------------------------------
    def render_tools(self, tools: list[ToolSpec], forced: list[str] | None = None) -> str:
        """The declarations text; `forced` names the tools one of which must be called."""
        raise NotImplementedError

    def render_calls(self, calls: list[Call]) -> str:
        raise NotImplementedError

    def render_results(self, results: list[Result]) -> str:
        raise NotImplementedError

    # --- parsing ---------------------------------------------------------------------------------
    def parser(self, tools: dict[str, ToolSpec], *, think_open: bool = False, rescue: bool = False) -> Any:
        """A TextParser for one answer (a dialect with its own grammar of turns overrides this)."""
        from proxy.dialects.text_parser import TextParser
        return TextParser(self, tools, think_open=think_open, rescue=rescue)

    def block_end(self, buf: str, closing: bool = False, memo: dict[Any, Any] | None = None) -> int:
        """Length of the call block at the start of `buf` (which starts with an opener), or
        INCOMPLETE / NOT_A_CALL. `closing`: no more text will come. `memo` (one per block) lets a
        scan resume where the last call stopped, so a long block fed in small chunks costs linear time."""
        raise NotImplementedError

    def parse_block(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        """The calls in one closed block; ParseFailure when it is not a call."""
        raise NotImplementedError

    def parse_unclosed(self, block: str, tools: dict[str, ToolSpec]) -> list[Call]:
        """The calls in a block the answer ended inside of, where the repair is certain."""
        raise ParseFailure(f"unterminated {self.name} call block")

    def as_text(self, block: str) -> str:
        """A block that is not a call, as content (a dialect whose opener is a control token drops it)."""
        return block


def forced_line(forced: list[str] | None) -> str:
    if not forced:
        return ""
    return ("You must call one of these functions now: " + ", ".join(forced) + ".") if len(forced) > 1 \
        else f"You must call the function {forced[0]} now."


def result_object(response: Any) -> Any:
    """A tool result as data: Gemini's `{"output": "..."}`/`{"result": ...}` wrapper unwrapped, a
    string holding JSON parsed (llama.cpp's convert_tool_responses_gemma4 does the same)."""
    if isinstance(response, dict) and len(response) == 1 and next(iter(response)) in ("output", "result", "content"):
        response = next(iter(response.values()))
    if isinstance(response, str):
        try:
            parsed = json.loads(response)
        except ValueError:
            return response
        return parsed if isinstance(parsed, dict | list) else response
    return response


def result_text(response: Any) -> str:
    """A tool result as the model reads it: text as it is, data as JSON."""
    value = result_object(response)
    return value if isinstance(value, str) else dumps(value)


def dumps(value: Any) -> str:
    """JSON as Python's `tojson` writes it in the chat templates (", " and ": ", non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False)


def resolve_name(name: str, tools: dict[str, ToolSpec]) -> str:
    """The declared tool a parsed name means: exact, else ignoring case and `-`/`_`/`.`; a name
    that matches none is a ParseFailure (the text stays text; a tool is never invented)."""
    if not tools or name in tools:
        return name
    key = loose_name(name)
    found = [n for n in tools if loose_name(n) == key]
    if len(found) == 1:
        return found[0]
    raise ParseFailure(f"the model called {name[:80]!r}, which is not a declared tool")


def schema_of(tools: dict[str, ToolSpec], name: str) -> dict[str, Any] | None:
    spec = tools.get(name)
    return spec.parameters if spec else None
