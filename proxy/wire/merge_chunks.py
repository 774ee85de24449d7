"""Gemini stream chunks -> the single answer generateContent would have returned."""

from typing import Any

from proxy.wire.gemini import first_candidate_parts


def merge_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The non-streaming answer: all parts in one candidate, like generateContent returns."""
    parts: list[dict[str, Any]] = []
    for c in chunks:
        for p in first_candidate_parts(c):
            if parts and set(p) == {"text"} and set(parts[-1]) == {"text"}:
                parts[-1] = {"text": parts[-1]["text"] + p["text"]}
            elif parts and set(p) == {"text", "thought"} and set(parts[-1]) == {"text", "thought"}:
                parts[-1] = {**parts[-1], "text": parts[-1]["text"] + p["text"]}
            else:
                parts.append(dict(p))
    last = chunks[-1] if chunks else {}
    merged = {k: v for k, v in last.items() if k != "candidates"}
    cands = last.get("candidates")
    if cands:
        cand = {k: v for k, v in cands[0].items() if k != "content"}
        if parts:
            cand["content"] = {"role": "model", "parts": parts}
        merged["candidates"] = [cand]
    return merged
