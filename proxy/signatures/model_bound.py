"""Thought signatures are bound to the Gemini model that made them: replayed to another model, Gemini
refuses the request ("Corrupted thought signature": CLIProxyAPI #1538, a gemini-3-pro-preview
signature sent to another model; Roo-Code #10554). What the proxy keeps names its model — a call's
record (CallRecord.model), a stored turn (StoredResponse.model), a carrier — and replayed to another
model it goes without its signatures: the sentinel stands in where Gemini 3 needs one (sentinel.py).
"""

from dataclasses import replace
from typing import Any

from proxy.signatures.call_record import CallRecord


def unsigned(rec: CallRecord) -> CallRecord:
    """A record without Gemini's signatures (on the call and on server-side tool parts)."""
    parts = [{k: v for k, v in p.items() if k != "thoughtSignature"} for p in rec.server_parts or []]
    return replace(rec, signature=None, server_parts=parts if rec.server_parts is not None else None)


def for_model(rec: CallRecord, model: str) -> CallRecord:
    """The record as it may be replayed to `model`: unsigned when another model made it (a record
    that names no model was kept before records did, and is replayed as it is)."""
    return rec if rec.model is None or rec.model == model else unsigned(rec)


def without_signatures(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Contents another model produced, as this one may be sent them: every thought signature
    left out (new objects wherever one was taken out; the rest shared)."""
    out = []
    for content in contents:
        parts = content.get("parts") if isinstance(content, dict) else None
        if isinstance(parts, list) and any(isinstance(p, dict) and "thoughtSignature" in p for p in parts):
            content = {**content, "parts": [{k: v for k, v in p.items() if k != "thoughtSignature"}
                                            if isinstance(p, dict) else p for p in parts]}
        out.append(content)
    return out
