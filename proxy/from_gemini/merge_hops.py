"""Long answers in hops, on generateContent. Gemini stops a long decode at its per-request limit with
finishReason CONTINUATION and a `continuationToken` on the candidate, and goes on when the same
request is sent again with that token at its top level. google-genai (3.6) continues so by default
(_extra_utils.py: should_continue_generation, merge_continuation_responses, StreamContinuation, the
reference read here); the proxy does the same, so a client gets the answer, not its first hop.
"""

from collections.abc import Collection
from typing import Any

from proxy.errors import UpstreamError

# Hops per answer, on generateContent and the Interactions API alike: a server that kept stopping would
# otherwise hold the request until its deadline; past this many the answer is refused, not passed on cut.
MAX_HOPS = 32
CONTINUATION = "CONTINUATION"


def hop_refusal(source: str, token: str, seen: Collection[str], hops: int, added: bool) -> UpstreamError | None:
    """Why the hop after `hops` of them is not asked for (a 502 naming it), if it is not: the hop before
    handed back a token this answer was already continued with (`seen`: A, B, A... goes round for
    ever), or added nothing (`added`: no parts), or the answer took MAX_HOPS."""
    if token in seen:
        return UpstreamError(f"{source} stopped again with a continuation token this answer was already continued "
                             "with (no progress): the answer is refused rather than passed on cut.", status=502,
                             type="server_error")
    if not added:
        return UpstreamError(f"{source} stopped at its decode limit having added nothing to the answer (no "
                             "progress): the answer is refused rather than passed on cut.", status=502,
                             type="server_error")
    if hops >= MAX_HOPS:
        return UpstreamError(f"{source} had not finished the answer after {MAX_HOPS} continuation hops: it is "
                             "refused rather than passed on cut.", status=502, type="server_error")
    return None


def added_parts(answer: Any) -> bool:
    """Whether a hop's answer (or a stream chunk) carries any part on its first candidate."""
    cands = answer.get("candidates") if isinstance(answer, dict) else None
    cand = cands[0] if isinstance(cands, list) and cands and isinstance(cands[0], dict) else {}
    content = cand.get("content")
    return isinstance(content, dict) and bool(content.get("parts"))


def continuation_of(answer: Any) -> str | None:
    """The token to continue an answer (or a stream's chunk) with: on its first candidate, when the
    decode stopped at the limit (finishReason CONTINUATION; None on a stream's checkpoint chunks)."""
    cands = answer.get("candidates") if isinstance(answer, dict) else None
    cand = cands[0] if isinstance(cands, list) and cands and isinstance(cands[0], dict) else {}
    token = cand.get("continuationToken")
    return token if isinstance(token, str) and token and cand.get("finishReason") == CONTINUATION else None


def continued_body(body: dict[str, Any], token: str) -> dict[str, Any]:
    """The request that goes on from `token`: the same request with the token."""
    return {**body, "continuationToken": token}


def merge_hops(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """The hops as one answer, as google-genai merges them: each candidate's parts in order (each hop's
    parts kept as they are), grounding chunks appended (a later hop's supports shifted onto them), the
    last hop's finish, usage counts summed (each hop is billed for the whole context again), and the
    rest as the last hop says it."""
    merged = answers[0]
    for answer in answers[1:]:
        merged = _merge(merged, answer)
    return merged


def summed_usage(before: dict[str, Any] | None, usage: dict[str, Any] | None) -> dict[str, Any] | None:
    """Usage of two hops: counts added (per modality for the `*TokensDetails` lists)."""
    if not before or not usage:
        return usage or before
    out = dict(before)
    for name, value in usage.items():
        prev = out.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and isinstance(prev, int) and name.endswith("Count"):
            out[name] = prev + value
        elif isinstance(value, list) and isinstance(prev, list) and name.endswith("TokensDetails"):
            counts: dict[Any, int] = {}
            for item in (*prev, *value):
                if isinstance(item, dict):
                    counts[item.get("modality")] = counts.get(item.get("modality"), 0) + (item.get("tokenCount") or 0)
            out[name] = [{"modality": m, "tokenCount": n} for m, n in counts.items()]
        else:
            out[name] = value
    return out


def _merge(prev: dict[str, Any], curr: dict[str, Any]) -> dict[str, Any]:
    out = {**prev, **{k: v for k, v in curr.items() if k not in ("candidates", "usageMetadata")}}
    usage = summed_usage(prev.get("usageMetadata"), curr.get("usageMetadata"))
    if usage is not None:
        out["usageMetadata"] = usage
    before, after = prev.get("candidates") or [], curr.get("candidates") or []
    cands = [_merged_candidate(b, a) for b, a in zip(before, after, strict=False)]
    out["candidates"] = cands + before[len(after):] + after[len(before):]
    return out


def _merged_candidate(prev: dict[str, Any], curr: dict[str, Any]) -> dict[str, Any]:
    out = {**prev, **curr}
    for terminal in ("finishReason", "finishMessage", "continuationToken"):  # the last hop's, even when absent
        if terminal not in curr:
            out.pop(terminal, None)
    parts_before = ((prev.get("content") or {}).get("parts")) or []
    parts_after = ((curr.get("content") or {}).get("parts")) or []
    if parts_before or parts_after:
        out["content"] = {**(prev.get("content") or {}), **(curr.get("content") or {}),
                          "parts": [*parts_before, *parts_after]}
    grounding = _merged_grounding(prev.get("groundingMetadata"), curr.get("groundingMetadata"), len(parts_before))
    if grounding is not None:
        out["groundingMetadata"] = grounding
    return out


def _merged_grounding(prev: Any, curr: Any, part_offset: int) -> Any:
    if not isinstance(prev, dict) or not isinstance(curr, dict):
        return curr if isinstance(curr, dict) else prev
    chunk_offset = len(prev.get("groundingChunks") or [])
    supports = []
    for s in curr.get("groundingSupports") or []:
        s = dict(s)
        if chunk_offset and s.get("groundingChunkIndices"):
            s["groundingChunkIndices"] = [i + chunk_offset for i in s["groundingChunkIndices"]]
        if part_offset and isinstance(s.get("segment"), dict):
            s["segment"] = {**s["segment"], "partIndex": (s["segment"].get("partIndex") or 0) + part_offset}
        supports.append(s)
    out = {**prev, **curr}
    for name, items in (("groundingChunks", curr.get("groundingChunks") or []), ("groundingSupports", supports),
                        ("webSearchQueries", curr.get("webSearchQueries") or [])):
        if prev.get(name) or items:
            out[name] = [*(prev.get(name) or []), *items]
    return out
