"""`gemini-tool-proxy`: run the front-end (`serve`) or the mock Gemini (`mock`)."""

from __future__ import annotations  # the annotations name modules imported only where they run

import argparse
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

# Only what parsing the command line needs (and `--help`): argparse and the options' table. The
# commands import the rest where they run, so `--help` loads neither aiohttp nor pydantic.
from proxy import options
from proxy.certs_dir import CERTS_DIR, private_dir
from proxy.config_file import ConfigError, apply_config, given_options
from proxy.defaults import CARRIER_KEYS_ENV, CARRIER_KEYS_FILE, DEFAULT_BASE_URL, DIALECT_NAMES

if TYPE_CHECKING:
    import asyncio

    from aiohttp import web

    from proxy.journal.recorder import Recorder
    from proxy.model_rules import ModelRules
    from proxy.server.auth import ClientKeys
    from proxy.server.site import ServerLimits
    from proxy.store.entry_store import EntryStore
    from proxy.upstream.base import Upstream
    from proxy.upstream.gemini.client import GeminiUpstream
    from proxy.upstream.openai.client import OpenAIUpstream

DEFAULT_PORT = options.DEFAULT_PORT
DEFAULT_MOCK_PORT = 8742
DEFAULT_MITM_PORT = 8080
ADDON_SCRIPT = Path(__file__).with_name("addon_script.py")  # in the package: works from a wheel too
log = logging.getLogger("gemini-tool-proxy")


def _fail(message: str) -> NoReturn:
    """A configuration that cannot work: one line naming it, exit 2 (argparse's usage-error code),
    before anything listens."""
    print(f"gemini-tool-proxy: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


class _Parser(argparse.ArgumentParser):
    """A bad option value is one line naming it and the reason, and where the usage is (argparse's own
    error() prints the whole usage first: 40 lines for `serve`, the reason last). Exit 2, as argparse."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message.removeprefix('argument ')} (see {self.prog} --help)",
              file=sys.stderr, flush=True)
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gemini-tool-proxy", description=__doc__)
    _global_arguments(p, {"log_level": "INFO", "log_format": "text", "event_loop": "auto"})
    sub = p.add_subparsers(dest="command", required=True)
    p.set_defaults(commands=sub.choices)
    # The same options after the subcommand too (`serve --log-format json`): there they default to
    # nothing, so a value given before the subcommand stands unless one is given after it.
    suppressed = dict.fromkeys(("log_level", "log_format", "event_loop"), argparse.SUPPRESS)
    common = argparse.ArgumentParser(add_help=False)
    _global_arguments(common, suppressed)
    sub = _SubcommandsWith(sub, common)

    serve = sub.add_parser("serve",
                           help="run the front-end: OpenAI Responses and Chat, Anthropic Messages, Gemini-native")
    _config_argument(serve)
    options.add_arguments(serve, "serve", {"carrier-keys-file": str(CERTS_DIR / CARRIER_KEYS_FILE)})

    carrier = sub.add_parser("carrier-key", help="make or rotate the carrier keys file")
    carrier.add_argument("--file", default=str(CERTS_DIR / CARRIER_KEYS_FILE), help="keys file (default %(default)s)")
    carrier.add_argument("--rotate", action="store_true",
                         help="put a new sealing key first; older keys keep opening what they sealed")

    ca = sub.add_parser("ca", help="generate the proxy's CA (mitmproxy layout) into a directory")
    ca.add_argument("--dir", default=str(CERTS_DIR), help=f"target directory (default {CERTS_DIR})")
    ca.add_argument("--key-type", choices=("rsa", "ec"), default="rsa", help="RSA-2048 (default) or EC P-256")
    ca.add_argument("--force", action="store_true", help="replace an existing CA")

    # No abbreviations: `--mode` must never be read as a prefix of `--model-alias`, nor any mitmproxy
    # option as one of ours.
    mitm = sub.add_parser("mitm", help="run the intercepting proxy (mitmdump + addon) with the front-end",
                          epilog="Arguments after -- go to mitmdump, e.g. -- --set gtp_default_session=work",
                          allow_abbrev=False)
    _config_argument(mitm)
    mitm.add_argument("--listen-host", default="127.0.0.1", help="proxy address (default 127.0.0.1)")
    mitm.add_argument("--listen-port", type=options.port, default=DEFAULT_MITM_PORT,
                      help=f"proxy port clients use as HTTPS_PROXY (default {DEFAULT_MITM_PORT})")
    mitm.add_argument("--mode", action="append", default=[], type=_proxy_mode, metavar="MODE",
                      help="how apps reach the proxy, as mitmproxy's modes (repeatable; default regular): regular "
                           "(apps use it as HTTPS_PROXY), transparent (the system redirects their connections; "
                           "the real host is the TLS server name), wireguard[:CONF] (another device or a VM), "
                           "local[:APP] (where mitmproxy supports it), reverse:URL, socks5, upstream:URL; "
                           "MODE@PORT listens on another port than --listen-port")
    mitm.add_argument("--confdir", default=str(CERTS_DIR), help=f"CA directory (default {CERTS_DIR}; made if missing)")
    options.add_arguments(mitm, "mitm")
    mitm.add_argument("mitmdump_args", nargs="*", help="extra mitmdump arguments (after --)")

    parse = sub.add_parser("parse", help="parse a model's text into calls (JSON lines on stdin and stdout)",
                           description="Each input line is {\"text\": ...} or {\"chunks\": [...]} (optionally with "
                                       "\"tools\"); each output line {\"calls\", \"content\", \"reasoning\"} or "
                                       "{\"error\"}.")
    parse.add_argument("--dialect", required=True, choices=sorted(DIALECT_NAMES), help="the model's text dialect")
    parse.add_argument("--tools", metavar="TOOLS.json", help="declared tools (a JSON list, any common shape)")

    inspect = sub.add_parser("inspect", help="print a running proxy's recent exchanges, or one in full",
                             description="Reads the journal of a running proxy (its /inspect API).")
    inspect.add_argument("exchange", nargs="?", help="an exchange id (ex_...): show it in full")
    inspect.add_argument("--url", default=f"http://127.0.0.1:{options.DEFAULT_PORT}",
                         help="the proxy's front-end (default %(default)s)")
    inspect.add_argument("--key", help="a client key, when the proxy has keys (default $GTP_INSPECT_KEY)")
    inspect.add_argument("-n", "--last", type=int, default=20, help="how many exchanges to list (default 20)")
    inspect.add_argument("--session", help="only this session's exchanges")
    inspect.add_argument("--status", choices=("ok", "error"), help="only successful or only failed exchanges")
    inspect.add_argument("--body-chars", type=int, default=4000, help="characters shown of each body (default 4000)")

    usage = sub.add_parser("usage", help="print a running proxy's usage and cost per key, model and day",
                           description="Reads GET /v1/usage of a running proxy: an admin key (--admin-key) sees "
                                       "every key, another key only its own.")
    usage.add_argument("--url", default=f"http://127.0.0.1:{options.DEFAULT_PORT}",
                       help="the proxy's front-end (default %(default)s)")
    usage.add_argument("--key", help="a client key, when the proxy has keys (default $GTP_ADMIN_KEY, then "
                                     "$GTP_INSPECT_KEY, then $GTP_API_KEY)")
    usage.add_argument("--from", dest="start", metavar="YYYY-MM-DD", help="first UTC day (default 29 days before --to)")
    usage.add_argument("--to", dest="end", metavar="YYYY-MM-DD", help="last UTC day (default today)")
    usage.add_argument("--group-by", action="append", metavar="key,model,day",
                       help="the rows' columns, comma separated or repeated (default all three)")
    usage.add_argument("--json", action="store_true", help="print the proxy's answer as it is (JSON)")

    mock = sub.add_parser("mock", help="run the mock Gemini API on its own")
    mock.add_argument("--host", default="127.0.0.1")
    mock.add_argument("--port", type=options.port, default=DEFAULT_MOCK_PORT,
                      help=f"port (default {DEFAULT_MOCK_PORT})")
    mock.add_argument("--openai", action="store_true",
                      help="run the mock local OpenAI-compatible server (/v1/chat/completions) instead")
    return p


def _global_arguments(p: argparse.ArgumentParser, defaults: dict[str, str]) -> None:
    p.add_argument("--log-level", default=defaults["log_level"], help="logging level (default INFO)")
    p.add_argument("--log-format", choices=("text", "json"), default=defaults["log_format"],
                   help="log lines as text (default) or as JSON objects with request and session ids")
    p.add_argument("--event-loop", choices=("auto", "uvloop", "asyncio"), default=defaults["event_loop"],
                   help="the event loop for serve and mock: uvloop (faster I/O; the default where it is installed) "
                        "or asyncio's own")


class _SubcommandsWith:
    """add_parser that gives every subcommand the global options as well."""

    def __init__(self, sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
        self.sub, self.common = sub, common

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        return self.sub.add_parser(name, parents=[self.common], **kwargs)  # type: ignore[arg-type]


def _config_argument(p: argparse.ArgumentParser) -> None:
    """The table's `config` (the addon's gtp_config): serve reads the file itself, mitm hands it on."""
    p.add_argument("--config", metavar="FILE.toml", help=options.BY_NAME["config"].help)


def _apply_config(args: argparse.Namespace, parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """serve: the file fills what the flags left; mitm: the addon reads it (gtp_config), as it holds
    the options for both."""
    if not getattr(args, "config", None) or args.command == "mitm":
        return
    at = argv.index(args.command)
    try:
        apply_config(args, args.config, args.commands[args.command], parser, argv[at + 1:], argv[:at])
    except ConfigError as e:
        _fail(str(e))


def _model_rules(args: argparse.Namespace) -> ModelRules:
    from proxy.model_rules import ModelRules

    try:
        return ModelRules.parse(args.tool_result_media, args.stream_arguments, args.hosted_tools, args.tool_mode,
                                args.rescue_text_calls, args.single_call, args.think_open, args.fallback)
    except ValueError as e:
        _fail(str(e))


def _keys(args: argparse.Namespace, *hosts: str) -> ClientKeys:
    """The client keys, or exit with a clear message (bad keys, or an open bind without any)."""
    from proxy.server.auth import load_keys, refuse_open_bind

    try:
        keys = load_keys(args.api_key, args.api_keys_file)
    except ValueError as e:
        _fail(str(e))
    for host in hosts:
        refusal = refuse_open_bind(host, keys, args.allow_unauthenticated, "--allow-unauthenticated")
        if refusal:
            _fail(str(refusal))
    return keys


async def _until_stopped(on_stop: Callable[[], None] | None = None, drain: float = 0.0) -> None:
    """Until SIGINT or SIGTERM; `on_stop` runs at once (the front-end's /readyz turns 503). SIGTERM, an
    orchestrator's or a balancer's stop, then drains: the listener stays open `drain` seconds, so the
    balancer's health checks see the 503 and send no more before connections are refused. SIGINT (a
    Ctrl-C at a terminal, where nobody balances) and a second signal during the drain stop at once."""
    import asyncio

    stop = asyncio.Event()
    got: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(sig: int) -> None:
        got.append(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, on_signal, sig)
    await stop.wait()
    if on_stop is not None:
        on_stop()
    if got[0] == signal.SIGTERM and drain > 0:
        log.info("SIGTERM: draining for %g s (/readyz answers 503, requests are still served), then "
                 "refusing new connections", drain)
        stop.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(drain):
                await stop.wait()
        if stop.is_set():
            log.info("a second signal: the drain ends now")


async def _start_site(app: web.Application, host: str, port: int, limits: ServerLimits
                      ) -> tuple[web.AppRunner, int]:
    """The running site and the port it really listens on (`--port 0` picks a free one)."""
    from proxy.server.site import start_site

    try:
        runner, site = await start_site(app, host, port, limits)
    except OSError as e:
        _fail(f"cannot listen on {host}:{port}: {e.strerror or e}")
    server = getattr(site, "_server", None)
    sockets = getattr(server, "sockets", None) or []
    return runner, sockets[0].getsockname()[1] if sockets else port


async def _serve(args: argparse.Namespace) -> None:
    import asyncio

    from proxy import gc_tuning
    from proxy.front.app import make_app  # the routes and wire models: only what serves needs them
    from proxy.server.collections import parse_passthrough
    from proxy.server.context import parse_aliases
    from proxy.server.guard import RequestGuard
    from proxy.server.site import ServerLimits, raise_fd_limit
    from proxy.signatures.carrier_keys import load_carrier_keys
    from proxy.store.open_store import open_store
    from proxy.tools.schema_mode import parse_schema_modes
    from proxy.upstream.gemini.vertex import VertexUpstream
    from proxy.usage.ledger import Ledger
    from proxy.usage.limits import parse_limits
    from proxy.usage.meter import PriceError, Prices

    keys = _keys(args, args.host)
    rules = _model_rules(args)  # (a bad rule exits before anything, the built-in mock too, listens)
    try:
        budgets = parse_limits(args.limit)
        prices = Prices.load(args.prices)
    except (ValueError, PriceError) as e:
        _fail(str(e))
    admins = [keys.scope(k) for k in args.admin_key]
    if None in admins:
        _fail("--admin-key: each admin key must also be a client key (--api-key, --api-keys-file or $GTP_API_KEYS)")
    try:
        if Path(args.carrier_keys_file).expanduser().parent == CERTS_DIR and not (
                args.carrier_key or os.environ.get(CARRIER_KEYS_ENV)):
            private_dir(CERTS_DIR)  # the keys file is read (or made) there: the directory 0700
        carrier = load_carrier_keys(args.carrier_key, Path(args.carrier_keys_file))
    except (ValueError, OSError) as e:
        _fail(f"carrier keys: {e}")
    raise_fd_limit()
    limits = ServerLimits.configured(args.client_timeout, args.shutdown_timeout, args.max_connections,
                                     args.background_lease, args.upstream_connections, args.max_in_flight_per_key,
                                     args.max_background_per_key)
    runners = []
    base = args.upstream
    if base == "mock":
        from proxy.mock.server import start_mock  # the mock and the CA are imported only where used

        mock_runner, base, _ = await start_mock()
        runners.append(mock_runner)
        log.info("built-in mock Gemini at %s", base)
    try:
        aliases, modes = parse_aliases(args.model_alias), parse_schema_modes(args.schema_mode)
    except ValueError as e:
        _fail(str(e))
    try:
        passthrough = parse_passthrough(args.passthrough_collection)
    except ValueError as e:
        _fail(str(e))
    try:
        upstream = _upstream(args, base, limits.pool_size(args.upstream_connections))
    except ValueError as e:
        _fail(str(e))
    try:
        store = open_store(args.store, max_bytes=args.store_max_bytes, session_bytes=args.session_max_bytes,
                           ttl=args.store_ttl)
    except ValueError as e:
        _fail(f"--store: {e}")
    await _check_store(store, args.store, bool(keys))
    recorder = _recorder(args, store)
    try:
        guard = RequestGuard.configured(args.host, args.allowed_host, args.allowed_origin)
    except ValueError as e:
        _fail(f"--allowed-origin: {e}")
    app = make_app(store, upstream, aliases=aliases, schema_modes=modes, fill_missing=args.fill_missing_required,
                   forced_choice=args.forced_choice, keys=keys, carrier=carrier, limits=limits,
                   rules=rules, recorder=recorder, passthrough_collections=passthrough, guard=guard,
                   usage=Ledger.open(args.store, prices, budgets, admins=admins))
    runner, port = await _start_site(app, args.host, args.port, limits)
    runners.append(runner)
    gemini = getattr(upstream, "default", upstream)
    shown = (f"Vertex AI at {gemini.base_url}, {len(gemini.pool)} credential(s)"
             if isinstance(gemini, VertexUpstream) else base)
    log.info("gemini-tool-proxy listening on http://%s:%d (upstream %s; %s; event loop %s)", args.host, port,
             shown, f"{len(keys)} client key(s)" if keys else "no client authentication",
             type(asyncio.get_running_loop()).__module__.split(".")[0])
    gc_tuning.tune()
    gc_tuning.freeze_startup()
    print(f"gemini-tool-proxy ready on http://{args.host}:{port}", flush=True)
    try:
        from proxy.front.app import drain
        await _until_stopped(lambda: drain(app), args.drain_seconds)
    finally:
        for r in reversed(runners):
            await r.cleanup()
        await store.close()


def _recorder(args: argparse.Namespace, store: EntryStore) -> Recorder:
    """The journal and the traces, told every secret the command line and the keys file hold."""
    from proxy.journal.recorder import Recorder

    secrets = [*args.api_key, *args.gemini_key, *args.carrier_key]
    if args.api_keys_file:
        with contextlib.suppress(OSError):
            secrets += Path(args.api_keys_file).read_text().split()
    return Recorder.from_options(args.journal, args.journal_max_bytes, args.otlp_endpoint, secrets=secrets,
                                 store=store)


async def _check_store(store: EntryStore, url: str, keyed: bool) -> None:
    """Reach the store before listening: a store that answers it will never work is an error (also a
    shared store of keyed instances for a keyless one); one that cannot be reached yet is a warning
    (requests answer 503 store_unavailable until it is back)."""
    from proxy.errors import ProxyError
    from proxy.store.open_store import redacted

    try:
        await store.check()
        await store.claim(keyed)
    except ValueError as e:
        await store.close()
        _fail(f"--store {redacted(url)}: {e}")
    except ProxyError as e:
        log.warning("the store is not reachable yet (%s); requests answer 503 until it is", e.message)


def _upstream(args: argparse.Namespace, base: str, pool_size: int = 0) -> Upstream:
    """Gemini at `base`, with the models --openai-upstream names routed to their servers; each upstream
    with a pool of `pool_size` connections (0: no limit)."""
    from proxy.upstream.gemini.client import GeminiUpstream
    from proxy.upstream.gemini.vertex import VertexUpstream, vertex_credentials
    from proxy.upstream.http import RetryPolicy
    from proxy.upstream.interactions.client import InteractionsUpstream
    from proxy.upstream.openai.client import OpenAIUpstream
    from proxy.upstream.routes import RoutedUpstream, gemini_routes, parse_budgets, parse_routes, parse_upstream_api

    timeouts = {"connect_timeout": args.connect_timeout, "read_timeout": args.read_timeout,
                "total_timeout": args.total_timeout, "retry": RetryPolicy(args.max_retries), "pool_size": pool_size,
                "pool_timeout": args.pool_timeout}
    gemini_keys = {"keys": args.gemini_key} if args.gemini_key else {}
    routes, budgets = parse_routes(args.openai_upstream), parse_budgets(args.two_pass)
    apis = parse_upstream_api(args.upstream_api)
    gemini: GeminiUpstream
    if args.vertex_credentials:
        if any(a == "interactions" for _, a in apis):
            raise ValueError("--upstream-api interactions needs Gemini's Developer API; Vertex AI has no "
                             "Interactions API (drop --vertex-credentials or the rule)")
        credentials = vertex_credentials(args.vertex_credentials, args.vertex_project, args.vertex_location)
        gemini = VertexUpstream(None if base == DEFAULT_BASE_URL else base, credentials, args.vertex_location,
                                **timeouts)
    else:
        gemini = GeminiUpstream(base, **timeouts, **gemini_keys)
    if not routes and not apis:
        return gemini
    servers: dict[str, OpenAIUpstream] = {}
    for _, url in routes:
        servers.setdefault(url, OpenAIUpstream(url, two_pass=budgets, think_open=tuple(args.think_open), **timeouts))
    wanted = any(a == "interactions" for _, a in apis)
    interactions = InteractionsUpstream(base, **timeouts, **gemini_keys) if wanted else None
    return RoutedUpstream(gemini, [(pattern, servers[url]) for pattern, url in routes]
                          + gemini_routes(gemini, interactions, apis))


async def _mock(args: argparse.Namespace) -> None:
    from proxy import gc_tuning
    from proxy.mock.local_server import start_local_mock
    from proxy.mock.server import start_mock

    if args.openai:
        runner, base, _ = await start_local_mock(args.host, args.port)
    else:
        runner, base, _ = await start_mock(args.host, args.port)
    # The collector tuned as serve's: the mock keeps its last 256 requests parsed (/mock/last), and with
    # Python's defaults their objects were walked again and again, a 2.5 ms pause every 60 large requests
    # in every benchmark's upstream (docs/benchmarks.md, 2026-12-08 findings).
    gc_tuning.tune()
    gc_tuning.freeze_startup()
    print(f"mock OpenAI-compatible server ready on {base}" if args.openai else f"mock Gemini ready on {base}",
          flush=True)
    try:
        await _until_stopped()
    finally:
        await runner.cleanup()


def _ca(args: argparse.Namespace) -> None:
    from proxy.ca import CA_KEY_AND_CERT, generate_ca

    try:
        cert = generate_ca(Path(args.dir), key_type=args.key_type, overwrite=args.force)
    except FileExistsError as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"--dir {args.dir}: cannot write the CA there: {e.strerror or e}")
    print(f"CA written to {args.dir} (key file {CA_KEY_AND_CERT}, mode 0600).\nClients trust {cert}:\n"
          f"  SSL_CERT_FILE={cert}  REQUESTS_CA_BUNDLE={cert}  NODE_EXTRA_CA_CERTS={cert}")


def _carrier_key(args: argparse.Namespace) -> None:
    """The default file's directory (the certs directory) is made 0700 when missing, and said so; a file
    the user named whose directory is missing is refused: most likely a typo, and a directory tree
    nobody asked for, made without a word, would hide it."""
    from proxy.signatures.carrier_keys import load_carrier_keys, rotate

    path = Path(args.file).expanduser()
    made = None
    if path.parent == CERTS_DIR:
        existed = CERTS_DIR.is_dir()
        try:
            private_dir(CERTS_DIR)
        except OSError as e:
            _fail(f"--file {args.file}: cannot make its directory: {e.strerror or e}")
        made = None if existed else CERTS_DIR
    elif not path.parent.is_dir():
        _fail(f"--file {args.file}: the directory {path.parent} does not exist (make it first, e.g. "
              f"mkdir -m 700 -p {path.parent})")
    try:
        keys = rotate(path) if args.rotate or not path.exists() else load_carrier_keys([], path, env={})
    except OSError as e:
        _fail(f"--file {args.file}: {e.strerror or e}")
    except ValueError as e:
        _fail(f"--file {args.file}: {e}")
    if made:
        print(f"made {made} (mode 0700) for the keys")
    print(f"carrier keys in {path} (mode 0600): {keys.count} key(s), the first seals")


def _proxy_mode(text: str) -> str:
    """A mitmproxy mode spec (`transparent`, `wireguard@51820`...), checked by mitmproxy's own parser."""
    from mitmproxy.proxy.mode_specs import ProxyMode

    try:
        ProxyMode.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a mitmproxy mode ({e}): {text!r}") from None
    return text


def _mitm_file_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The addon options the --config file sets, read as the addon will read them, before mitmdump
    starts (there a bad file is a traceback)."""
    if not args.config:
        return {}
    from proxy.intercept.options import check_config_file

    try:
        return check_config_file(args.config)
    except ConfigError as e:
        _fail(str(e))


def _check_store_url(url: str, keyed: bool) -> None:
    import asyncio

    from proxy.store.open_store import open_store

    try:
        store = open_store(url)
    except ValueError as e:
        _fail(f"--store: {e}")

    async def check() -> None:
        try:
            await _check_store(store, url, keyed)
        finally:
            await store.close()

    asyncio.run(check())


def _mitm(args: argparse.Namespace, given: set[str]) -> None:
    """mitmdump with the addon. An option goes to it as `--set` unless the --config file sets it and the
    command line did not (the file must not lose to a default the user never typed)."""
    keyed = bool(_keys(args))  # the addon checks both addresses (its options are the same for plain mitmdump)
    in_file = _mitm_file_settings(args)
    sets: list[str] = []

    def put(dest: str, option: str, *values: object) -> None:
        if dest in given or option not in in_file:
            sets.extend(a for v in values for a in ("--set", f"{option}={v}"))

    for dest, option, values in options.mitm_settings(args):
        put(dest, option, *values)
    put("listen_host", "listen_host", args.listen_host)
    put("listen_port", "listen_port", args.listen_port)
    _check_store_url(args.store if "gtp_store" not in in_file or "store" in given else in_file["gtp_store"],
                     keyed or bool(in_file.get("gtp_api_key") or in_file.get("gtp_api_keys_file")))
    from proxy.ca import ensure_ca

    try:
        ensure_ca(Path(args.confdir))
    except OSError as e:
        _fail(f"--confdir {args.confdir}: cannot write the CA there: {e.strerror or e}")
    _run_mitmdump(["-s", str(ADDON_SCRIPT), "--set", f"confdir={args.confdir}", "--set", "flow_detail=0",  # >= 2
                   "--set", f"termlog_verbosity={_termlog_verbosity(args.log_level)}",  # would print API keys
                   *sets, *(["--set", f"gtp_config={args.config}"] if args.config else []),
                   *(a for mode in args.mode for a in ("--mode", mode)),
                   *args.mitmdump_args])


def _termlog_verbosity(level: str) -> str:
    """--log-level as mitmproxy's termlog_verbosity (error, warn, info, debug); `-- -q` still wins."""
    number = logging.getLevelName(level.upper())
    number = number if isinstance(number, int) else int(level) if level.isdigit() else logging.INFO
    return "debug" if number <= logging.DEBUG else "info" if number <= logging.INFO else \
        "warn" if number <= logging.WARNING else "error"


def _run_mitmdump(argv: list[str]) -> None:
    """mitmdump with one log handler: mitmproxy's terminal log (its levels: termlog_verbosity, -q, -v),
    writing our format (--log-format) to stderr, as serve does. Ours and mitmproxy's both on the root
    logger printed every line twice, ours at DEBUG too (mitmdump sets the root logger to DEBUG)."""
    from mitmproxy.tools import cmdline, dump
    from mitmproxy.tools.main import run

    ours = logging.getLogger().handlers[:]

    class Master(dump.DumpMaster):
        def __init__(self, opts: Any, loop: Any = None) -> None:
            super().__init__(opts, loop)
            term = getattr(getattr(self, "_termlog_addon", None), "logger", None)
            if term is None or not ours:  # another mitmproxy: both handlers stay (lines twice, none lost)
                return
            term.setFormatter(ours[0].formatter)
            term.file = getattr(ours[0], "stream", sys.stderr)
            for handler in ours:
                logging.getLogger().removeHandler(handler)

    def extra(parsed: argparse.Namespace) -> dict[str, str]:  # what mitmdump() does with a filter expression
        if parsed.filter_args:
            v = " ".join(parsed.filter_args)
            return {"save_stream_filter": v, "readfile_filter": v, "dumper_filter": v}
        return {}

    run(Master, cmdline.mitmdump, argv, extra)


def main(argv: list[str] | None = None) -> None:
    try:
        try:
            _main(argv)
        finally:  # inside the try (also on SystemExit): a closed pipe raises here, not at interpreter exit
            sys.stdout.flush()
    except BrokenPipeError:
        _stdout_closed()


# A reader that went away (`inspect | head`): exit quietly, with the code a C tool killed by SIGPIPE
# gets from the shell (128 + 13), so `set -o pipefail` sees the same as for `cat`. SIGPIPE itself stays
# ignored, as Python sets it: a dropped socket must stay an exception, not kill the process.
EXIT_STDOUT_CLOSED = 141


def _stdout_closed() -> NoReturn:
    """Python's recipe (signal module docs, "Note on SIGPIPE"): point stdout at devnull so the flush at
    exit does not raise again, and exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(EXIT_STDOUT_CLOSED)


def _main(argv: list[str] | None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the subcommand's parser, whose --help lists what it takes
        args.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    _apply_config(args, parser, argv)
    import asyncio  # the command line parsed (and --help printed): what the commands need

    from proxy import log_limits, malloc_tuning
    from proxy.logs import setup_logging

    setup_logging(args.log_level, args.log_format)
    log_limits.install()
    malloc_tuning.tune()
    if args.command == "ca":
        return _ca(args)
    if args.command == "mitm":
        return _mitm(args, given_options(args.commands["mitm"], argv[argv.index("mitm") + 1:]))
    if args.command == "carrier-key":
        return _carrier_key(args)
    if args.command == "parse":
        from proxy.dialects import parse_command
        raise SystemExit(parse_command.run(args.dialect, args.tools))
    if args.command == "inspect":
        from proxy.journal import inspect_command
        raise SystemExit(inspect_command.run(args.url, args.key, args.last, args.exchange, args.session, args.status,
                                             args.body_chars))
    if args.command == "usage":
        from proxy import usage_command
        raise SystemExit(usage_command.run(args.url, args.key, args.start, args.end, args.group_by, args.json))
    with contextlib.suppress(KeyboardInterrupt):
        run = _serve(args) if args.command == "serve" else _mock(args)
        asyncio.run(run, loop_factory=_loop_factory(args.event_loop))


def _loop_factory(choice: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop cut the proxy's CPU per request by about a sixth in scripts/bench.sh; asyncio's loop
    stays one flag away (and is what runs where uvloop is not installed, e.g. Windows)."""
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            _fail("--event-loop uvloop: uvloop is not installed (pip install uvloop)")
        return None
    return uvloop.new_event_loop


if __name__ == "__main__":
    main()
