"""A session's tool context for intercepted traffic: the tools to inject, and the rounds of calls
captured from Gemini's answers with the results the front-end recorded for them."""

from dataclasses import asdict, dataclass, field
from typing import Any

from proxy.signatures.call_record import CallRecord


@dataclass
class ToolRound:
    calls: list[CallRecord]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # call_id -> functionResponse.response


@dataclass
class ToolContext:
    declarations: list[dict[str, Any]] = field(default_factory=list)
    tool_config: dict[str, Any] | None = None
    client_names: dict[str, str] = field(default_factory=dict)  # Gemini name -> the client's name
    rounds: list[ToolRound] = field(default_factory=list)
    # The stored text the declarations, tool_config and client_names were read from (entry_store.py),
    # or None: the same text means the same tools, so the addon reuses what it made of them (rewrite.py).
    version: bytes | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["version"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ToolContext":
        rounds = [ToolRound([CallRecord.from_dict(c) for c in r["calls"]], dict(r.get("results") or {}))
                  for r in d.get("rounds") or []]
        return cls(list(d.get("declarations") or []), d.get("tool_config"), dict(d.get("client_names") or {}),
                   rounds)

    def find_call(self, call_id: str) -> tuple[ToolRound, CallRecord] | None:
        for rnd in reversed(self.rounds):
            for call in rnd.calls:
                if call.call_id == call_id:
                    return rnd, call
        return None
