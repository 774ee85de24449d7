"""Long answers in hops. The Interactions API stops a long decode at its per-request limit with status
`requires_continuation` and a `continuation_token`, and goes on when asked with that token; each hop
is an interaction of its own. google-genai (3.6) continues so by default (its
_interactions_continuation.py is the reference read here): the proxy continues the same way and
passes the hops on as one answer, never the first hop's part of it as if it were the whole (the
limit on hops and the refusals are generateContent's: from_gemini/merge_hops.py, upstream/gemini/client.py's
_next_hop).
"""

from typing import Any

CONTINUE = "requires_continuation"


def token_of(interaction: dict[str, Any]) -> str | None:
    """The token to continue `interaction` with, when it stopped at the decode limit."""
    token = interaction.get("continuation_token")
    return token if interaction.get("status") == CONTINUE and isinstance(token, str) and token else None


def added_steps(interaction: dict[str, Any]) -> bool:
    """Whether a hop added anything to the answer: a step other than its echo of the input."""
    return any(isinstance(s, dict) and s.get("type") != "user_input" for s in interaction.get("steps") or [])


def next_request(request: dict[str, Any], token: str, issuer: str | None) -> dict[str, Any]:
    """The create request for the next hop: the same request with the token. The server rebuilds the
    context from the stored hop that issued the token, so that hop is the previous_interaction_id and
    the input is not sent again; unstored (`store: false`), the original input goes with the token."""
    hop = {**request, "continuation_token": token}
    if issuer and request.get("store") is not False:
        hop["previous_interaction_id"] = issuer
        hop.pop("input", None)
    return hop


def merged(hops: list[dict[str, Any]]) -> dict[str, Any]:
    """The hops as one interaction, as google-genai merges them: the last hop (its id ends the
    conversation at Google) with every hop's steps in order (a later hop's echo of the input left out)
    and their usage summed."""
    if len(hops) == 1:
        return hops[0]
    steps: list[Any] = list(hops[0].get("steps") or [])
    for hop in hops[1:]:
        later = list(hop.get("steps") or [])
        while later and isinstance(later[0], dict) and later[0].get("type") == "user_input":
            later.pop(0)
        steps += later
    return {**hops[-1], "steps": steps, "usage": summed([h.get("usage") for h in hops])}


def summed(usages: list[Any]) -> dict[str, Any]:
    """Token counts summed over hops, as billed: each hop reads the whole context again, so its input
    tokens count again (google-genai sums them so too)."""
    total: dict[str, Any] = {}
    for usage in usages:
        for name, value in (usage or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                total[name] = total.get(name, 0) + value
    return total
