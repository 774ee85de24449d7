"""`[[mock:hops N]]`: the mock stops a text answer at its "per-request decode limit" N-1 times, as
Gemini does for long decodes (generateContent: finishReason CONTINUATION and a continuationToken;
Interactions: status requires_continuation). The shapes are google-genai 3.6's (its types and its
continuation code); no live recording of a continuation is public, so how the mock checks a
continuation is its guess at the server's checks. `[[mock:hops N stuck]]`: the continuation hands
the token back with nothing new; `alternate`: each continuation adds a little text and hands back
one of two tokens in turn (A, B, A, ...), never finishing; `empty`: each continuation adds nothing
and hands back a new token, never finishing (a server that would be asked forever)."""

import base64
import math
import secrets
from typing import Any

from proxy.mock.model import DIRECTIVE, latest_user_text


def directive(body: dict[str, Any], name: str) -> str:
    """The argument of `[[mock:NAME ...]]` in the latest user text ('' when absent)."""
    text = latest_user_text(body.get("contents") or [])[1]
    return next(((m.group(2) or "").strip() for m in DIRECTIVE.finditer(text) if m.group(1) == name), "")


def split(body: dict[str, Any], parts: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The answer's parts in as many hops as `[[mock:hops N]]` asks: its text cut in N pieces
    (thoughts in the first hop, calls in the last); one hop without the directive or without text."""
    try:
        n = int(directive(body, "hops").split()[0])
    except (IndexError, ValueError):
        return [parts]
    at = next((i for i, p in enumerate(parts) if p.get("text") and not p.get("thought")), None)
    if at is None or n < 2:
        return [parts]
    text = parts[at]["text"]
    size = math.ceil(len(text) / min(n, len(text)))
    hops = [[{"text": text[i:i + size]}] for i in range(0, len(text), size)]
    hops[0][:0] = parts[:at]
    hops[-1] += parts[at + 1:]
    return hops


MODES = ("stuck", "alternate", "empty")


def mode(body: dict[str, Any]) -> str:
    """How later hops go: '' (as planned), or one of MODES."""
    words = directive(body, "hops").split()
    return words[1] if len(words) > 1 and words[1] in MODES else ""


def hop_parts(plan: dict[str, Any], k: int) -> tuple[list[dict[str, Any]], bool]:
    """Hop `k`'s parts, and whether it is the last (the plan's mode decides for the hops after the first)."""
    hops, how = plan["hops"], plan.get("mode", "")
    if not how or k == 0:
        return hops[k], k == len(hops) - 1
    return ([{"text": " and more"}] if how == "alternate" else []), False


def produced(plan: dict[str, Any], k: int) -> list[dict[str, Any]]:
    """The parts of hops 0 to `k`."""
    return [p for j in range(k + 1) for p in hop_parts(plan, j)[0]]


def next_token(plan: dict[str, Any], k: int, sent: str | None) -> str:
    """The token hop `k` (not the last) ends with."""
    how = plan.get("mode", "")
    if how == "stuck" and k > 0:
        return sent or token()
    if how == "alternate":
        pair = plan.setdefault("pair", [token(), token()])
        return pair[k % 2]
    return token()


def token() -> str:
    """An opaque token, base64 as google-genai reads it (bytes in its types)."""
    return base64.b64encode(secrets.token_bytes(12)).decode()


def key(token: Any) -> bytes | None:
    """What a token stands for, however it is spelled: google-genai decodes the base64 it was given
    and sends the bytes back URL-safe (as proto3 JSON allows), so `+/` may come back as `-_`."""
    if not isinstance(token, str):
        return None
    try:
        return base64.urlsafe_b64decode(token.replace("+", "-").replace("/", "_") + "=" * (-len(token) % 4))
    except ValueError:
        return None


def hop_usage(meta: dict[str, Any] | None, k: int, n: int) -> tuple[int, int, int]:
    """Hop k of n: (input, output, thought) tokens. Each hop reads the context again: its input is the
    prompt and what the hops before it wrote."""
    meta = meta or {}
    out = (meta.get("candidatesTokenCount") or 0) // n
    return (meta.get("promptTokenCount") or 0) + out * k, out, (meta.get("thoughtsTokenCount") or 0) if k == 0 else 0


def generate_hop(plan: dict[str, Any], k: int, start: int, sent: str | None,
                 pending: dict[str, Any]) -> list[dict[str, Any]]:
    """The chunks of hop `k` of a planned generateContent answer, from its part `start` (a checkpoint's
    resumption): one chunk per part, the first carrying a checkpoint token (resumable from the part
    after it, as a stream dropped there would be), the last the finish: CONTINUATION with a new token
    unless it is the last hop (a plan's mode may say otherwise for later hops: next_token). Tokens
    are entered in `pending`: key(token) -> (plan, hop, part)."""
    hops = plan["hops"]
    parts, last = hop_parts(plan, k)
    parts = parts[start:]
    head = {"modelVersion": plan["model"], "responseId": f"mock-hop{k}-{secrets.token_hex(4)}"}
    chunks = [{"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}], **head} for p in parts]
    if len(chunks) > 1:
        checkpoint = token()
        chunks[0]["candidates"][0]["continuationToken"] = checkpoint
        pending[key(checkpoint)] = (plan, k, start + 1)
    end: dict[str, Any] = {"index": 0, "finishReason": plan["finish"] if last else "CONTINUATION"}
    if not last:
        end["continuationToken"] = next_token(plan, k, sent)
        pending.setdefault(key(end["continuationToken"]), (plan, k + 1, 0))
    if not chunks:
        chunks = [{"candidates": [{}], **head}]
    chunks[-1]["candidates"][0].update(end)
    inputs, output, thoughts = hop_usage(plan["usage"], k, len(hops))
    chunks[-1]["usageMetadata"] = {"promptTokenCount": inputs, "candidatesTokenCount": output,
                                   "totalTokenCount": inputs + output + thoughts,
                                   **({"thoughtsTokenCount": thoughts} if thoughts else {})}
    return chunks
