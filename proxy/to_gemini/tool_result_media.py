"""Images and files returned by tools, in the form each model takes (`--tool-result-media`).

- `parts` (Gemini 3 and later): the media go in `functionResponse.parts[]`, each with a
  `displayName` that the response object references as `{"$ref": name}` (Gemini's documented
  multimodal function response).
- `siblings` (Gemini 2.5 and older, which answer `function_response.parts` with a 400): the
  response object says which attachment follows, and the media go as ordinary parts of the same
  user turn, after the function responses, each behind a text line naming its call.

The history builders always write the `parts` form; `media_as_siblings` rewrites it for models
that need the other, so the front-end and the interceptor share one rule.
"""

import mimetypes
from typing import Any

from proxy.pattern_rules import matches, parse_rules, rule_for

MODES = ("parts", "siblings")
# Which models take functionResponse.parts when no rule matches: Gemini 3 onwards.
DEFAULT_PARTS_MODELS = ("gemini-3*", "gemini-[4-9]*", "models/gemini-3*", "models/gemini-[4-9]*")


def parts_in_results(model: str, rules: list[tuple[str, str]] | None = None) -> bool:
    mode = rule_for(model, rules or ())
    return mode == "parts" if mode else matches(model, DEFAULT_PARTS_MODELS)


def parse_media_rules(specs: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """`["gemini-2.5-pro=parts", "*=siblings"]` -> rules (first match wins); a bare mode applies to all."""
    return parse_rules(specs, MODES, "tool result media")


def _display_name(media: dict[str, Any], call_id: str, n: int) -> str:
    data = media.get("inlineData") or media.get("fileData") or {}
    mime = data.get("mimeType")
    ext = (mimetypes.guess_extension(mime, strict=False) if mime else None) or ""
    return f"{call_id}-{n}{ext}"


def response_with_media(name: str, gemini_id: str | None, call_id: str, text: str,
                        media: list[dict[str, Any]], error: bool = False) -> dict[str, Any]:
    """A functionResponse part: the text as `output` (`error` for a failed call, Gemini's other
    documented key), the media as referenced `parts`."""
    response: dict[str, Any] = {"error" if error else "output": text}
    fr: dict[str, Any] = {"name": name, "response": response}
    if gemini_id:
        fr["id"] = gemini_id
    if media:
        parts, refs = [], []
        for n, m in enumerate(media, 1):
            key = "inlineData" if "inlineData" in m else "fileData"
            label = _display_name(m, call_id, n)
            parts.append({key: {**m[key], "displayName": label}})
            refs.append({"$ref": label})
        response["attachments"] = refs
        fr["parts"] = parts
    return {"functionResponse": fr}


def media_as_siblings(contents: list[dict[str, Any]]) -> int:
    """Rewrite `functionResponse.parts` as sibling parts after the turn's function responses (in place);
    returns how many turns it rewrote."""
    rewritten = 0
    for content in contents:
        parts = content.get("parts") or []
        for p in parts:
            fr = p.get("functionResponse")
            if isinstance(fr, dict) and fr.get("parts"):
                break
        else:  # (no result in this turn holds media)
            continue
        kept: list[dict[str, Any]] = []
        trailing: list[dict[str, Any]] = []
        for p in parts:
            fr = p.get("functionResponse")
            if not isinstance(fr, dict) or not fr.get("parts"):
                kept.append(p)
                continue
            fr = dict(fr)
            media = fr.pop("parts")
            labels = []
            for m in media:
                key = "inlineData" if "inlineData" in m else "fileData"
                data = dict(m.get(key) or {})
                label = data.pop("displayName", None) or "attachment"
                labels.append(label)
                trailing.append({"text": f"Attachment {label} of the result of {fr.get('name')}"
                                         f"{' (' + fr['id'] + ')' if fr.get('id') else ''}:"})
                trailing.append({key: data})
            response = {k: v for k, v in (fr.get("response") or {}).items() if k != "attachments"}
            response["attachments"] = [f"{label} (follows the function responses)" for label in labels]
            fr["response"] = response
            kept.append({**p, "functionResponse": fr})
        content["parts"] = kept + trailing
        rewritten += 1
    return rewritten
