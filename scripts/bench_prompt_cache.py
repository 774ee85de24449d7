"""Input tokens billed over a 50-turn Claude Code-shaped session, with Anthropic `cache_control`
mapped to Gemini's explicit cache (server/prompt_cache.py) and without it (the same session with
its breakpoints taken out: the proxy then sends every request whole, as before the mapping).

The session has the shape of Claude Code 2.1.337's first request (tests/recorded/claude-code-2.1.337-
request.json: its three system blocks, its system message and 12 tools at their recorded sizes,
breakpoints where it puts them), then a tool loop: each turn the model's answer (the mock's) and a
tool result of about 1,500 characters, Claude Code's moving breakpoint on the last block. It runs
through the proxy in process against the mock, with the official anthropic SDK.

Tokens are counted as the mock counts them (a token per four characters of the JSON), the same for
both arms, from what Gemini received: each request's own contents, system prompt and tools; each
cache it names (the tokens Gemini bills at the cached rate); each cache made (billed once at the
standard input rate, as Google's caching guide says: "you're billed for the input tokens used to
create the cache at the standard input token price", quoted in discuss.ai.google.dev/t/172194),
and each cache's storage for its ttl. Rates for gemini-3-flash-preview: input and cache-read prices
from genai-prices (pydantic/genai-prices, in the lock: $0.50 and $0.05 per MTok); storage $1.00 per
MTok-hour (Google's pricing page for Flash models; genai-prices has no storage rate).

    .venv/bin/python scripts/bench_prompt_cache.py           # prints the markdown rows
"""

import copy
import datetime
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402

from proxy.mock.objects import CACHE_BODIES, CACHES, cache_tokens  # noqa: E402
from tests.harness import Stack  # noqa: E402

MODEL = "gemini-3-flash-preview"
TURNS = 50
REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "recorded" / "claude-code-2.1.337-request.json"
PLACEHOLDER = re.compile(r"^\(text of (\d+) chars\)$")
FILLER = "Claude Code's instructions: read before editing, keep changes small, run the tests. "
STORAGE_PER_MTOK_HOUR = 1.00


def _expand(value: Any) -> Any:
    """The reference's "(text of N chars)" placeholders as N characters of prose."""
    if isinstance(value, str) and (m := PLACEHOLDER.match(value)):
        n = int(m.group(1))
        return (FILLER * (n // len(FILLER) + 1))[:n]
    if isinstance(value, list):
        return [_expand(v) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v) for k, v in value.items()}
    return value


def _shape() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    ref = json.loads(REFERENCE.read_text())
    shape = _expand(ref["body_shape"])
    tools = [{k: v for k, v in t.items() if k in ("name", "description", "input_schema")}
             for t in _expand(ref["tools"])]
    return shape["system"], shape["messages"], tools


def _uncached(value: Any) -> Any:
    if isinstance(value, list):
        return [_uncached(v) for v in value]
    if isinstance(value, dict):
        return {k: _uncached(v) for k, v in value.items() if k != "cache_control"}
    return value


def _last_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude Code's moving breakpoint: on the last block of the last message (and nowhere else in turns)."""
    out = copy.deepcopy(messages)
    for m in out[2:]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            b.pop("cache_control", None)
    last = out[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return out


def session(cached: bool) -> dict[str, Any]:
    system, opening, tools = _shape()
    stack = Stack()
    client = anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0)
    messages = copy.deepcopy(opening)
    usage = {"input_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    try:
        for turn in range(TURNS):
            sent = _last_breakpoint(messages)
            kwargs = {"model": MODEL, "max_tokens": 2000, "system": system, "tools": tools, "messages": sent}
            answer = client.messages.create(**(kwargs if cached else _uncached(kwargs)))
            for k in usage:
                usage[k] += getattr(answer.usage, k) or 0
            blocks = [b.model_dump(exclude_none=True) for b in answer.content]
            messages.append({"role": "assistant", "content": blocks})
            output = f"turn {turn}: " + "src/app.py: def handler(request): return respond(request.body) \n" * 22
            uses = [b for b in blocks if b["type"] == "tool_use"]
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b["id"], "content": output} for b in uses] or [
                {"type": "text", "text": f"Go on with step {turn + 1}. {output}"}]})
        return _bill(stack, usage)
    finally:
        stack.close()


def _bill(stack: Stack, usage: dict[str, int]) -> dict[str, Any]:
    caches = stack.mock_app[CACHES]
    bodies = stack.mock_app[CACHE_BODIES]
    fresh = read = 0
    for r in stack.received:
        if r.get("method") not in ("generateContent", "streamGenerateContent"):
            continue
        body = r["body"]
        fresh += cache_tokens(body)
        if body.get("cachedContent"):
            read += cache_tokens(bodies[body["cachedContent"]])
    made = sum(c["usageMetadata"]["totalTokenCount"] for c in caches.values())
    stored = sum(cache_tokens(bodies[n]) * _ttl_hours(stack, n) for n in caches)  # token-hours
    return {"fresh": fresh, "read": read, "made": made, "caches": len(caches), "token_hours": stored,
            "requests": sum(1 for r in stack.received if r.get("method") == "generateContent"), "usage": usage}


def _ttl_hours(stack: Stack, name: str) -> float:
    cache = stack.mock_app[CACHES][name]
    made = datetime.datetime.fromisoformat(cache["createTime"].replace("Z", "+00:00"))
    ends = datetime.datetime.fromisoformat(cache["expireTime"].replace("Z", "+00:00"))
    return (ends - made).total_seconds() / 3600


def main() -> None:
    from genai_prices import Usage, calc_price
    price = calc_price(Usage(input_tokens=1_000_000), model_ref=MODEL, provider_id="google")
    read_price = calc_price(Usage(input_tokens=1_000_000, cache_read_tokens=1_000_000), model_ref=MODEL,
                            provider_id="google")
    per_token, per_read = float(price.input_price) / 1e6, float(read_price.input_price) / 1e6
    base, mapped = session(cached=False), session(cached=True)

    def dollars(b: dict[str, Any]) -> float:
        return (b["fresh"] * per_token + b["read"] * per_read + b["made"] * per_token
                + b["token_hours"] * STORAGE_PER_MTOK_HOUR / 1e6)

    def equivalent(b: dict[str, Any]) -> float:  # input tokens at the standard price that cost the same
        return dollars(b) / per_token

    print(f"rates: input ${per_token * 1e6:.2f}/MTok, cache read ${per_read * 1e6:.3f}/MTok, storage "
          f"${STORAGE_PER_MTOK_HOUR:.2f}/MTok-hour ({MODEL}, genai-prices)")
    print("| arm | requests | caches made | tokens sent uncached | tokens read from a cache | tokens written to "
          "caches | billed input, token-equivalents | vs without |")
    print("|---|---|---|---|---|---|---|---|")
    for label, b in (("without the mapping (baseline)", base), ("cache_control -> cachedContents", mapped)):
        print(f"| {label} | {b['requests']} | {b['caches']} | {b['fresh']:,} | {b['read']:,} | {b['made']:,} | "
              f"{equivalent(b):,.0f} | {equivalent(b) / equivalent(base):.2f} |")
    u = mapped["usage"]
    print(f"\nAnthropic usage reported (mapped arm): input_tokens {u['input_tokens']:,}, cache_read_input_tokens "
          f"{u['cache_read_input_tokens']:,}, cache_creation_input_tokens {u['cache_creation_input_tokens']:,}")


if __name__ == "__main__":
    main()
