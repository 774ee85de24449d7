"""Plain mitmdump's floor for scripts/bench.sh: nothing but sending Google's hosts to the mock
(`--set bench_route=HOST:PORT`), done the way the real addon's `gtp_route` does it (routing.py):
per request, so connections to the mock are reused, and on the connection opened before any."""

from mitmproxy import ctx, http
from mitmproxy.addonmanager import Loader
from mitmproxy.proxy import server_hooks


def _route() -> tuple[str, int] | None:
    if not ctx.options.bench_route:
        return None
    host, _, port = ctx.options.bench_route.rpartition(":")
    return host, int(port)


class BenchRoute:
    def load(self, loader: Loader) -> None:
        loader.add_option("bench_route", str, "", "host:port every upstream connection goes to")

    def request(self, flow: http.HTTPFlow) -> None:
        route = _route()
        if route is not None:
            flow.request.data.host, flow.request.data.port = route

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        route = _route()
        if route is None or data.server.address is None:
            return
        original = data.server.address[0]
        if data.server.sni is None or data.server.sni == route[0]:
            data.server.sni = original if original != route[0] else data.client.sni
        data.server.address = route


addons = [BenchRoute()]
