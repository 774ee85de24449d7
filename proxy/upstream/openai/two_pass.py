"""Two-pass thinking (`--two-pass PATTERN=BUDGET`, docs/dialects.md#two-pass-thinking, Qwen's documented
method) for the OpenAI-compatible peer: a first pass stops at `</think>` or after BUDGET tokens; its
reasoning is closed — with Qwen's "limited time" sentence when it was cut — and the answer comes
from a second pass that continues that closed block (`continue_final_message`). The first pass is
held until it ends (it is at most BUDGET tokens); the second streams as it comes.
"""

from dataclasses import dataclass
from typing import Any

from proxy.journal.exchange import CURRENT, UpstreamCall

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# Qwen's budget sentence (QwenLM/Qwen3 PR #1481), written before the forced close of a cut block.
CUT_THINKING = "\n\nConsidering the limited time by the user, I have to give the solution based on the thinking " \
               "directly now."


@dataclass(frozen=True)
class FirstPass:
    reasoning: str | None   # None: the model answered without thinking; the answer is `text`
    text: str
    closed: bool


def first_pass(text: str, finish: str | None, stop_reason: Any, opened: bool) -> FirstPass:
    """What the first pass was: reasoning (closed at `</think>` or cut by the budget), or a plain
    answer from a model that did not think (finished by itself, never having opened the tag)."""
    stripped = text.lstrip()
    if stripped.startswith(THINK_OPEN):
        opened, text = True, stripped[len(THINK_OPEN):]
    closed = stop_reason == THINK_CLOSE or THINK_CLOSE in text
    text = text.split(THINK_CLOSE, 1)[0]
    if not opened and not closed and finish == "stop":
        return FirstPass(None, text, False)
    return FirstPass(text.strip(), text, closed)


def prefill(fp: FirstPass) -> str:
    """The assistant turn the second pass continues: the reasoning, closed."""
    return f"{THINK_OPEN}\n{fp.reasoning}{'' if fp.closed else CUT_THINKING}\n{THINK_CLOSE}\n\n"


def first_pass_request(req: dict[str, Any], budget_tokens: int) -> dict[str, Any]:
    """The first pass of `req`: whole, stopped at `</think>` or after `budget_tokens`."""
    budget = {**req, "max_tokens": budget_tokens, "stop": [THINK_CLOSE]}
    budget.pop("stream", None)
    budget.pop("stream_options", None)
    return budget


def second_request(req: dict[str, Any], fp: FirstPass) -> dict[str, Any]:
    """The second pass of `req`: continuing the first pass's closed reasoning."""
    return {**req, "messages": [*req["messages"], {"role": "assistant", "content": prefill(fp)}],
            "continue_final_message": True, "add_generation_prompt": False}


def first_pass_record(model: str) -> UpstreamCall | None:
    """The journal's record of a two-pass first pass: a call of its own, before the one it prepares
    (the current call stays the exchange's last: the second pass)."""
    ex = CURRENT.get()
    if ex is None:
        return None
    call = UpstreamCall(model, None, False)
    ex.upstreams.insert(max(0, len(ex.upstreams) - 1), call)
    return call
