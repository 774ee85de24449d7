"""Where a Gemini functionCall becomes the client's call: its tool (name matched loosely, never
invented), its id (Gemini's, else minted), its arguments normalized against the client's schema,
and the record kept so Gemini's own call can be replayed later (signatures/call_record.py)."""

import logging
from dataclasses import dataclass
from typing import Any

from proxy import ids
from proxy.schema.normalize_arguments import normalize_arguments
from proxy.signatures.call_record import CallRecord
from proxy.tools.prepare_tools import PreparedTools
from proxy.tools.tool_names import ToolRef, loose_name

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClientCall:
    ref: ToolRef               # the client's tool (name, namespace, function or custom)
    args: dict[str, Any]       # normalized against the client's schema
    record: CallRecord         # what is remembered to replay Gemini's own call later

    @property
    def call_id(self) -> str:
        return self.record.call_id


def client_call(tools: PreparedTools, part: dict[str, Any], call_id: str | None = None) -> ClientCall:
    """What the client is shown for one Gemini functionCall part, and the record kept of it
    (`call_id`: the id already shown for a streamed call)."""
    fc = part["functionCall"]
    gname = fc.get("name", "")
    call_id = call_id or fc.get("id") or ids.call_id()
    declared = match_name(tools, gname)
    ref = tools.names.ref(declared)
    original = fc.get("args") if isinstance(fc.get("args"), dict) else {}
    args = normalize(tools, declared, original)
    record = CallRecord(call_id, ref.name, gname, fc.get("id"), part.get("thoughtSignature"),
                        original if args != original else None)  # history replays what Gemini said
    return ClientCall(ref, args, record)


def match_name(tools: PreparedTools, gemini_name: str) -> str:
    """A declared name for what Gemini called: exact, else ignoring case and `-`/`_`/`.` (never invented)."""
    if gemini_name in tools.names.refs or not tools.names.refs:
        return gemini_name
    key = loose_name(gemini_name)
    found = [n for n in tools.names.refs if loose_name(n) == key]
    return found[0] if len(found) == 1 else gemini_name


def normalize(tools: PreparedTools, gemini_name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Arguments fixed against the client's schema (see normalize_arguments); violations are logged."""
    fixed, errors = normalize_arguments(args, tools.schemas.get(gemini_name), fill_missing=tools.fill_missing)
    if errors:
        log.warning("arguments of %s do not match its schema: %s", tools.names.ref(gemini_name).name,
                    "; ".join(errors[:5]))
    return fixed

