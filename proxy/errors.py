"""Errors raised by the translation core; the shell renders them in the caller's protocol."""

from dataclasses import dataclass


@dataclass
class ProxyError(Exception):
    """A request the proxy refuses or could not complete.

    `message` is written for a person; `param` names the offending request field (OpenAI style);
    `code` is OpenAI's machine code where one exists.
    """

    message: str
    status: int = 400
    param: str | None = None
    code: str | None = None
    type: str = "invalid_request_error"

    def __str__(self) -> str:
        return self.message


@dataclass
class UpstreamError(ProxyError):
    """Gemini answered with an error; `gemini_error` is its `error` object, kept as sent."""

    gemini_error: dict | None = None


@dataclass
class PairingError(ProxyError):
    """A function call without its output, or an output without its call (each API words it its own way)."""

    call_id: str = ""
    missing_output: bool = False
