"""The addon's options: declared by proxy/options.py (the one table `serve` and the config file use
too), validated here once; parsed values are kept here for the other addons."""

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mitmproxy import ctx, exceptions

from proxy import options
from proxy.certs_dir import CERTS_DIR
from proxy.config_file import ConfigError, addon_settings
from proxy.intercept.journal_addon import RecorderRef
from proxy.journal.recorder import Recorder
from proxy.model_rules import ModelRules
from proxy.server.auth import ClientKeys, is_loopback, load_keys, refuse_open_bind
from proxy.server.collections import parse_passthrough
from proxy.server.context import parse_aliases
from proxy.server.guard import RequestGuard
from proxy.server.site import ServerLimits
from proxy.signatures.carrier_keys import KEYS_FILE as CARRIER_KEYS_FILE
from proxy.signatures.carrier_keys import CarrierKeys, load_carrier_keys
from proxy.tools.schema_mode import parse_schema_modes
from proxy.upstream.gemini.credentials import GoogleCredential
from proxy.upstream.gemini.vertex import vertex_credentials
from proxy.upstream.routes import parse_upstream_api

log = logging.getLogger(__name__)

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
    for addon in GeminiTools().parts:
        if hasattr(addon, "load"):
            addon.load(loader)
    return addon_settings(path, option_kinds({**{n: o.typespec for n, o in base.items()}, **loader.typespecs}))


@dataclass(frozen=True)
class FlowOptions:
    """The options every flow's hooks read, read once per change of the options: mitmproxy's
    `ctx.options.X` deep-copies the value at each read (a list of hosts, per hook, per flow)."""

    intercept_hosts: tuple[str, ...]
    session_header: str
    default_session: str | None
    placeholder: str
    merge_tools: bool  # gtp_tools=merge


class Options:
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.schema_modes: list[tuple[str, str]] = []
        self.passthrough_collections: frozenset[str] = frozenset()
        self.mock_address: tuple[str, int] | None = None  # the built-in mock, once the front-end started it
        self.keys = ClientKeys(())
        self.rules = ModelRules()
        self.upstream_api: list[tuple[str, str]] = []  # --upstream-api rules for the front-end
        self.vertex: list[GoogleCredential] = []  # gtp_vertex_credentials, loaded
        self.carrier = CarrierKeys.ephemeral()
        self.guard = RequestGuard()  # the front-end's Host and Origin allow-lists (server/guard.py)
        self.given: set[str] = set()  # gtp_* options the command line set, even to their defaults
        self.recorder = RecorderRef()  # the journal and traces (journal/), remade when their options change
        self.store: Any = None  # the addon's session store (the journal is shared through it when it is Redis)
        self._flow: FlowOptions | None = None
        self._defaults_set = False

    def load(self, loader: Any) -> None:
        # mitmdump holds `--set gtp_...` back (deferred) until the addon declares its options: what is
        # there now is what the command line gave, so gtp_config can tell `gtp_tools=replace` (the
        # default, set explicitly) from an option nobody set.
        self.given = {k for k in getattr(loader.master.options, "deferred", {}) if k.startswith("gtp_")}
        options.declare(loader)

    def _load_config(self, path: str) -> None:
        """Set every option the file names that the command line did not set (even to its default)."""
        try:
            settings = addon_settings(path, option_kinds({n: o.typespec for n, o in ctx.options.items()}))
        except ConfigError as e:
            raise exceptions.OptionsError(str(e)) from None
        unset = {k: v for k, v in settings.items() if k not in self.given and not ctx.options.has_changed(k)}
        if unset:
            ctx.options.update(**unset)

    def _set_defaults(self) -> None:
        """What `gemini-tool-proxy mitm` passes, for a bare `mitmdump -s` of the addon, where the user
        did not set it: loopback, not mitmproxy's every interface (refused anyway, without proxyauth);
        the project's certs directory (its CA, made there if missing, and its carrier keys, the ones
        `serve` and `mitm` use), not mitmproxy's ~/.mitmproxy with a CA of its own."""
        opts, changes = ctx.options, {}
        if not opts.has_changed("listen_host"):
            changes["listen_host"] = "127.0.0.1"
            # mitmdump loads a script while its servers start (addons/script.py's watcher): they may
            # already listen on every interface. Started again, they listen where listen_host says.
            server = ctx.master.addons.get("proxyserver")
            if server is not None and getattr(server, "servers", None) is not None:
                asyncio.get_running_loop().create_task(_listen_again(server))
        if not opts.has_changed("confdir"):
            from proxy.ca import ensure_ca  # the CA first: mitmproxy would make one of its own there

            try:
                ensure_ca(CERTS_DIR)
            except OSError as e:
                raise exceptions.OptionsError(f"confdir {CERTS_DIR}: cannot write the CA there: "
                                              f"{e.strerror or e}") from None
            changes["confdir"] = str(CERTS_DIR)
        if changes:
            ctx.options.update(**changes)

    def running(self) -> None:
        """One block at start: where the CA is and how clients trust it."""
        from proxy.ca import CA_CERT

        cert = Path(ctx.options.confdir).expanduser() / CA_CERT
        log.info("the proxy's CA certificate is %s; clients trust it with:\n"
                 "  Node (Codex, Claude Code, Gemini CLI): NODE_EXTRA_CA_CERTS=%s\n"
                 "  Python (httpx, google-genai, urllib): SSL_CERT_FILE=%s (requests: REQUESTS_CA_BUNDLE=%s)\n"
                 "  curl: --cacert %s", cert, cert, cert, cert, cert)

    def _refuse_open_binds(self) -> None:
        opts = ctx.options
        allow = opts.gtp_allow_unauthenticated
        # mitmproxy's listen_host "" means every interface; the proxy authenticates only with proxyauth.
        for proxy_host, spec in _listen_hosts(getattr(opts, "mode", None), getattr(opts, "listen_host", "127.0.0.1")):
            if not (getattr(opts, "proxyauth", None) or allow or is_loopback(proxy_host)):
                raise exceptions.OptionsError(
                    f"refusing to intercept on {proxy_host}{spec}: the proxy has no client authentication. Pass "
                    "--listen-host 127.0.0.1, set proxyauth, or set gtp_allow_unauthenticated=true.")
        if opts.gtp_frontend_port >= 0:
            refusal = refuse_open_bind(opts.gtp_frontend_host, self.keys, allow, "gtp_allow_unauthenticated=true")
            if refusal:
                raise exceptions.OptionsError(refusal)

    def limits(self) -> ServerLimits:
        opts = ctx.options
        return ServerLimits.configured(opts.gtp_client_timeout, opts.gtp_shutdown_timeout, opts.gtp_max_connections,
                                       opts.gtp_background_lease)

    @property
    def flow(self) -> FlowOptions:
        """The options flows read, as they are now."""
        if self._flow is None:
            o = ctx.options
            self._flow = FlowOptions(tuple(o.gtp_intercept_hosts), o.gtp_session_header, o.gtp_default_session,
                                     o.gtp_placeholder, o.gtp_tools == "merge")
        return self._flow

    def configure(self, updated: set[str]) -> None:
        self._flow = None  # read again at the next flow
        opts = ctx.options
        if "gtp_config" in updated and opts.gtp_config:
            self._load_config(opts.gtp_config)
        if not self._defaults_set:  # once, after the config file: what it sets is the user's
            self._defaults_set = True
            self._set_defaults()
        for name in sorted(updated):  # every gtp_* value through its row of the table (proxy/options.py)
            row = options.BY_ADDON_NAME.get(name)
            if row is not None:
                try:
                    row.addon_parse(getattr(opts, name))
                except options.OptionValueError as e:
                    raise exceptions.OptionsError(e.named(name)) from None
        if "gtp_passthrough_collections" in updated:
            try:
                self.passthrough_collections = parse_passthrough(opts.gtp_passthrough_collections)
            except ValueError as e:
                raise exceptions.OptionsError(str(e)) from None
        if "gtp_model_aliases" in updated or "gtp_schema_mode" in updated:
            try:
                self.aliases = parse_aliases(opts.gtp_model_aliases)
                self.schema_modes = parse_schema_modes(opts.gtp_schema_mode)
            except ValueError as e:
                raise exceptions.OptionsError(str(e)) from None
        if updated & {"gtp_tool_result_media", "gtp_stream_arguments", "gtp_hosted_tools", "gtp_tool_mode",
                      "gtp_rescue_text_calls", "gtp_single_call", "gtp_think_open", "gtp_fallback"}:
            try:
                self.rules = ModelRules.parse(opts.gtp_tool_result_media, opts.gtp_stream_arguments,
                                              opts.gtp_hosted_tools, opts.gtp_tool_mode, opts.gtp_rescue_text_calls,
                                              opts.gtp_single_call, opts.gtp_think_open, opts.gtp_fallback)
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
        if "gtp_upstream" in updated and opts.gtp_upstream == "mock" and opts.connection_strategy != "lazy":
            # The offline demo routes intercepted traffic to the mock (routing.py): an eager connection
            # would go to Google before the request is seen.
            opts.update(connection_strategy="lazy")
        if updated & {"gtp_api_key", "gtp_api_keys_file"}:
            try:
                self.keys = load_keys(opts.gtp_api_key, opts.gtp_api_keys_file)
            except ValueError as e:
                raise exceptions.OptionsError(str(e)) from None
        if updated & {"listen_host", "mode", "proxyauth", "gtp_allow_unauthenticated", "gtp_frontend_host",
                      "gtp_api_key", "gtp_api_keys_file", "gtp_frontend_port"}:
            self._refuse_open_binds()
        if updated & {"gtp_frontend_host", "gtp_allowed_hosts", "gtp_allowed_origins"}:
            try:
                self.guard = RequestGuard.configured(opts.gtp_frontend_host, opts.gtp_allowed_hosts,
                                                     opts.gtp_allowed_origins)
            except ValueError as e:
                raise exceptions.OptionsError(f"gtp_allowed_origins: {e}") from None
        if updated & {"gtp_carrier_key", "gtp_carrier_keys_file", "confdir"}:
            path = Path(opts.gtp_carrier_keys_file or Path(opts.confdir).expanduser() / CARRIER_KEYS_FILE)
            try:
                self.carrier = load_carrier_keys(list(opts.gtp_carrier_key), path)
            except (ValueError, OSError) as e:
                raise exceptions.OptionsError(f"carrier keys: {e}") from None
        if updated & {"gtp_journal", "gtp_journal_max_bytes", "gtp_otlp_endpoint", "gtp_api_key", "gtp_gemini_key",
                      "gtp_carrier_key"}:
            if self.recorder.recorder is not None:
                self.recorder.recorder.close()
            self.recorder.recorder = Recorder.from_options(
                opts.gtp_journal, opts.gtp_journal_max_bytes, opts.gtp_otlp_endpoint,
                secrets=[*opts.gtp_api_key, *opts.gtp_gemini_key, *opts.gtp_carrier_key], store=self.store)
        if opts.gtp_upstream == "relay" and not opts.gtp_relay:
            raise exceptions.OptionsError("gtp_upstream=relay needs gtp_relay (a URL or a command line)")


async def _listen_again(server: Any) -> None:
    from mitmproxy.proxy.mode_specs import ProxyMode

    while server.servers.is_updating:  # the start under way
        await asyncio.sleep(0.01)
    if all(a[0] in ("127.0.0.1", "::1") for a in server.listen_addrs()):
        return
    await server.servers.update([])
    await server.servers.update([ProxyMode.parse(m) for m in ctx.options.mode])
    log.warning("mitmdump listened on every interface until the addon loaded; it listens on 127.0.0.1 now "
                "(pass --listen-host 127.0.0.1 to mitmdump to never listen wider, or --listen-host 0.0.0.0 "
                "with proxyauth to serve other machines)")


def _listen_hosts(modes: Sequence[str] | None, listen_host: str | None) -> list[tuple[str, str]]:
    """Each address mitmproxy's modes listen on (every interface as 0.0.0.0), with " (mode SPEC)" when the
    spec names its own (`regular@0.0.0.0:8080` ignores listen_host); local mode listens nowhere. A spec
    mitmproxy cannot parse is left to mitmproxy, which refuses it."""
    from mitmproxy.proxy.mode_specs import LocalMode, ProxyMode

    found = []
    for spec in modes or ("regular",):
        try:
            mode = ProxyMode.parse(spec)
        except ValueError:
            continue
        if not isinstance(mode, LocalMode):
            own = mode.custom_listen_host is not None
            found.append((mode.listen_host(listen_host) or "0.0.0.0", f" (mode {spec})" if own else ""))
    return found
