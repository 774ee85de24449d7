"""The addon's options (`mitmdump --options` lists them with these help texts), declared and
validated in one place; parsed values are kept here for the other addons. Durations are whole
seconds: mitmproxy's `--set` parses no floats."""

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mitmproxy import ctx, exceptions

from proxy.config_file import ConfigError, addon_settings
from proxy.intercept.relay import DEFAULT_TIMEOUT
from proxy.model_rules import ModelRules
from proxy.server.auth import KEYS_ENV, ClientKeys, is_loopback, load_keys, refuse_open_bind
from proxy.server.context import parse_aliases
from proxy.server.site import DEFAULT_BACKGROUND_LEASE, DEFAULT_CLIENT_TIMEOUT, DEFAULT_SHUTDOWN_TIMEOUT, ServerLimits
from proxy.session.placeholders import DEFAULT_PLACEHOLDER
from proxy.signatures.carrier_keys import KEYS_FILE as CARRIER_KEYS_FILE
from proxy.signatures.carrier_keys import CarrierKeys, load_carrier_keys
from proxy.tools.schema_mode import parse_schema_modes
from proxy.upstream.credentials import GoogleCredential
from proxy.upstream.forced_choice import POLICIES
from proxy.upstream.gemini import DEFAULT_BASE_URL, DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, DEFAULT_TOTAL_TIMEOUT
from proxy.upstream.retry import DEFAULT_MAX_RETRIES
from proxy.upstream.routes import parse_upstream_api
from proxy.upstream.vertex import vertex_credentials

DEFAULT_HOSTS = ("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "*cloudcode-pa*.googleapis.com",
                 "aiplatform.googleapis.com", "*-aiplatform.googleapis.com")


def option_kinds(typespecs: dict[str, Any]) -> dict[str, Any]:
    """Each option's kind as a config file may give it: "sequence", bool, int or str."""
    return {name: "sequence" if spec == Sequence[str] else bool if spec is bool else int if spec is int else str
            for name, spec in typespecs.items()}


class _Collect:
    """A stand-in for mitmproxy's addon loader that only records the options an addon declares."""

    def __init__(self, options: Any) -> None:
        self.typespecs: dict[str, Any] = {}
        self.master = SimpleNamespace(options=options)

    def add_option(self, name: str, typespec: Any, *_: Any, **__: Any) -> None:
        self.typespecs[name] = typespec


def check_config_file(path: str) -> dict[str, Any]:
    """Read a gtp_config file as the addon will, before mitmdump starts: the options it sets, or
    ConfigError naming what is wrong."""
    from mitmproxy.options import Options as MitmOptions

    from proxy.intercept.addon import GeminiTools

    base = MitmOptions()
    loader = _Collect(base)
    for addon in GeminiTools().addons:
        if hasattr(addon, "load"):
            addon.load(loader)
    return addon_settings(path, option_kinds({**{n: o.typespec for n, o in base.items()}, **loader.typespecs}))


class Options:
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.schema_modes: list[tuple[str, str]] = []
        self.keys = ClientKeys(())
        self.rules = ModelRules()
        self.upstream_api: list[tuple[str, str]] = []  # --upstream-api rules for the front-end
        self.vertex: list[GoogleCredential] = []  # gtp_vertex_credentials, loaded
        self.carrier = CarrierKeys.ephemeral()
        self.given: set[str] = set()  # gtp_* options the command line set, even to their defaults

    def load(self, loader: Any) -> None:
        # mitmdump holds `--set gtp_...` back (deferred) until the addon declares its options: what is
        # there now is what the command line gave, so gtp_config can tell `gtp_tools=replace` (the
        # default, set explicitly) from an option nobody set.
        self.given = {k for k in getattr(loader.master.options, "deferred", {}) if k.startswith("gtp_")}
        loader.add_option("gtp_config", str | None, None,
                          "TOML file of options: the gtp_* names or the command line's (model_alias = [...]); "
                          "options set on the command line win.")
        loader.add_option("gtp_gemini_key", Sequence[str], [],
                          "The server's Gemini API keys, used in turn (a rate-limited key rests as long as Gemini "
                          "asks); default $GEMINI_API_KEYS or $GEMINI_API_KEY.")
        loader.add_option("gtp_vertex_credentials", Sequence[str], [],
                          "Google credentials files (service account keys, or an authorized user's application "
                          "default credentials): the front-end sends Gemini requests to Vertex AI with them, used "
                          "in turn like gtp_gemini_key, each billing its own project.")
        loader.add_option("gtp_vertex_project", str | None, None,
                          "The project every gtp_vertex_credentials file bills (default: the one each file names).")
        loader.add_option("gtp_vertex_location", str, "global", "The Vertex AI location, e.g. us-central1.")
        loader.add_option("gtp_frontend_port", int, 8741,
                          "Port of the OpenAI Responses / Gemini-native front-end run in this process; -1 disables it.")
        loader.add_option("gtp_frontend_host", str, "127.0.0.1", "Address the front-end binds (loopback by default).")
        loader.add_option("gtp_upstream", str, DEFAULT_BASE_URL,
                          "Where the front-end sends Gemini requests: a base URL, 'mock' for the built-in mock, "
                          "or 'relay' to have a relay app's intercepted request carry them (see gtp_relay).")
        loader.add_option("gtp_relay", str | None, None,
                          "Relay client for gtp_upstream=relay: an http(s) URL that is POSTed {prompt, marker}, or "
                          "a command line in which {prompt} (and {marker}) are replaced; the app must send a Gemini "
                          "request with that prompt through this proxy.")
        loader.add_option("gtp_relay_timeout", int, int(DEFAULT_TIMEOUT),
                          "Seconds the front-end waits for the relay app's request and between its chunks.")
        loader.add_option("gtp_model_aliases", Sequence[str], [],
                          "NAME=GEMINI_MODEL pairs: the front-end serves a client's model name (e.g. gpt-5.5 for "
                          "Codex's full tool set) with a Gemini model.")
        loader.add_option("gtp_schema_mode", Sequence[str], [],
                          "[PATTERN=]json|parameters rules: the front-end declares tool schemas as "
                          "parametersJsonSchema ('json') or the OpenAPI-subset 'parameters' (the default).")
        loader.add_option("gtp_tool_result_media", Sequence[str], [],
                          "[PATTERN=]parts|siblings rules: images/files returned by tools go in functionResponse.parts "
                          "('parts', default for gemini-3 and later) or after the function responses ('siblings').")
        loader.add_option("gtp_stream_arguments", Sequence[str], [],
                          "Model patterns asked to stream call arguments (partialArgs); default none.")
        loader.add_option("gtp_hosted_tools", Sequence[str], [],
                          "[PATTERN=]drop|error rules: a hosted tool (web_search, ...) a model cannot serve is dropped "
                          "with a warning in the answer ('drop', default) or refused with a 400 ('error').")
        loader.add_option("gtp_tool_mode", Sequence[str], [],
                          "PATTERN=native|DIALECT rules: models that get tools rendered into the prompt in a text "
                          "dialect (gemma4, functiongemma, gemma3, hermes, qwen3coder, llama3, mistral, harmony, "
                          "pythonic) and give calls as text; defaults gemma-4*=gemma4, gemma-3*=gemma3, "
                          "*functiongemma*=functiongemma.")
        loader.add_option("gtp_rescue_text_calls", Sequence[str], [],
                          "PATTERN=DIALECT|off rules: native models whose complete text calls in DIALECT become calls.")
        loader.add_option("gtp_single_call", Sequence[str], [],
                          "Model patterns that see parallel calls in history one call per turn.")
        loader.add_option("gtp_think_open", Sequence[str], [],
                          "Model patterns whose template pre-opens the think tag (their answers start in reasoning).")
        loader.add_option("gtp_upstream_api", Sequence[str], [],
                          "[PATTERN=]generate|interactions rules: the front-end's requests for matching models go to "
                          "Gemini's generateContent ('generate', default) or its Interactions API ('interactions').")
        loader.add_option("gtp_forced_choice", str, "retry",
                          "When Gemini ignores a forced tool_choice: 'retry' once with a directive then fail, "
                          "'error' at once, or 'allow' its answer through.")
        loader.add_option("gtp_fill_missing", bool, False,
                          "Give a call's missing required arguments a null placeholder (default: never invent).")
        loader.add_option("gtp_intercept_hosts", Sequence[str], list(DEFAULT_HOSTS),
                          "Host names (shell patterns) whose generateContent/streamGenerateContent calls are "
                          "rewritten; all other traffic passes through byte for byte.")
        loader.add_option("gtp_session_header", str, "x-gtp-session",
                          "Request header naming the session of an intercepted call (removed before forwarding).")
        loader.add_option("gtp_default_session", str | None, None,
                          "Session for intercepted calls that name none (no header, no <session:ID> marker).")
        loader.add_option("gtp_tools", str, "replace",
                          "What to do with the app's own tools when its session has tools: 'replace' or 'merge'.")
        loader.add_option("gtp_placeholder", str, DEFAULT_PLACEHOLDER,
                          "Model text that stands for an earlier captured call in an app's history; such turns "
                          "are rewritten into the real functionCall and functionResponse turns.")
        loader.add_option("gtp_api_key", Sequence[str], [],
                          f"Keys clients must present to the front-end (also gtp_api_keys_file and ${KEYS_ENV}); "
                          "Gemini is then called with the server's GEMINI_API_KEY, and sessions are per key.")
        loader.add_option("gtp_api_keys_file", str | None, None, "File of front-end client keys, one per line.")
        loader.add_option("gtp_allow_unauthenticated", bool, False,
                          "Allow the front-end without keys, or the proxy itself without proxyauth, to listen "
                          "beyond loopback (only behind something that authenticates).")
        loader.add_option("gtp_client_timeout", int, int(DEFAULT_CLIENT_TIMEOUT),
                          "Seconds a front-end client has to send its headers, again for its body, and the longest a "
                          "stream waits on a client that stopped reading.")
        loader.add_option("gtp_shutdown_timeout", int, int(DEFAULT_SHUTDOWN_TIMEOUT),
                          "Seconds the front-end takes to stop; requests still running then end with their "
                          "protocol's failure.")
        loader.add_option("gtp_background_lease", int, int(DEFAULT_BACKGROUND_LEASE),
                          "Seconds after which a background interaction whose instance stopped renewing it is "
                          "reported failed.")
        loader.add_option("gtp_max_connections", int, 0,
                          "Front-end client connections served at once (0: half the fd limit); more get a 503.")
        loader.add_option("gtp_connect_timeout", int, int(DEFAULT_CONNECT_TIMEOUT),
                          "Seconds the front-end waits to connect to Gemini.")
        loader.add_option("gtp_read_timeout", int, int(DEFAULT_READ_TIMEOUT),
                          "Seconds Gemini may send nothing meaningful to the front-end (before the first byte and "
                          "between stream events).")
        loader.add_option("gtp_total_timeout", int, int(DEFAULT_TOTAL_TIMEOUT),
                          "Seconds for a whole upstream exchange of the front-end, retries included.")
        loader.add_option("gtp_max_retries", int, DEFAULT_MAX_RETRIES,
                          "Retries of a 429/500/503 or failed connection before anything reached the client.")
        loader.add_option("gtp_carrier_key", Sequence[str], [],
                          "Keys sealing the signatures handed to stateless clients (the first seals, all open); "
                          "default: the keys file.")
        loader.add_option("gtp_carrier_keys_file", str | None, None,
                          f"Carrier keys file, made (0600) on first use (default: {CARRIER_KEYS_FILE} in confdir).")
        loader.add_option("gtp_route", str | None, None,
                          "host:port every upstream connection goes to instead (a local Gemini, for testing). TLS "
                          "still names the original host.")

    def _load_config(self, path: str) -> None:
        """Set every option the file names that the command line did not set (even to its default)."""
        try:
            settings = addon_settings(path, option_kinds({n: o.typespec for n, o in ctx.options.items()}))
        except ConfigError as e:
            raise exceptions.OptionsError(str(e)) from None
        unset = {k: v for k, v in settings.items() if k not in self.given and not ctx.options.has_changed(k)}
        if unset:
            ctx.options.update(**unset)

    def _refuse_open_binds(self) -> None:
        opts = ctx.options
        allow = opts.gtp_allow_unauthenticated
        # mitmproxy's listen_host "" means every interface; the proxy authenticates only with proxyauth.
        proxy_host = getattr(opts, "listen_host", "127.0.0.1") or "0.0.0.0"
        if not (getattr(opts, "proxyauth", None) or allow or is_loopback(proxy_host)):
            raise exceptions.OptionsError(
                f"refusing to intercept on {proxy_host}: the proxy has no client authentication. Pass "
                "--listen-host 127.0.0.1, set proxyauth, or set gtp_allow_unauthenticated=true.")
        if opts.gtp_frontend_port >= 0:
            refusal = refuse_open_bind(opts.gtp_frontend_host, self.keys, allow, "gtp_allow_unauthenticated=true")
            if refusal:
                raise exceptions.OptionsError(refusal)

    def limits(self) -> ServerLimits:
        opts = ctx.options
        return ServerLimits.configured(opts.gtp_client_timeout, opts.gtp_shutdown_timeout, opts.gtp_max_connections,
                                       opts.gtp_background_lease)

    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        if "gtp_config" in updated and opts.gtp_config:
            self._load_config(opts.gtp_config)
        if "gtp_forced_choice" in updated and opts.gtp_forced_choice not in POLICIES:
            raise exceptions.OptionsError(f"gtp_forced_choice must be one of {', '.join(POLICIES)}")
        if "gtp_tools" in updated and opts.gtp_tools not in ("replace", "merge"):
            raise exceptions.OptionsError(f"gtp_tools must be 'replace' or 'merge', not {opts.gtp_tools!r}")
        if "gtp_frontend_port" in updated and not -1 <= opts.gtp_frontend_port < 65536:
            raise exceptions.OptionsError(f"gtp_frontend_port out of range: {opts.gtp_frontend_port}")
        for name in ("gtp_connect_timeout", "gtp_read_timeout", "gtp_total_timeout", "gtp_client_timeout",
                     "gtp_shutdown_timeout", "gtp_background_lease", "gtp_max_retries", "gtp_max_connections"):
            if name in updated and getattr(opts, name) < (0 if name in ("gtp_max_retries", "gtp_max_connections")
                                                          else 1):
                raise exceptions.OptionsError(f"{name} must be positive, not {getattr(opts, name)}")
        if "gtp_route" in updated and opts.gtp_route:
            host, _, port = opts.gtp_route.rpartition(":")
            if not host or not port.isdigit():
                raise exceptions.OptionsError(f"gtp_route must be host:port, not {opts.gtp_route!r}")
        if "gtp_model_aliases" in updated or "gtp_schema_mode" in updated:
            try:
                self.aliases = parse_aliases(opts.gtp_model_aliases)
                self.schema_modes = parse_schema_modes(opts.gtp_schema_mode)
            except ValueError as e:
                raise exceptions.OptionsError(str(e)) from None
        if updated & {"gtp_tool_result_media", "gtp_stream_arguments", "gtp_hosted_tools", "gtp_tool_mode",
                      "gtp_rescue_text_calls", "gtp_single_call", "gtp_think_open"}:
            try:
                self.rules = ModelRules.parse(opts.gtp_tool_result_media, opts.gtp_stream_arguments,
                                              opts.gtp_hosted_tools, opts.gtp_tool_mode, opts.gtp_rescue_text_calls,
                                              opts.gtp_single_call, opts.gtp_think_open)
            except ValueError as e:
                raise exceptions.OptionsError(str(e)) from None
        if "gtp_upstream_api" in updated:
            try:
                self.upstream_api = parse_upstream_api(opts.gtp_upstream_api)
            except ValueError as e:
                raise exceptions.OptionsError(str(e)) from None
        if updated & {"gtp_vertex_credentials", "gtp_vertex_project", "gtp_vertex_location", "gtp_upstream_api"}:
            try:
                self.vertex = vertex_credentials(list(opts.gtp_vertex_credentials), opts.gtp_vertex_project,
                                                 opts.gtp_vertex_location, "gtp_vertex_")
            except ValueError as e:
                raise exceptions.OptionsError(str(e)) from None
            if self.vertex and any(api == "interactions" for _, api in self.upstream_api):
                raise exceptions.OptionsError("gtp_upstream_api interactions needs Gemini's Developer API; Vertex AI "
                                              "has no Interactions API")
        if "gtp_upstream" in updated and not (opts.gtp_upstream in ("mock", "relay") or opts.gtp_upstream.startswith(
                ("http://", "https://"))):
            raise exceptions.OptionsError(f"gtp_upstream must be an http(s) URL, 'mock' or 'relay', "
                                          f"not {opts.gtp_upstream!r}")
        if updated & {"gtp_api_key", "gtp_api_keys_file"}:
            try:
                self.keys = load_keys(opts.gtp_api_key, opts.gtp_api_keys_file)
            except ValueError as e:
                raise exceptions.OptionsError(str(e)) from None
        if updated & {"listen_host", "proxyauth", "gtp_allow_unauthenticated", "gtp_frontend_host", "gtp_api_key",
                      "gtp_api_keys_file", "gtp_frontend_port"}:
            self._refuse_open_binds()
        if updated & {"gtp_carrier_key", "gtp_carrier_keys_file", "confdir"}:
            path = Path(opts.gtp_carrier_keys_file or Path(opts.confdir).expanduser() / CARRIER_KEYS_FILE)
            try:
                self.carrier = load_carrier_keys(list(opts.gtp_carrier_key), path)
            except (ValueError, OSError) as e:
                raise exceptions.OptionsError(f"carrier keys: {e}") from None
        if opts.gtp_upstream == "relay" and not opts.gtp_relay:
            raise exceptions.OptionsError("gtp_upstream=relay needs gtp_relay (a URL or a command line)")
