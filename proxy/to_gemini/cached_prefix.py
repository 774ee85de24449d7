"""A Gemini request split into an explicit-cache prefix and the rest (pure; server/prompt_cache.py
does the I/O).

A request that names a `cachedContent` may not repeat `systemInstruction`, `tools` or `toolConfig`
(Google's 400: "CachedContent can not be used with GenerateContent request setting
system_instruction, tools or tool_config. Proposed fix: move those values to CachedContent from
GenerateContent request.", vercel/ai #3333; hermes-agent PR #32886): they go into the cache with the
first `n` contents, and the request keeps the contents after them and its generation settings. The
cache plus the rest is exactly the request it replaces.
"""

import hashlib
from typing import Any

from proxy import fast_json

CACHED_FIELDS = ("systemInstruction", "tools", "toolConfig")
# Anthropic's two cache lifetimes (`cache_control.ttl`), in seconds; "5m" is the default.
TTLS = {"5m": 300, "1h": 3600}
CHARS_PER_TOKEN = 4  # the estimate that decides whether a prefix can pass the model's minimum


def run_ends(roles: list[str]) -> list[int]:
    """The end (exclusive) of each run of equal roles: ["user", "user", "model"] -> [2, 3]."""
    ends: list[int] = []
    for i, role in enumerate(roles):
        if ends and roles[i - 1] == role:
            ends[-1] = i + 1
        else:
            ends.append(i + 1)
    return ends


def prefix_sizes(client_runs: list[int | None], contents: list[dict[str, Any]], client_roles: list[str]
                 ) -> list[int | None]:
    """For each breakpoint (the index of the client's turn it is on, or None: on the system prompt or
    the tools), how many Gemini contents the cached prefix holds: the contents up to the end of that
    turn's run of the same role. The client's turns and Gemini's contents are matched run by run
    (a user turn's tool results and text are one user run on both sides); where the runs do not line
    up one to one, a turn's breakpoint gives None (no cache there) rather than a guess. The prefix
    always leaves the last run out: a generate request needs contents of its own."""
    gemini_ends = run_ends([str(c.get("role") or "user") for c in contents])
    client_run_of: list[int] = []
    for i, role in enumerate(client_roles):
        client_run_of.append(client_run_of[-1] + (role != client_roles[i - 1]) if i else 0)
    aligned = (bool(client_roles) and len(gemini_ends) == client_run_of[-1] + 1
               and (str(contents[0].get("role") or "user") == "model") == (client_roles[0] == "model"))
    out: list[int | None] = []
    for turn in client_runs:
        if turn is None:
            out.append(0)
        elif not aligned or turn >= len(client_run_of):
            out.append(None)
        else:
            run = min(client_run_of[turn], len(gemini_ends) - 2)
            out.append(gemini_ends[run] if run >= 0 else 0)
    return out


def split(body: dict[str, Any], n: int, model_resource: str, ttl_seconds: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the `cachedContents` create body, the generate body without what the cache holds, lacking
    only its `cachedContent` name)."""
    contents = body.get("contents") or []
    cache: dict[str, Any] = {"model": model_resource, "contents": contents[:n],
                             **{k: body[k] for k in CACHED_FIELDS if k in body}, "ttl": f"{ttl_seconds}s"}
    rest = {k: v for k, v in body.items() if k not in CACHED_FIELDS}
    rest["contents"] = contents[n:]
    return cache, rest


def prefix_key(cache: dict[str, Any], owner: str) -> str:
    """The cache's identity: its model, its contents, system prompt, tools and tool config (not its
    ttl), and its owner (the client's scope and Google key): the same prefix for another owner is
    another cache."""
    digest = hashlib.sha256(owner.encode())
    digest.update(fast_json.dumps({k: v for k, v in cache.items() if k != "ttl"}))
    return digest.hexdigest()


def estimated_tokens(cache: dict[str, Any]) -> int:
    """A rough count of the prefix's tokens (its JSON over CHARS_PER_TOKEN): enough to skip a prefix far
    below the minimum; Google's own count decides the rest (its 400 "Cached content is too small")."""
    return len(fast_json.dumps({k: v for k, v in cache.items() if k not in ("model", "ttl")})) // CHARS_PER_TOKEN
