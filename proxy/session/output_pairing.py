"""Pair tool outputs posted to `/v1/sessions/{s}/tool_outputs` with the session's captured calls."""

from typing import Any

from proxy.errors import ProxyError
from proxy.session.session_tools import ToolContext


def pair_outputs(ctx: ToolContext | None, outputs: list[tuple[str | None, dict[str, Any]]]
                 ) -> dict[str, dict[str, Any]]:
    """Match outputs to captured calls: by call_id first, then the rest by position among the latest
    round's calls that have no output yet. An unknown id, or more outputs than open calls, is a 400."""
    paired: dict[str, dict[str, Any]] = {}
    positional = []
    for call_id, response in outputs:
        if call_id is None:
            positional.append(response)
        elif ctx is None or ctx.find_call(call_id) is None:
            raise ProxyError(f"No tool call found for function call output with call_id {call_id}.",
                             param="outputs")
        else:
            paired[call_id] = response
    if positional:
        latest = ctx.rounds[-1] if ctx and ctx.rounds else None
        open_calls = [c.call_id for c in latest.calls if c.call_id not in latest.results
                      and c.call_id not in paired] if latest else []
        if len(positional) > len(open_calls):
            raise ProxyError(f"{len(positional)} output(s) without call_id, but only {len(open_calls)} captured "
                             "call(s) are waiting for one.", param="outputs")
        paired.update(zip(open_calls, positional, strict=False))
    return paired
