"""Gemini usageMetadata -> Responses usage (reference/protocols.md §B4, §C)."""

from typing import Any


def map_usage(meta: dict[str, Any] | None) -> dict[str, Any]:
    meta = meta or {}
    prompt = int(meta.get("promptTokenCount") or 0)
    candidates = int(meta.get("candidatesTokenCount") or 0)
    thoughts = int(meta.get("thoughtsTokenCount") or 0)
    output = candidates + thoughts  # candidatesTokenCount excludes thinking tokens
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": int(meta.get("cachedContentTokenCount") or 0),
                                 "cache_write_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": thoughts},
        "total_tokens": int(meta.get("totalTokenCount") or prompt + output),
    }


# Gemini's token counts, which add up when one answer is made of several requests (a compaction's
# summary before the turn, the proxy's tool-search hops: each request counts its own).
SUMMED = ("promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "totalTokenCount",
          "cachedContentTokenCount", "toolUsePromptTokenCount")


def added_usage(usage: dict[str, Any] | None, more: dict[str, Any] | None) -> dict[str, Any] | None:
    """Two Gemini usageMetadata counted as one (the token counts summed, other fields of `usage` kept)."""
    if not more:
        return usage
    return {**(usage or {}), **{k: int((usage or {}).get(k) or 0) + int(more.get(k) or 0) for k in SUMMED
                                if (usage or {}).get(k) or more.get(k)}}
