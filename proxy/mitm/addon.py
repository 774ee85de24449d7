"""`GeminiTools`: the mitmproxy addon (load it with `mitmdump -s addons/gemini_tools.py`).

Per intercepted generate call: bind a session (header, then prompt marker, then the default
session), apply its tool context with the shared core (`translate/tool_context.py`), force an
identity encoding so streams can be read, tap the answer for functionCall parts as it streams
through untouched, and record them as the session's next round. Everything else passes through.
"""

import fnmatch
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from mitmproxy import ctx, exceptions, http
from mitmproxy.proxy import server_hooks

from proxy.errors import ProxyError
from proxy.forced_choice_upstream import POLICIES
from proxy.mitm.relay import DEFAULT_TIMEOUT, RelayBroker, RelayTurn, RelayUpstream, fake_stop
from proxy.mock.server import start_mock
from proxy.server import make_app
from proxy.server.context import parse_aliases
from proxy.sse import SSEDecoder
from proxy.store import MemoryStore
from proxy.store.base import SessionStore
from proxy.translate.capture_calls import CallCapture, SSETap, unwrap
from proxy.translate.gemini_targets import Target, classify
from proxy.translate.prepare_tools import parse_schema_modes
from proxy.translate.session_marker import take_marker
from proxy.translate.tool_context import DEFAULT_PLACEHOLDER, ToolRound, apply_tool_context
from proxy.upstream import DEFAULT_BASE_URL, GeminiUpstream, Upstream

log = logging.getLogger(__name__)

DEFAULT_HOSTS = ("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "*cloudcode-pa*.googleapis.com",
                 "aiplatform.googleapis.com", "*-aiplatform.googleapis.com")
META = "gemini_tool_proxy"
# aiohttp waits this long for open responses (SSE clients) when stopping; its default of 60 s made
# mitmdump take two minutes to exit with one client attached (reference/mitmproxy.md §3).
SHUTDOWN_TIMEOUT = 2.0


@dataclass
class FlowState:
    target: Target
    model: str
    session: str | None
    capture: CallCapture
    relay: RelayTurn | None = None


class GeminiTools:
    def __init__(self, store: SessionStore | None = None) -> None:
        self.store: SessionStore = store or MemoryStore()
        self.relay = RelayBroker()
        self._runners: list[web.AppRunner] = []
        self.frontend_url: str | None = None

    # -- options -----------------------------------------------------------------------------

    def load(self, loader: Any) -> None:
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
        loader.add_option("gtp_route", str | None, None,
                          "host:port every upstream connection goes to instead (a local Gemini, for testing; "
                          "use with connection_strategy=lazy). TLS still names the original host.")

    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        if "gtp_forced_choice" in updated and opts.gtp_forced_choice not in POLICIES:
            raise exceptions.OptionsError(f"gtp_forced_choice must be one of {', '.join(POLICIES)}")
        if "gtp_tools" in updated and opts.gtp_tools not in ("replace", "merge"):
            raise exceptions.OptionsError(f"gtp_tools must be 'replace' or 'merge', not {opts.gtp_tools!r}")
        if "gtp_frontend_port" in updated and not -1 <= opts.gtp_frontend_port < 65536:
            raise exceptions.OptionsError(f"gtp_frontend_port out of range: {opts.gtp_frontend_port}")
        if "gtp_route" in updated and opts.gtp_route:
            host, _, port = opts.gtp_route.rpartition(":")
            if not host or not port.isdigit():
                raise exceptions.OptionsError(f"gtp_route must be host:port, not {opts.gtp_route!r}")
        if "gtp_model_aliases" in updated or "gtp_schema_mode" in updated:
            try:
                parse_aliases(opts.gtp_model_aliases)
                parse_schema_modes(opts.gtp_schema_mode)
            except ValueError as e:
                raise exceptions.OptionsError(str(e)) from None
        if "gtp_upstream" in updated and not (opts.gtp_upstream in ("mock", "relay") or opts.gtp_upstream.startswith(
                ("http://", "https://"))):
            raise exceptions.OptionsError(f"gtp_upstream must be an http(s) URL, 'mock' or 'relay', "
                                          f"not {opts.gtp_upstream!r}")
        if opts.gtp_upstream == "relay" and not opts.gtp_relay:
            raise exceptions.OptionsError("gtp_upstream=relay needs gtp_relay (a URL or a command line)")

    # -- lifecycle: the front-end shares this process, its loop and the session store ------------

    async def running(self) -> None:
        if ctx.options.gtp_frontend_port < 0:
            return
        base = ctx.options.gtp_upstream
        if base == "mock":
            runner, base, _ = await start_mock()
            self._runners.append(runner)
        upstream: Upstream
        if base == "relay":
            upstream = RelayUpstream(self.relay, ctx.options.gtp_relay, ctx.options.gtp_relay_timeout)
        else:
            upstream = GeminiUpstream(base)
        app = make_app(self.store, upstream, aliases=parse_aliases(ctx.options.gtp_model_aliases),
                       schema_modes=parse_schema_modes(ctx.options.gtp_schema_mode),
                       fill_missing=ctx.options.gtp_fill_missing, forced_choice=ctx.options.gtp_forced_choice)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
        await runner.setup()
        site = web.TCPSite(runner, ctx.options.gtp_frontend_host, ctx.options.gtp_frontend_port)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            # An error logged during start-up makes mitmdump exit (ErrorCheck): fail fast on a busy port.
            log.error("front-end cannot listen on %s:%s: %s", ctx.options.gtp_frontend_host,
                      ctx.options.gtp_frontend_port, e.strerror or e)
            return
        self._runners.append(runner)
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.frontend_url = f"http://{ctx.options.gtp_frontend_host}:{port}"
        log.info("gemini-tool-proxy front-end listening at %s (upstream %s)", self.frontend_url, base)

    async def done(self) -> None:
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()

    # -- connections -------------------------------------------------------------------------

    def _intercepted(self, host: str) -> bool:
        return any(fnmatch.fnmatch(host, pattern) for pattern in ctx.options.gtp_intercept_hosts)

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        route = ctx.options.gtp_route
        if not route or data.server.address is None:
            return
        host, _, port = route.rpartition(":")
        data.server.sni = data.server.sni or data.server.address[0]
        data.server.address = (host, int(port))

    # -- requests ----------------------------------------------------------------------------

    async def request(self, flow: http.HTTPFlow) -> None:
        if flow.response or flow.error or not flow.live or flow.request.method != "POST":
            return
        if not self._intercepted(flow.request.pretty_host):
            return
        target = classify(flow.request.path)
        if target is None:
            return
        try:
            body = json.loads(flow.request.get_content(strict=False) or b"")
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            return  # not ours to judge: Gemini will answer it
        if not isinstance(body, dict):
            return
        inner = body.get("request") if target.kind == "cloudcode" else body
        if not isinstance(inner, dict):
            return
        model = (body.get("model") if target.kind == "cloudcode" else target.model) or ""
        model = str(model).removeprefix("models/")

        session = flow.request.headers.pop(ctx.options.gtp_session_header, None)
        marked, contents = take_marker(inner.get("contents") or [])
        inner = {**inner, "contents": contents} if marked or contents != inner.get("contents") else inner
        session = session or marked or ctx.options.gtp_default_session
        turn = self.relay.get(session)
        if turn is not None:
            self._relay_request(flow, target, body, inner, turn)
            return
        tool_ctx = await self.store.get_tool_context(session) if session else None
        try:
            rewritten = apply_tool_context(inner, tool_ctx, model, merge=ctx.options.gtp_tools == "merge",
                                           placeholder=ctx.options.gtp_placeholder)
        except ProxyError as e:
            log.warning("refused intercepted request for session %s: %s", session, e.message)
            flow.response = http.Response.make(e.status, json.dumps({"error": {
                "code": e.status, "message": e.message, "status": "FAILED_PRECONDITION"}}),
                {"content-type": "application/json"})
            return
        if rewritten != inner or marked:  # otherwise the app's bytes go out exactly as sent
            body = {**body, "request": rewritten} if target.kind == "cloudcode" else rewritten
            flow.request.set_content(json.dumps(body, ensure_ascii=False).encode())
        if target.stream:
            flow.request.headers["accept-encoding"] = "identity"  # the tap must see plain bytes
        flow.metadata[META] = FlowState(target, model, session, CallCapture())

    # -- relay ---------------------------------------------------------------------------------

    def _relay_request(self, flow: http.HTTPFlow, target: Target, body: dict[str, Any], inner: dict[str, Any],
                       turn: RelayTurn) -> None:
        """Swap the relay app's request for the turn's real one, or fake-STOP a follow-up."""
        sse = flow.request.query.get("alt") == "sse"
        if turn.state != "waiting":
            flow.response = http.Response.make(
                200, fake_stop(ctx.options.gtp_placeholder, sse, target.kind == "cloudcode", target.stream and not sse),
                {"content-type": "text/event-stream" if sse else "application/json"})
            return
        turn.state = "forwarded"
        # Keep what only the app can know (Cloud Code's session id, safety settings); the rest is the turn's.
        kept = {k: v for k, v in inner.items() if k in ("sessionId", "session_id", "safetySettings", "labels")}
        real = {**kept, **turn.body}
        if target.kind == "cloudcode":
            body = {**body, "model": turn.model, "request": real}
        else:
            body = real
            if target.model and target.model != turn.model:
                flow.request.path = flow.request.path.replace(f"/{target.model}:", f"/{turn.model}:", 1)
        flow.request.set_content(json.dumps(body, ensure_ascii=False).encode())
        flow.request.headers["accept-encoding"] = "identity"
        flow.metadata[META] = FlowState(target, turn.model, turn.marker, CallCapture(), relay=turn)

    def _relay_tap(self, state: FlowState, sse: bool) -> Any:
        """Stream callable: real chunks go to the waiting front-end request, the app gets a fake STOP."""
        turn, decoder, wrapped = state.relay, SSEDecoder(), state.target.kind == "cloudcode"
        assert turn is not None

        def tap(data: bytes) -> bytes | list[bytes]:
            try:
                for payload in (decoder.feed(data) if data else decoder.close()):
                    turn.push("chunk", unwrap(json.loads(payload)))
            except Exception:  # never raise inside mitmproxy's stream machinery
                log.exception("relay tap")
            if data:
                return []  # nothing for the app yet (b"" would be an empty chunk: end of body in HTTP/1)
            turn.push("end")
            turn.state = "done"
            return fake_stop(ctx.options.gtp_placeholder, sse, wrapped)

        return tap

    # -- responses ---------------------------------------------------------------------------

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        state: FlowState | None = flow.metadata.get(META)
        if state is None or flow.response is None or flow.response.status_code != 200:
            return
        sse = "text/event-stream" in flow.response.headers.get("content-type", "")
        if state.relay is not None:
            if sse:
                flow.response.headers.pop("content-length", None)
                flow.response.stream = self._relay_tap(state, sse)
            return
        if sse:
            flow.response.stream = SSETap(state.capture)

    async def response(self, flow: http.HTTPFlow) -> None:
        state: FlowState | None = flow.metadata.pop(META, None)
        if state is None or flow.response is None:
            return
        if state.relay is not None:
            self._relay_response(flow, state, state.relay)
            return
        if flow.response.status_code != 200:
            return
        if not flow.response.stream:
            try:
                state.capture.feed_body(flow.response.get_content(strict=False) or b"")
            except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
                log.warning("could not read Gemini's answer on %s", flow.request.path)
        if state.capture.calls and state.session:
            await self.store.add_round(state.session, ToolRound(state.capture.calls))
            log.info("captured %d function call(s) for session %s", len(state.capture.calls), state.session)

    def _relay_response(self, flow: http.HTTPFlow, state: FlowState, turn: RelayTurn) -> None:
        assert flow.response is not None
        if flow.response.stream:  # an SSE answer: the tap already handed everything over
            return
        sse = flow.request.query.get("alt") == "sse"
        content = flow.response.get_content(strict=False) or b""
        if flow.response.status_code != 200:
            try:
                err = json.loads(content).get("error") or {}
            except (json.JSONDecodeError, AttributeError):
                err = {}
            err = err if isinstance(err, dict) and err else {"code": flow.response.status_code,
                                                              "message": content[:500].decode(errors="replace")}
            turn.push("error", (flow.response.status_code, err))
        else:
            try:
                data = json.loads(content)
                for chunk in data if isinstance(data, list) else [data]:
                    turn.push("chunk", unwrap(chunk))
            except json.JSONDecodeError:
                turn.push("error", (502, {"code": 502, "message": "unreadable answer from Gemini"}))
            turn.push("end")
        turn.state = "done"
        wrapped, stream_json = state.target.kind == "cloudcode", state.target.stream and not sse
        flow.response = http.Response.make(200, fake_stop(ctx.options.gtp_placeholder, sse, wrapped, stream_json),
                                           {"content-type": "text/event-stream" if sse else "application/json"})

    def error(self, flow: http.HTTPFlow) -> None:
        state: FlowState | None = flow.metadata.pop(META, None)
        if state is not None and state.relay is not None and state.relay.state != "done":
            state.relay.push("error", (502, {"code": 502, "status": "UNAVAILABLE",
                                             "message": f"the relayed request failed: {flow.error}"}))
            state.relay.state = "done"
