"""Carry what Gemini needs back (thought signatures, its call ids and names) to stateless clients.

Clients that keep no server state (`store: false`, the whole input resent every turn, as Codex does)
ask for `include: ["reasoning.encrypted_content"]` and replay reasoning items unchanged. A reasoning
item whose `encrypted_content` holds the turn's call records is the clean carrier
(translators.md §2.2, CLIProxyAPI's approach); call ids stay short, unlike LiteLLM's `__thought__` ids.

The records are sealed with AES-256-GCM under the server's carrier keys (carrier_keys.py): a client
can neither read them nor forge or alter one. Anything that does not open — tampered, forged, under
a retired key, or an unsealed `gtp.v1.` carrier from before — is ignored: the call then goes to
Gemini with the sentinel signature, as any call the proxy has no record of.
"""

import json
import logging
from collections.abc import Iterable
from typing import Any

from proxy.signatures.call_record import CallRecord
from proxy.signatures.carrier_keys import CarrierKeys

log = logging.getLogger(__name__)
PREFIX = "gtp.v2."
_LABEL = PREFIX.encode()


def encode_carrier(calls: list[CallRecord], keys: CarrierKeys) -> str:
    data = json.dumps([c.to_dict() for c in calls], separators=(",", ":")).encode()
    return PREFIX + keys.seal(data, _LABEL)


def decode_carriers(items: Iterable[Any], keys: CarrierKeys) -> dict[str, CallRecord]:
    """Call records from every reasoning item that carries ours and opens; anything else is ignored."""
    found: dict[str, CallRecord] = {}
    for item in items:
        if getattr(item, "type", None) != "reasoning":
            continue  # first: asking other items for a field they lack costs pydantic an exception
        content = getattr(item, "encrypted_content", None)
        if not isinstance(content, str) or not content.startswith("gtp."):
            continue
        data = keys.open(content[len(PREFIX):], _LABEL) if content.startswith(PREFIX) else None
        if data is None:
            log.info("a replayed carrier did not open (tampered, forged, or sealed under a retired key): ignored")
            continue
        try:
            for r in json.loads(data):
                rec = CallRecord.from_dict(r)
                if isinstance(rec.call_id, str) and isinstance(rec.gemini_name, str):
                    found[rec.call_id] = rec
        except (ValueError, TypeError, AttributeError):
            continue  # sealed by us, so only a bug gets here; the sentinel stands in
    return found
