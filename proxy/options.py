"""Every option of the proxy, declared once: its command-line name (`serve`, `mitm`), its addon name
(`gtp_*`, for mitmdump and `gtp_config`), its kind, default and help. cli.py builds the command
line from this table, intercept/options.py the addon's options, config_file.py reads a config file
by either name. An option only one side has says so (`serve=False`, `addon=None`).

Durations are seconds: fractional on the command line, whole on the addon (mitmproxy's `--set`
parses no floats), where the default is rounded up.
"""

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from proxy.dialects import DIALECTS
from proxy.dialects.tool_modes import DEFAULT_TOOL_MODES
from proxy.intercept.relay import DEFAULT_TIMEOUT as DEFAULT_RELAY_TIMEOUT
from proxy.journal.ring import DEFAULT_MAX_BYTES as JOURNAL_MAX_BYTES
from proxy.server.auth import KEYS_ENV
from proxy.server.site import (
    DEFAULT_BACKGROUND_LEASE,
    DEFAULT_BACKGROUND_PER_KEY,
    DEFAULT_CLIENT_TIMEOUT,
    DEFAULT_SHUTDOWN_TIMEOUT,
)
from proxy.session.placeholders import DEFAULT_PLACEHOLDER
from proxy.signatures.carrier_keys import KEYS_ENV as CARRIER_KEYS_ENV
from proxy.signatures.carrier_keys import KEYS_FILE as CARRIER_KEYS_FILE
from proxy.store.memory import DEFAULT_MAX_BYTES, DEFAULT_SESSION_BYTES, DEFAULT_TTL_SECONDS
from proxy.upstream.forced_choice import POLICIES
from proxy.upstream.gemini import DEFAULT_BASE_URL, DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, DEFAULT_TOTAL_TIMEOUT
from proxy.upstream.http_session import DEFAULT_POOL_TIMEOUT
from proxy.upstream.retry import DEFAULT_MAX_RETRIES

DEFAULT_PORT = 8741
DEFAULT_HOSTS = ("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "*cloudcode-pa*.googleapis.com",
                 "aiplatform.googleapis.com", "*-aiplatform.googleapis.com")

Kind = Literal["text", "list", "flag", "seconds", "count", "port", "bytes"]


# -- command-line value types (a bad value is argparse's one-line usage error, exit 2) -------------

def seconds(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):  # inf would switch a defence (the client timeout) off
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, not {text}")
    return value


def wait_seconds(text: str) -> float:
    """Seconds that may be 0 (no wait), for a wait rather than a defence."""
    value = float(text)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be 0 or a positive, finite number of seconds, not {text}")
    return value


def port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port from 1 to 65535 (0: any free one), not {text}")
    return value


def size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    scale = units.get(text[-1:].upper(), 1)
    try:
        value = int(float(text[:-1] if scale > 1 else text) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of bytes such as 64M, not {text}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


TYPES: dict[str, Callable[[str], Any]] = {"seconds": seconds, "port": port, "bytes": size, "count": count}


@dataclass(frozen=True)
class Option:
    name: str                       # the command line's long name, without the dashes
    kind: Kind
    default: Any
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    addon: str | None = ""          # the addon's name ("": gtp_ + name; None: the addon has no such option)
    addon_default: Any = ...        # where the addon's default differs (...: the same)
    serve: bool = True              # an option of `serve`
    type: Callable[[str], Any] | None = None  # the command line's value type, where the kind's (TYPES) is not it
    mitm: bool = False              # also one of `mitm`, which passes it to the addon as --set

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    @property
    def addon_name(self) -> str | None:
        return None if self.addon is None else self.addon or "gtp_" + self.dest

    def addon_typespec(self) -> Any:
        if self.kind == "list":
            return Sequence[str]
        if self.kind == "flag":
            return bool
        if self.kind in ("seconds", "count", "port", "bytes"):
            return int
        return str if self._addon_default() is not None else str | None

    def _addon_default(self) -> Any:
        value = self.default if self.addon_default is ... else self.addon_default
        if self.kind == "seconds" and value is not None:
            return math.ceil(value)
        if self.kind == "list":
            return list(value or [])
        return value


_MEDIA = ("how images/files returned by tools reach models matching PATTERN: in functionResponse.parts ('parts', "
          "default for gemini-3 and later) or as parts after the function responses ('siblings', default for older "
          "models); repeatable, first match wins")

OPTIONS: tuple[Option, ...] = (
    # -- where and how the front-end listens ---------------------------------------------------------
    Option("host", "text", "127.0.0.1", "address the front-end binds (default 127.0.0.1: loopback only)",
           addon="gtp_frontend_host"),
    Option("port", "port", DEFAULT_PORT, f"the front-end's port (default {DEFAULT_PORT}; the addon: -1 disables it)",
           addon="gtp_frontend_port", mitm=True),
    Option("upstream", "text", DEFAULT_BASE_URL,
           "where Gemini requests go: a base URL (default Google's API), 'mock' for the built-in mock Gemini, or "
           "(with the addon) 'relay' to have a relay app's intercepted request carry them (see relay)", mitm=True),
    Option("model-alias", "list", (), "serve a client's model name with a Gemini model (repeatable), e.g. "
           "gpt-5.5=gemini-2.5-pro for Codex's full tool set", metavar="NAME=GEMINI_MODEL",
           addon="gtp_model_aliases", mitm=True),
    Option("schema-mode", "list", (), "declare tool schemas as parametersJsonSchema ('json') or the OpenAPI-subset "
           "'parameters' (default) for models matching PATTERN (repeatable, first match wins)",
           metavar="[PATTERN=]json|parameters"),
    # -- model rules -----------------------------------------------------------------------------------
    Option("tool-result-media", "list", (), _MEDIA, metavar="[PATTERN=]parts|siblings"),
    Option("stream-arguments", "list", (), "ask models matching PATTERN to stream call arguments (partialArgs), "
           "passed on as argument deltas (repeatable; default: none, as Google's Developer API documents it as "
           "Vertex-only)", metavar="PATTERN"),
    Option("hosted-tools", "list", (), "a hosted tool (web_search, file_search, ...) that models matching PATTERN "
           "cannot serve is dropped with a warning in the answer ('drop', default) or refused with a 400 ('error'); "
           "web search is served as Google Search, next to functions on gemini-3 and later",
           metavar="[PATTERN=]drop|error"),
    Option("tool-mode", "list", (), f"models matching PATTERN get tools natively or rendered into the prompt in a "
           f"text dialect ({', '.join(DIALECTS)}) whose calls are parsed back (repeatable, first match wins; defaults "
           f"{', '.join(f'{p}={m}' for p, m in DEFAULT_TOOL_MODES)}, everything else native)",
           metavar="PATTERN=native|DIALECT"),
    Option("rescue-text-calls", "list", (), "for native models matching PATTERN, complete calls written as text in "
           "DIALECT are turned into calls (repeatable; default off; prompt-mode models always parse their dialect)",
           metavar="PATTERN=DIALECT|off"),
    Option("single-call", "list", (), "models matching PATTERN see parallel calls in history one call and result "
           "per turn (repeatable; the llama3 dialect always does)", metavar="PATTERN"),
    Option("think-open", "list", (), "models matching PATTERN have a template that ends the prompt with an open "
           "think tag (Qwen3-thinking-2507, DeepSeek-R1, GLM-4.5): their answers start in reasoning (repeatable)",
           metavar="PATTERN"),
    # -- upstreams -------------------------------------------------------------------------------------
    Option("gemini-key", "list", (), "a Gemini API key of the server's (repeatable: used in turn, a key Gemini "
           "rate-limits rests as long as Gemini asks); default $GEMINI_API_KEYS (comma separated) or "
           "$GEMINI_API_KEY", metavar="KEY"),
    Option("vertex-credentials", "list", (), "send Gemini requests to Vertex AI with this Google credentials file "
           "(a service account key or an authorized user's application default credentials); repeatable: used in "
           "turn like gemini-key, each billing its own project", metavar="FILE"),
    Option("vertex-project", "text", None, "the project every vertex-credentials file bills (default: the one each "
           "file names)", metavar="PROJECT"),
    Option("vertex-location", "text", "global", "the Vertex AI location, e.g. us-central1 (default global)",
           metavar="LOCATION"),
    Option("openai-upstream", "list", (), "send models matching PATTERN to an OpenAI-compatible server (vLLM, "
           "Ollama, llama.cpp, LM Studio, EXO) at BASE_URL (e.g. http://127.0.0.1:8000/v1) instead of Gemini "
           "(repeatable, first match wins; its key, if any, from $GTP_OPENAI_UPSTREAM_KEY)",
           metavar="PATTERN=BASE_URL", addon=None),
    Option("upstream-api", "list", (), "which Gemini API answers models matching PATTERN: generateContent "
           "('generate', default) or Google's Interactions API ('interactions', server-side history via "
           "previous_interaction_id) (repeatable, first match wins; a bare value applies to all)",
           metavar="[PATTERN=]generate|interactions"),
    Option("two-pass", "list", (), "for models matching PATTERN on an OpenAI-compatible upstream: think for at most "
           "BUDGET tokens, then answer in a second pass after the closed think block (repeatable)",
           metavar="PATTERN=BUDGET", addon=None),
    Option("relay", "text", None, "relay client for upstream=relay: an http(s) URL that is POSTed {prompt, marker}, "
           "or a command line in which {prompt} (and {marker}) are replaced; the app must send a Gemini request "
           "with that prompt through this proxy", serve=False),
    Option("relay-timeout", "seconds", DEFAULT_RELAY_TIMEOUT, "seconds the front-end waits for the relay app's "
           "request and between its chunks", serve=False),
    Option("route", "text", None, "host:port every upstream connection goes to instead (a local Gemini, for "
           "testing); TLS still names the original host", serve=False),
    # -- calls -----------------------------------------------------------------------------------------
    Option("fill-missing-required", "flag", False, "give a call's missing required arguments a null placeholder "
           "(default: report them, never invent)", addon="gtp_fill_missing"),
    Option("forced-choice", "text", "retry", "when Gemini ignores a forced tool_choice: retry once with a "
           "directive, then fail (retry, default), fail at once (error), or pass its answer on (allow)",
           choices=POLICIES),
    # -- timeouts and retries --------------------------------------------------------------------------
    Option("connect-timeout", "seconds", DEFAULT_CONNECT_TIMEOUT,
           f"seconds to connect upstream (default {DEFAULT_CONNECT_TIMEOUT:g})"),
    Option("read-timeout", "seconds", DEFAULT_READ_TIMEOUT, f"seconds Gemini may send nothing meaningful (no whole "
           f"event) before the first byte and between events of a stream (default {DEFAULT_READ_TIMEOUT:g})"),
    Option("total-timeout", "seconds", DEFAULT_TOTAL_TIMEOUT, f"seconds for a whole upstream exchange, retries "
           f"included (default {DEFAULT_TOTAL_TIMEOUT:g})"),
    Option("max-retries", "count", DEFAULT_MAX_RETRIES, f"retries of a 429/500/503 or failed connection before "
           f"anything reached the client, with backoff or Gemini's retry hint (default {DEFAULT_MAX_RETRIES})"),
    Option("fallback", "list", (), "when Gemini answers 429/503 (quota, overloaded; every pooled key resting) for a "
           "model matching PATTERN before anything reached the client, ask these models in turn; the client keeps "
           "its model name, x-gtp-served-model says which answered (repeatable, first match wins; the retries and "
           "the deadline are shared along the chain)", metavar="PATTERN=MODEL[,MODEL...]"),
    # -- clients ---------------------------------------------------------------------------------------
    Option("api-key", "list", (), f"a key clients must present to the front-end (repeatable; also api-keys-file and "
           f"${KEYS_ENV}); Gemini is then called with the server's GEMINI_API_KEY, and sessions are per key",
           metavar="KEY", mitm=True),
    Option("api-keys-file", "text", None, "file of client keys, one per line (# comments)", metavar="FILE",
           mitm=True),
    Option("passthrough-collection", "list", (), "with client keys, let them reach this Gemini collection (e.g. "
           "voices) unscoped, shared by every key: one the proxy does not keep per key is refused otherwise "
           "(repeatable)", metavar="NAME", addon="gtp_passthrough_collections", mitm=True),
    Option("allow-unauthenticated", "flag", False, "allow the front-end without client keys (or the proxy without "
           "proxyauth) to listen beyond loopback (only behind something that authenticates)", mitm=True),
    Option("allowed-host", "list", (), "a Host name (shell pattern; '*': any) the front-end answers to besides "
           "localhost and loopback addresses, e.g. behind a reverse proxy (repeatable; on a non-loopback bind the "
           "default is any Host); other names get a 421, so DNS rebinding reaches nothing", metavar="NAME",
           addon="gtp_allowed_hosts", mitm=True),
    Option("allowed-origin", "list", (), "a web page origin (scheme://host[:port]) allowed to send requests to the "
           "front-end (repeatable); requests from any other page's origin but the proxy's own get a 403",
           metavar="ORIGIN", addon="gtp_allowed_origins", mitm=True),
    Option("client-timeout", "seconds", DEFAULT_CLIENT_TIMEOUT, f"seconds a client has to send a request's headers, "
           f"again for its body, and the longest a stream waits on a client that stopped reading (default "
           f"{DEFAULT_CLIENT_TIMEOUT:g})", mitm=True),
    Option("shutdown-timeout", "seconds", DEFAULT_SHUTDOWN_TIMEOUT, f"seconds from SIGTERM (after serve's drain) "
           f"to exit; requests still running then end with their protocol's failure (default "
           f"{DEFAULT_SHUTDOWN_TIMEOUT:g})", mitm=True),
    Option("drain-seconds", "seconds", 0.0, "seconds from SIGTERM during which /readyz answers 503 but the front-end "
           "still accepts and serves, so a load balancer's health checks take it out before connections are refused; "
           "set it above the balancer's check interval x fall count (default 0: no drain; SIGINT never drains)",
           addon=None, type=wait_seconds),
    Option("background-lease", "seconds", DEFAULT_BACKGROUND_LEASE, f"seconds after which a background response or "
           f"interaction whose instance stopped renewing it is reported failed (default "
           f"{DEFAULT_BACKGROUND_LEASE:g})", mitm=True),
    Option("max-connections", "count", None, "client connections served at once; more get a 503 (default, or 0: "
           "half the fd limit)", addon_default=0, mitm=True),
    Option("upstream-connections", "count", None, "connections open at once to each upstream (Gemini, an "
           "OpenAI-compatible server); more requests wait for one, up to pool-timeout (default: max-connections, "
           "so that every client connection can have its own)", addon=None),
    Option("pool-timeout", "seconds", DEFAULT_POOL_TIMEOUT, f"seconds a request waits for a free upstream "
           f"connection before it is refused with a 503 and Retry-After, in its protocol (default "
           f"{DEFAULT_POOL_TIMEOUT:g})", addon=None),
    Option("max-in-flight-per-key", "count", None, "requests one client key may have running at once (a stream "
           "until its end); more get a 429 with Retry-After (default: half of upstream-connections; 0: no cap)",
           addon=None),
    Option("max-background-per-key", "count", DEFAULT_BACKGROUND_PER_KEY, f"background responses and interactions "
           f"one client key may have running at once; more get a 429 (default {DEFAULT_BACKGROUND_PER_KEY}; 0: no "
           f"cap)", addon=None),
    Option("limit", "list", (), "a client's budget: requests and tokens per minute, USD per day and month, for "
           "ID (its c-... id, or '*' for every client without its own) (repeatable; not yet enforced: issue 61)",
           metavar="ID=rpm:N,tpm:N,usd_day:X,usd_month:X", addon=None),
    # -- state -----------------------------------------------------------------------------------------
    Option("store", "text", "memory", "where sessions live: this process's memory (default) or a Redis shared by "
           "several instances, redis://HOST:PORT/DB (rediss:// for TLS, unix://)",
           metavar="memory|redis://HOST:PORT/DB", mitm=True),
    Option("store-ttl", "seconds", DEFAULT_TTL_SECONDS, f"seconds an unused stored entry is kept (default "
           f"{DEFAULT_TTL_SECONDS:g})", metavar="SECONDS", addon=None),
    Option("store-max-bytes", "bytes", DEFAULT_MAX_BYTES, "bytes (as JSON) the session store keeps in all; least "
           "recently used go first (default 256M)", metavar="N[K|M|G]", addon=None),
    Option("session-max-bytes", "bytes", DEFAULT_SESSION_BYTES, "bytes one session keeps (default 128M)",
           metavar="N[K|M|G]", addon=None),
    Option("carrier-key", "list", (), f"key sealing the signatures (and compactions) handed to stateless clients "
           f"(repeatable: the first seals, all open; also ${CARRIER_KEYS_ENV}); default: the keys file",
           metavar="KEY"),
    Option("carrier-keys-file", "text", CARRIER_KEYS_FILE, "carrier keys file, made (0600) on first use; share it "
           "between instances (default: in the CA directory)", metavar="FILE", addon_default=None),
    # -- what the proxy did: journal, inspector, traces ------------------------------------------------
    Option("journal", "text", "on", "keep a journal of recent exchanges (client request, Gemini request and "
           "answer, client answer, the proxy's decisions; secrets redacted) for /inspect and `gemini-tool-proxy "
           "inspect` ('on', default) or not ('off')", choices=("on", "off"), mitm=True),
    Option("journal-max-bytes", "bytes", JOURNAL_MAX_BYTES, "bytes the journal keeps, oldest exchanges dropped "
           "first (default 64M)", metavar="N[K|M|G]", addon_default=JOURNAL_MAX_BYTES, mitm=True),
    Option("otlp-endpoint", "text", None, "export OpenTelemetry traces (GenAI semantic conventions) to this "
           "OTLP/HTTP collector, e.g. http://127.0.0.1:4318 (default: the OTEL_EXPORTER_OTLP_* variables, else off)",
           metavar="URL", mitm=True),
    # -- the addon's own: intercepted traffic --------------------------------------------------------------
    Option("config", "text", None, "TOML file of options: the gtp_* names or the command line's "
           "(model_alias = [...]); options set on the command line win", serve=False),
    Option("intercept-hosts", "list", DEFAULT_HOSTS, "host names (shell patterns) whose generateContent/"
           "streamGenerateContent calls are rewritten; all other traffic passes through byte for byte", serve=False),
    Option("session-header", "text", "x-gtp-session", "request header naming the session of an intercepted call "
           "(removed before forwarding)", serve=False),
    Option("default-session", "text", None, "session for intercepted calls that name none (no header, no "
           "<session:ID> marker)", serve=False),
    Option("tools", "text", "replace", "what to do with the app's own tools when its session has tools: 'replace' "
           "or 'merge'", serve=False),
    Option("placeholder", "text", DEFAULT_PLACEHOLDER, "model text that stands for an earlier captured call in an "
           "app's history; such turns are rewritten into the real functionCall and functionResponse turns",
           serve=False),
)

BY_NAME = {o.name: o for o in OPTIONS}


def add_arguments(parser: argparse.ArgumentParser, command: Literal["serve", "mitm"],
                  defaults: dict[str, Any] | None = None) -> None:
    """The command line of `serve` (every serve option) or `mitm` (those it passes to the addon).
    `defaults` overrides a default where the command line's differs from the table's (a path)."""
    for o in OPTIONS:
        if not (o.serve if command == "serve" else o.mitm):
            continue
        default = (defaults or {}).get(o.name, o.default)
        flag = f"--{o.name}"
        if o.kind == "flag":
            parser.add_argument(flag, action="store_true", help=o.help)
        elif o.kind == "list":
            parser.add_argument(flag, action="append", default=[], metavar=o.metavar, help=o.help)
        else:
            parser.add_argument(flag, type=o.type or TYPES.get(o.kind), default=default, metavar=o.metavar,
                                choices=o.choices, help=o.help)


def declare(loader: Any) -> None:
    """The addon's options (`mitmdump --options` lists them with these help texts)."""
    for o in OPTIONS:
        if o.addon_name is not None:
            loader.add_option(o.addon_name, o.addon_typespec(), o._addon_default(), o.help[:1].upper() + o.help[1:])


def addon_names() -> dict[str, str]:
    """Command-line name -> the addon's name, where they differ (the rest: gtp_ + the name)."""
    return {o.name: o.addon_name for o in OPTIONS if o.addon_name and o.addon_name != "gtp_" + o.dest}


def mitm_settings(args: argparse.Namespace) -> list[tuple[str, str, list[Any]]]:
    """`mitm`'s options as (dest, addon option, values to --set); an unset optional one has no values."""
    out = []
    for o in OPTIONS:
        if not o.mitm or o.addon_name is None:
            continue
        value = getattr(args, o.dest)
        if o.kind == "list":
            values = list(value)
        elif o.kind == "flag":
            values = ["true"] if value else []
        elif value is None:
            values = []
        else:
            values = [math.ceil(value) if o.kind == "seconds" else value]
        out.append((o.dest, o.addon_name, values))
    return out
