"""A local estimate of the tokens Gemini reads for a request's contents: a quarter of the text's bytes
(JSON for calls and results, thought signatures left out: Gemini does not bill them as prompt text),
an image or file at Gemini's floor. Made locally because asking countTokens would cost every turn a
round trip; used where a client sets a token threshold (Responses compaction on create, Anthropic
context editing), so it errs the same way on both sides of the threshold."""

import json
from typing import Any

IMAGE_TOKENS = 258  # Gemini's count for an image up to 384 px a side (media_resolution docs); a floor


def part_tokens(part: dict[str, Any]) -> int:
    if "inlineData" in part or "fileData" in part:
        return IMAGE_TOKENS
    if isinstance(part.get("text"), str):
        return len(part["text"].encode()) // 4
    size = len(json.dumps({k: v for k, v in part.items() if k != "thoughtSignature"}, ensure_ascii=False).encode())
    media = part.get("functionResponse", {}).get("parts") if isinstance(part.get("functionResponse"), dict) else None
    return size // 4 + (IMAGE_TOKENS * len(media) if isinstance(media, list) else 0)


def estimate_tokens(system: list[dict[str, Any]], contents: list[dict[str, Any]]) -> int:
    """The estimate for `systemInstruction` parts and `contents`."""
    return sum(part_tokens(p) for p in system) + sum(part_tokens(p) for c in contents for p in c.get("parts") or [])
