"""The one record of a Gemini function call: what is stored so the call can be replayed exactly.

Both sides of the proxy keep it: the front-end when it hands a call to a client, the interceptor
when it captures one from an app's traffic. Replaying it (`part`) gives back Gemini's own
functionCall part: its name, its id, its arguments and its thought signature on the same part
(docs/wire.md#signatures).
"""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CallRecord:
    call_id: str            # the id the client sees (Gemini's functionCall.id when it sent one)
    name: str               # the client's tool name (Gemini's name when the client's is unknown)
    gemini_name: str        # the name Gemini knows the function by
    gemini_id: str | None   # functionCall.id as Gemini sent it (echoed on functionResponse.id)
    signature: str | None   # thoughtSignature of the functionCall part, exactly as received
    # Gemini's own arguments, when they must be replayed as sent (the client saw normalized ones,
    # or the call was captured from an app's traffic). None: the client's arguments are Gemini's.
    args: dict[str, Any] | None = None
    # Server-side tool parts (Google Search's toolCall/toolResponse, signatures on them) Gemini sent
    # in the same turn before this call, replayed before it: Chat clients have no item to carry them.
    # A hosted tool's own record (a web_search_call item, `gemini_name` "") holds just these.
    server_parts: list[dict[str, Any]] | None = None
    # The Gemini model that made the call: its signature is valid for that model only (model_bound.py).
    # None: not known (a record kept before records named their model, or one built from client input).
    model: str | None = None

    @property
    def hosted(self) -> bool:
        """The record of a hosted tool's item (web_search_call), not of a function call."""
        return not self.gemini_name

    def part(self, client_args: dict[str, Any] | None = None) -> dict[str, Any]:
        """The functionCall part as Gemini sent it; `client_args` stand in when no own args are kept."""
        return function_call_part(self.gemini_name, self.gemini_id,
                                  self.args if self.args is not None else (client_args or {}), self.signature)

    def to_dict(self) -> dict[str, Any]:
        """The record's fields, for JSON: every caller serializes it at once, so what they hold (its
        arguments, server parts) is shared, not copied (dataclasses.asdict deep-copies each)."""
        d = {"call_id": self.call_id, "name": self.name, "gemini_name": self.gemini_name, "gemini_id": self.gemini_id,
             "signature": self.signature, "args": self.args}
        if self.server_parts is not None:  # (most records have neither: kept out of carriers and the store)
            d["server_parts"] = self.server_parts
        if self.model is not None:
            d["model"] = self.model
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CallRecord":
        args = d.get("args", d.get("original_args"))  # "original_args": carriers minted before 0.2
        server_parts = d.get("server_parts")
        return cls(d.get("call_id"), d.get("name") or d.get("gemini_name"), d.get("gemini_name"),  # type: ignore[arg-type]
                   d.get("gemini_id"), d.get("signature"), args if isinstance(args, dict) else None,
                   server_parts if isinstance(server_parts, list) else None,
                   d.get("model") if isinstance(d.get("model"), str) else None)


def function_call_part(gemini_name: str, gemini_id: str | None, args: dict[str, Any],
                       signature: str | None = None) -> dict[str, Any]:
    """A functionCall part: `CallRecord.part`'s shape, for a call no record is kept of (history the
    proxy never saw) without building one."""
    call: dict[str, Any] = {"name": gemini_name, "args": args}
    if gemini_id:
        call["id"] = gemini_id
    part: dict[str, Any] = {"functionCall": call}
    if signature:
        part["thoughtSignature"] = signature
    return part
