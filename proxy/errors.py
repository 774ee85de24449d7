"""Errors raised by the translation core; the shell renders them in the caller's protocol."""

from dataclasses import dataclass, field
from typing import Any

# Google's canonical status names for HTTP codes, as Gemini's error objects carry them.
GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 405: "UNIMPLEMENTED", 408: "DEADLINE_EXCEEDED", 409: "ABORTED", 413: "INVALID_ARGUMENT",
                 415: "INVALID_ARGUMENT", 421: "PERMISSION_DENIED",
                 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "UNIMPLEMENTED", 502: "UNAVAILABLE",
                 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def gemini_status(status: int) -> str:
    return GEMINI_STATUS.get(status, "UNKNOWN")


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
    headers: dict[str, str] = field(default_factory=dict)  # e.g. Retry-After, WWW-Authenticate

    def __str__(self) -> str:
        return self.message


@dataclass
class UpstreamError(ProxyError):
    """Gemini answered with an error; `gemini_error` is its `error` object, kept as sent."""

    gemini_error: dict | None = None
    retry_after: float | None = None  # seconds Gemini asked to wait (RetryInfo / Retry-After)

    @classmethod
    def from_gemini(cls, err: dict | None, status: int | None = None, fallback: str = "") -> "UpstreamError":
        """Gemini's error object as an error. From an HTTP answer (`status` given) the message is
        Gemini's; from a stream, where no HTTP status tells what failed, it names the object's code and
        status too ("Gemini error 500 INTERNAL: ..."); the status is then its `code`, else 502."""
        message = (err or {}).get("message") or fallback
        if status is None:
            code = (err or {}).get("code")
            status = code if isinstance(code, int) and 400 <= code < 600 else 502
            head = " ".join(str(x) for x in (status, (err or {}).get("status")) if x)
            text = f"Gemini error {head}: {message}"
        else:
            text = f"Gemini error: {message or f'HTTP {status}'}"
        if status == 429:  # OpenAI's spelling of a rate limit, which its SDKs act on
            return cls(text, status=status, gemini_error=err, type="rate_limit_error", code="rate_limit_exceeded")
        return cls(text, status=status, gemini_error=err,
                   type="invalid_request_error" if 400 <= status < 500 else "server_error")


@dataclass
class RateLimited(ProxyError):
    """A client key over its own budget (--limit): each protocol's rate-limit error; Gemini's carries
    RetryInfo and a QuotaFailure naming the limit, as Google's own 429s do."""

    retry_after: float = 0.0
    quota: str = ""  # the limit's kind: rpm, tpm, usd_day, usd_month


@dataclass
class PairingError(ProxyError):
    """A function call without its output, or an output without its call (each API words it its own way)."""

    call_id: str = ""
    missing_output: bool = False


def openai_error_body(e: ProxyError) -> dict[str, Any]:
    """OpenAI's error object, the shape of both OpenAI protocols (Responses, Chat Completions)."""
    return {"error": {"message": e.message, "type": e.type, "param": e.param, "code": e.code}}
