"""Anthropic `cache_control` breakpoints, read off a Messages request (pure): where each is (the
system prompt and tools, or a turn) and how long its cache should live (`ttl` "5m" or "1h",
Anthropic's default 5 minutes). server/prompt_cache.py maps them onto a Gemini explicit cache."""

from dataclasses import dataclass, field

from proxy.to_gemini.cached_prefix import TTLS
from proxy.wire.anthropic import Block, MessagesRequest


@dataclass
class Breakpoints:
    turns: list[int | None] = field(default_factory=list)  # the turn each is on (None: system or tools)
    ttls: list[int] = field(default_factory=list)          # its lifetime, in seconds
    roles: list[str] = field(default_factory=list)         # each turn's Gemini role (system messages left out)


def _ttl(control: object) -> int | None:
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        return None
    return TTLS.get(str(control.get("ttl") or "5m"), TTLS["5m"])


def _marked(blocks: list[Block] | str | None) -> int | None:
    """The longest ttl among the blocks' breakpoints, or None."""
    if not isinstance(blocks, list):
        return None
    ttls = [t for b in blocks if (t := _ttl(b.cache_control)) is not None]
    return max(ttls) if ttls else None


def breakpoints(req: MessagesRequest) -> Breakpoints:
    out = Breakpoints()

    def add(turn: int | None, ttl: int | None) -> None:
        if ttl is not None:
            out.turns.append(turn)
            out.ttls.append(ttl)

    for tool in req.tools or []:
        add(None, _ttl((tool.model_extra or {}).get("cache_control")))
    add(None, _marked(req.system))
    for m in req.messages:
        if m.role == "system":  # it joins the system prompt (to_items.py)
            add(None, _marked(m.content))
            continue
        add(len(out.roles), _marked(m.content))
        out.roles.append("model" if m.role == "assistant" else "user")
    return out
