"""Carry what Gemini needs back (thought signatures, its call ids and names) to stateless clients.

Clients that keep no server state (`store: false`, the whole input resent every turn, as Codex does)
ask for `include: ["reasoning.encrypted_content"]` and replay reasoning items unchanged. A reasoning
item whose `encrypted_content` holds the turn's call records is the clean carrier
(translators.md §2.2, CLIProxyAPI's approach); call ids stay short, unlike LiteLLM's `__thought__` ids.

The records are sealed with AES-256-GCM under the server's carrier keys (carrier_keys.py): a client
can neither read them nor forge or alter one. A carrier is bound to the client's scope (a hash of it
is authenticated with the seal), so another tenant's carrier opens no more than a forged one. It
also names the Gemini model that made the calls: signatures are bound to their model, so replayed to
another model the calls go without them. Anything that does not open — tampered, forged, another
tenant's, under a retired key, or from an older version (`gtp.v1.`, `gtp.v2.`) — is ignored: the call
then goes to Gemini with the sentinel signature, as any call the proxy has no record of.
"""

import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from proxy.signatures.call_record import CallRecord
from proxy.signatures.carrier_keys import CarrierKeys
from proxy.signatures.model_bound import unsigned

log = logging.getLogger(__name__)
PREFIX = "gtp.v3."
COMPACTION = "gtp.c1."  # a compaction item's encrypted_content (responses/compact.py)


def _label(scope: str, prefix: str = PREFIX) -> bytes:
    """What the seal authenticates besides the data: the version and the client's scope."""
    return prefix.encode() + hashlib.sha256(b"scope:" + scope.encode()).digest()[:16]


@dataclass(frozen=True)
class CarrierSeal:
    """The carrier of one request: the server's keys, the client's scope ("" without client keys) and
    the Gemini model the request goes to."""

    keys: CarrierKeys
    scope: str
    model: str

    def encode(self, calls: list[CallRecord]) -> str:
        data = json.dumps({"model": self.model, "calls": [c.to_dict() for c in calls]}, separators=(",", ":"))
        return PREFIX + self.keys.seal(data.encode(), _label(self.scope))

    def seal_compaction(self, summary: str, calls: list[CallRecord], items: list[dict[str, Any]] | None = None,
                        covers: str | None = None) -> str:
        """A compaction item's content: the summary of the turns it stands for, and the records of the
        calls the kept items still refer to (so a stateless client's next turn has their signatures).
        A compaction made on create (responses/compaction.py) also holds the items it kept and a digest
        of the input it stands for (`covers`): the client may resend that input before it or drop it."""
        sealed: dict[str, Any] = {"model": self.model, "summary": summary, "calls": [c.to_dict() for c in calls]}
        if items is not None:
            sealed.update(items=items, covers=covers)
        data = json.dumps(sealed, separators=(",", ":"))
        return COMPACTION + self.keys.seal(data.encode(), _label(self.scope, COMPACTION))

    def open_compaction_whole(self, token: str) -> dict[str, Any] | None:
        """Everything a compaction item holds (see seal_compaction), or None when it does not open."""
        if not token.startswith(COMPACTION):
            return None
        data = self.keys.open(token[len(COMPACTION):], _label(self.scope, COMPACTION))
        return json.loads(data) if data is not None else None

    def open_compaction(self, token: str) -> tuple[str, dict[str, CallRecord]] | None:
        """The summary and call records of a compaction item, or None when it does not open for this
        client (forged, altered, another tenant's, under a retired key). Records made by another
        model lose their signatures; the summary is plain text and serves any model."""
        if not token.startswith(COMPACTION):
            return None
        data = self.keys.open(token[len(COMPACTION):], _label(self.scope, COMPACTION))
        if data is None:
            return None
        sealed = json.loads(data)
        same_model = sealed["model"] == self.model
        calls = {}
        for r in sealed["calls"]:
            rec = CallRecord.from_dict(r)
            calls[rec.call_id] = rec if same_model else unsigned(rec)
        return sealed["summary"], calls

    def decode(self, items: Iterable[Any]) -> dict[str, CallRecord]:
        """Call records from every reasoning item that carries ours and opens for this scope; anything
        else is ignored. Records made by another model lose their signatures."""
        found: dict[str, CallRecord] = {}
        for item in items:
            if getattr(item, "type", None) != "reasoning":
                continue  # first: asking other items for a field they lack costs pydantic an exception
            content = getattr(item, "encrypted_content", None)
            if not isinstance(content, str) or not content.startswith("gtp."):
                continue
            data = self.keys.open(content[len(PREFIX):], _label(self.scope)) if content.startswith(PREFIX) else None
            if data is None:
                log.info("a replayed carrier did not open (tampered, forged, another client's, from an older "
                         "version, or sealed under a retired key): ignored")
                continue
            try:
                sealed = json.loads(data)
                same_model = sealed["model"] == self.model
                if not same_model:
                    log.info("a replayed carrier is from %s, this request goes to %s: its signatures stay out",
                             sealed["model"], self.model)
                for r in sealed["calls"]:
                    rec = CallRecord.from_dict(r)
                    if isinstance(rec.call_id, str) and isinstance(rec.gemini_name, str):
                        found[rec.call_id] = rec if same_model else unsigned(rec)
            except (ValueError, TypeError, AttributeError, KeyError):
                continue  # sealed by us, so only a bug gets here; the sentinel stands in
        return found
