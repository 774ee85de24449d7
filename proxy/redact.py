"""Secrets out of everything the journal keeps, the page shows, a log line and a span carry. It
stands on the ground floor (imports nothing of the proxy): the wire, the metrics and the journal
all ask it.

Three nets, each catching what the others may not:
- headers that carry credentials by name (their values become REDACTED);
- the secrets the process knows (client keys, Gemini keys, carrier keys, the key the request
  presented) wherever their text appears, in any header, query or body position;
- the shapes of well-known credentials (Google API keys, OAuth access tokens, `sk-` keys, GitHub
  tokens, JWTs, bearer tokens) and the proxy's sealed carriers, whoever's they are.

A short value a client chose (a model name, a metric's label, a span's name) is judged whole
(`Redactor.secret_in`): there a long run of letters and digits is a credential too, which it cannot
be in a document (base64 media, thought signatures). The process's redactor (`process()`, the
recorder's once there is one) is the one every exporter asks: the model-name check, the metrics'
labels, the spans and the access log.
"""

import contextvars
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

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
    rb"|sk-[A-Za-z0-9_\-]{16,}"                 # OpenAI/Anthropic-style keys (sk-ant-... too)
    rb"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"  # GitHub tokens
    rb"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"  # JWTs (a JSON header, base64url: `{"`)
    rb"|(?i:bearer)\s+[A-Za-z0-9_\-.~+/=]{8,}"  # any bearer token in text
    rb"|gtp\.(?:v[0-9]|c[0-9])\.[A-Za-z0-9_\-.=+/]+"  # sealed carriers and compactions
)
_PATTERNS = re2.compile(_SHAPES)
# In a short value only: 24 letters and digits in a row, a digit and a letter among them, are a
# random token (a hex digest, a base62 key), never a model's name (`gemini-2.5-flash-preview-05-20`,
# `Qwen/Qwen3-30B-A3B-Instruct-2507`, `claude-sonnet-4-5@20250929`: their words are short).
_RUNS = re.compile(r"[A-Za-z0-9]{24,}")


def _random_token(value: str) -> bool:
    return any(not run.isalpha() and not run.isdigit() for run in _RUNS.findall(value))


# secret_in's memory: values up to this length (model names are short), this many of them.
MAX_JUDGED_LENGTH, MAX_JUDGED = 200, 1024
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
        self._judged: dict[str, bool] = {}  # secret_in's answers (forgotten when the secrets change)
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        """Know these secrets too. All of them and the credential shapes are then found in one pass of
        one pattern (a search per secret scanned a document once for each client key), the longest
        first where one begins another."""
        for s in secrets:
            if s and len(s) >= MIN_SECRET:
                self.secrets.update(_spellings(s))
        self._judged = {}
        known = sorted(self.secrets, key=len, reverse=True)
        self._pattern = re2.compile(b"|".join([*map(re2.escape, known), _SHAPES])) if known else _PATTERNS

    def secret_in(self, value: str) -> bool:
        """Whether a short value a client chose (a model name) holds a known secret, a credential's
        shape or a random token (_RUNS): a value that must be neither recorded nor echoed. Asked
        for every request's model (a few times), so the answers for short values are remembered."""
        found = self._judged.get(value)
        if found is None:
            found = bool(self._pattern.search(value.encode("utf-8", "surrogatepass"))) or _random_token(value)
            if len(value) <= MAX_JUDGED_LENGTH:
                if len(self._judged) >= MAX_JUDGED:
                    self._judged.clear()
                self._judged[value] = found
        return found

    def name(self, value: str, extra: Iterable[str] = ()) -> str:
        """A short value as an exporter may write it (a span's model, a log line's field): itself, or
        REDACTED when it holds a secret (secret_in, or one of `extra`: the request's own)."""
        if not value:
            return value
        if self.secret_in(value) or any(s and len(s) >= MIN_SECRET and s in value for s in extra):
            return REDACTED
        return value

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


_PROCESS: list[Redactor] = []


def process() -> Redactor:
    """The process's redactor: the recorder's (it knows the configured keys), else one that knows
    only the credential shapes."""
    if not _PROCESS:
        _PROCESS.append(Redactor())
    return _PROCESS[0]


def use(redactor: Redactor) -> None:
    """Make `redactor` the process's (the recorder calls it, as it puts it on the log handlers)."""
    _PROCESS[:] = [redactor]


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

    def __init__(self, redactor: Redactor, request: contextvars.ContextVar[Any]) -> None:
        """`request`: the request a line is logged in (metrics.CURRENT, whose `secrets` are its own
        and are scrubbed too); passed in, as metrics stands above this module."""
        super().__init__()
        self.redactor = redactor
        self.request = request

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        request = self.request.get()  # (the handlers run in the logging call's context)
        extra = request.secrets if request is not None else ()
        clean = self.redactor.scrub(message.encode(), extra).decode("utf-8", "replace")
        if clean != message:
            record.msg, record.args = clean, ()
        access = getattr(record, "access", None)
        if isinstance(access, dict):
            record.access = {k: self.redactor.scrub(v.encode(), extra).decode() if isinstance(v, str) else v
                             for k, v in access.items()}
        return True


def scrub_logs(redactor: Redactor, request: contextvars.ContextVar[Any]) -> None:
    """Put the scrubber on the root logger's handlers (logs.setup_logging made them)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, LogScrubber) for f in handler.filters):
            handler.addFilter(LogScrubber(redactor, request))
