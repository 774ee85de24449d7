"""`Frontend`: run the aiohttp front-end inside mitmdump, on the same loop and session store."""

import logging
from typing import Any

from aiohttp import web
from mitmproxy import ctx

from proxy import gc_tuning, log_limits, malloc_tuning
from proxy.front.app import make_app
from proxy.intercept.options import Options
from proxy.intercept.relay import RelayBroker, RelayUpstream
from proxy.mock.server import start_mock
from proxy.server.site import start_site
from proxy.store.base import SessionStore
from proxy.upstream.base import Upstream
from proxy.upstream.gemini.client import DEFAULT_BASE_URL, GeminiUpstream
from proxy.upstream.gemini.vertex import VertexUpstream
from proxy.upstream.http import RetryPolicy
from proxy.upstream.interactions.client import InteractionsUpstream
from proxy.upstream.routes import RoutedUpstream, gemini_routes

log = logging.getLogger(__name__)



class Frontend:
    def __init__(self, store: SessionStore, broker: RelayBroker, options: Options) -> None:
        self.store, self.broker, self.options = store, broker, options
        self._runners: list[web.AppRunner] = []
        self.url: str | None = None

    async def running(self) -> None:
        log_limits.install()  # mitmproxy's handlers too: a flood of refused clients stays a trickle in its log
        malloc_tuning.tune()
        # Not gc_tuning.tune(): mitmproxy leaves about 500 objects in reference cycles per flow, which
        # only the collector frees; collected every 50,000 allocations they were cold by then, and the
        # collector's time per request doubled (0.16 -> 0.35 ms). Freezing what is loaded still spares
        # every full collection the modules.
        gc_tuning.freeze_startup()
        base = ctx.options.gtp_upstream
        if base == "mock":
            runner, base, _ = await start_mock()
            self._runners.append(runner)
            host, _, port = base.removeprefix("http://").rpartition(":")
            self.options.mock_address = (host, int(port))  # intercepted traffic goes there too (routing.py)
            log.info("built-in mock Gemini at %s answers the intercepted Gemini hosts too (offline demo)", base)
        if ctx.options.gtp_frontend_port < 0:
            return
        upstream: Upstream
        if base == "relay":
            upstream = RelayUpstream(self.broker, ctx.options.gtp_relay, ctx.options.gtp_relay_timeout)
        else:
            o = ctx.options
            timeouts: dict[str, Any] = {"connect_timeout": o.gtp_connect_timeout, "read_timeout": o.gtp_read_timeout,
                                        "total_timeout": o.gtp_total_timeout, "retry": RetryPolicy(o.gtp_max_retries),
                                        **({"keys": list(o.gtp_gemini_key)} if o.gtp_gemini_key else {})}
            if self.options.vertex:
                timeouts.pop("keys", None)
                upstream = VertexUpstream(None if base == DEFAULT_BASE_URL else base, self.options.vertex,
                                          o.gtp_vertex_location, **timeouts)
            else:
                upstream = GeminiUpstream(base, **timeouts)
            apis = self.options.upstream_api
            if any(api == "interactions" for _, api in apis):
                upstream = RoutedUpstream(upstream, gemini_routes(upstream, InteractionsUpstream(base, **timeouts),
                                                                  apis))
        limits = self.options.limits()
        app = make_app(self.store, upstream, aliases=self.options.aliases, schema_modes=self.options.schema_modes,
                       fill_missing=ctx.options.gtp_fill_missing, forced_choice=ctx.options.gtp_forced_choice,
                       keys=self.options.keys, carrier=self.options.carrier, limits=limits, rules=self.options.rules,
                       recorder=self.options.recorder.recorder, guard=self.options.guard,
                       passthrough_collections=self.options.passthrough_collections)
        try:
            runner, site = await start_site(app, ctx.options.gtp_frontend_host, ctx.options.gtp_frontend_port, limits)
        except OSError as e:
            # An error logged during start-up makes mitmdump exit (ErrorCheck): fail fast on a busy port.
            log.error("front-end cannot listen on %s:%s: %s", ctx.options.gtp_frontend_host,
                      ctx.options.gtp_frontend_port, e.strerror or e)
            return
        self._runners.append(runner)
        port = site.bound_port
        self.url = f"http://{ctx.options.gtp_frontend_host}:{port}"
        log.info("gemini-tool-proxy front-end listening at %s (upstream %s)", self.url,
                 f"Vertex AI at {upstream.base_url}" if isinstance(upstream, VertexUpstream) else base)

    async def done(self) -> None:
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
