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
