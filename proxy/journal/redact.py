"""Secrets out of everything the journal keeps, the page shows and a span carries.

Three nets, each catching what the others may not:
- headers that carry credentials by name (their values become REDACTED);
- the secrets the process knows (client keys, Gemini keys, carrier keys, the key the request
  presented) wherever their text appears, in any header, query or body position;
- the shapes of well-known credentials (Google API keys, OAuth access tokens, `sk-` keys, bearer
  tokens) and the proxy's sealed carriers, whoever's they are.
"""

import logging
import re
from collections.abc import Iterable, Mapping

import orjson
import re2

REDACTED = "[redacted]"
REDACTED_BYTES = REDACTED.encode()
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-goog-api-key", "x-api-key", "api-key",
                            "cookie", "set-cookie", "x-goog-user-project-token", "x-gtp-relay-token"})
# The shortest known secret replaced by value: shorter strings would match ordinary text.
MIN_SECRET = 8
_SHAPES = (  # for RE2: linear time on any document
    rb"AIza[0-9A-Za-z_\-]{30,}"                 # Google API keys
    rb"|ya29\.[0-9A-Za-z_\-.]+"                 # Google OAuth access tokens
    rb"|1//[0-9A-Za-z_\-]{20,}"                 # Google OAuth refresh tokens
    rb"|sk-[A-Za-z0-9_\-]{16,}"                 # OpenAI/Anthropic-style keys
    rb"|(?i:bearer)\s+[A-Za-z0-9_\-.~+/=]{8,}"  # any bearer token in text
    rb"|gtp\.(?:v[0-9]|c[0-9])\.[A-Za-z0-9_\-.=+/]+"  # sealed carriers and compactions
)
_PATTERNS = re2.compile(_SHAPES)
_QUERY_KEY = re.compile(r"([?&](?:key|api_key|access_token)=)[^&#]*", re.I)


def headers(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A request's or answer's headers with credential headers' values replaced."""
    out: dict[str, str] = {}
    for name, value in items:
        lower = name.lower()
        out[lower] = REDACTED if lower in SECRET_HEADERS else value
    return out


def path(text: str) -> str:
    """A path with its query's key parameters replaced."""
    return _QUERY_KEY.sub(lambda m: m.group(1) + REDACTED, text) if "=" in text else text


class Redactor:
    """Scrubs serialized documents of the known secrets and of credential shapes."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets: set[bytes] = set()
        self._pattern = _PATTERNS
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        """Know these secrets too. All of them and the credential shapes are then found in one pass of
        one pattern (a search per secret scanned a document once for each client key), the longest
        first where one begins another."""
        for s in secrets:
            if s and len(s) >= MIN_SECRET:
                self.secrets.update(_spellings(s))
        known = sorted(self.secrets, key=len, reverse=True)
        self._pattern = re2.compile(b"|".join([*map(re2.escape, known), _SHAPES])) if known else _PATTERNS

    def scrub_summary(self, doc: bytes, extra: Iterable[str] = ()) -> tuple[bytes, dict]:
        """A summary (small, sent live at once) as JSON and as an object, without the known secrets;
        its free text (the error, which may quote what the client sent) also without credential shapes."""
        secrets = (*self.secrets, *(spelt for s in extra if s and len(s) >= MIN_SECRET for spelt in _spellings(s)))
        if not doc.endswith(b'"error":null}') or any(secret in doc for secret in secrets):
            doc = self.scrub(doc, extra)
        return doc, orjson.loads(doc)

    def scrub(self, doc: bytes, extra: Iterable[str] = ()) -> bytes:
        """`doc` without the known secrets, `extra` (one exchange's own) and credential shapes."""
        for s in extra:
            for secret in _spellings(s) if s and len(s) >= MIN_SECRET else ():
                if secret not in self.secrets and secret in doc:
                    doc = doc.replace(secret, REDACTED_BYTES)
        return self._pattern.sub(REDACTED_BYTES, doc)


def _spellings(secret: str) -> tuple[bytes, ...]:
    """A secret as text, and as a JSON document's string spells it when that differs (a quote, a
    backslash or a control character in it is escaped there)."""
    raw, quoted = secret.encode(), orjson.dumps(secret)[1:-1]
    return (raw,) if quoted == raw else (raw, quoted)


def known_secrets(env: Mapping[str, str]) -> list[str]:
    """Secrets the environment holds for the proxy (Gemini keys, client keys, carrier keys)."""
    out: list[str] = []
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GTP_OPENAI_UPSTREAM_KEY"):
        if env.get(name):
            out.append(env[name])
    for name in ("GEMINI_API_KEYS", "GTP_API_KEYS", "GTP_CARRIER_KEYS"):
        out += [s for s in re.split(r"[\s,]+", env.get(name, "")) if s]
    return out


class LogScrubber(logging.Filter):
    """Scrubs the known secrets and credential shapes from every log line (a client may put its key in
    a field the proxy's messages quote, such as an id it asked for)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self.redactor.scrub(message.encode()).decode("utf-8", "replace")
        if clean != message:
            record.msg, record.args = clean, ()
        access = getattr(record, "access", None)
        if isinstance(access, dict):
            record.access = {k: self.redactor.scrub(v.encode()).decode() if isinstance(v, str) else v
                             for k, v in access.items()}
        return True


def scrub_logs(redactor: Redactor) -> None:
    """Put the scrubber on the root logger's handlers (logs.setup_logging made them)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, LogScrubber) for f in handler.filters):
            handler.addFilter(LogScrubber(redactor))
