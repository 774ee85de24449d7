"""Carry what Gemini needs back (thought signatures, its call ids and names) to stateless clients.

Clients that keep no server state (`store: false`, the whole input resent every turn, as Codex does)
ask for `include: ["reasoning.encrypted_content"]` and replay reasoning items unchanged. A reasoning
item whose `encrypted_content` holds the turn's call records is the clean carrier
(translators.md §2.2, CLIProxyAPI's approach); call ids stay short, unlike LiteLLM's `__thought__` ids.
"""

import base64
import binascii
import json
from collections.abc import Iterable
from typing import Any

from proxy.signatures.call_record import CallRecord

PREFIX = "gtp.v1."


def encode_carrier(calls: list[CallRecord]) -> str:
    data = json.dumps([c.to_dict() for c in calls], separators=(",", ":")).encode()
    return PREFIX + base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_carriers(items: Iterable[Any]) -> dict[str, CallRecord]:
    """Call records from every reasoning item that carries ours; anything else is ignored."""
    found: dict[str, CallRecord] = {}
    for item in items:
        content = getattr(item, "encrypted_content", None)
        if getattr(item, "type", None) != "reasoning" or not isinstance(content, str) or not content.startswith(PREFIX):
            continue
        raw = content[len(PREFIX):]
        try:
            records = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
            for r in records:
                rec = CallRecord.from_dict(r)
                if isinstance(rec.call_id, str) and isinstance(rec.gemini_name, str):
                    found[rec.call_id] = rec
        except (binascii.Error, ValueError, TypeError, AttributeError):
            continue  # a damaged carrier only loses the signature, which the sentinel then stands in for
    return found
