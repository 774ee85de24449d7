"""What the proxy remembers about one function call it has handed to a client."""

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class CallRecord:
    call_id: str            # the id the client sees (Gemini's functionCall.id when it sent one)
    name: str               # the client's tool name
    gemini_name: str        # the name Gemini knows the function by
    gemini_id: str | None   # functionCall.id as Gemini sent it (echoed on functionResponse.id)
    signature: str | None   # thoughtSignature of the functionCall part, exactly as received
    # Gemini's own arguments when the client was given normalized ones: history replays what Gemini said.
    original_args: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CallRecord":
        return cls(**{k: d.get(k) for k in ("call_id", "name", "gemini_name", "gemini_id", "signature",
                                             "original_args")})
