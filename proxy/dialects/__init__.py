"""Text dialects: tool calling for models that speak it only as text (docs/wire.md#dialects).

Each dialect renders tool declarations, earlier calls and tool results into the prompt as the
model was trained to see them, and parses the model's (streamed) text back into calls.
"""

from proxy.dialects.base import Call, Dialect, ParseFailure, Result, ToolSpec
from proxy.dialects.gemma import functiongemma, gemma4
from proxy.dialects.harmony import harmony
from proxy.dialects.hermes import hermes, qwen3coder
from proxy.dialects.llama import gemma3, llama3, pythonic
from proxy.dialects.mistral import mistral

DIALECTS: dict[str, Dialect] = {d.name: d for d in (
    gemma4(), functiongemma(), gemma3(), hermes(), qwen3coder(), llama3(), mistral(), harmony(), pythonic())}


def dialect(name: str) -> Dialect:
    """The dialect called `name`; a ValueError listing the known ones otherwise."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown dialect {name!r}: one of {', '.join(DIALECTS)}") from None


__all__ = ["DIALECTS", "Call", "Dialect", "ParseFailure", "Result", "ToolSpec", "dialect"]
