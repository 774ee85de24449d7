"""Plain mitmdump's floor for scripts/bench.sh: nothing but sending Google's hosts to the mock
(`--set bench_route=HOST:PORT`), by the very functions the real addon's `gtp_route` uses
(proxy/intercept/routing.py, which imports nothing of the project but mitmproxy)."""

from mitmproxy import ctx, http
from mitmproxy.addonmanager import Loader
from mitmproxy.proxy import server_hooks

from proxy.intercept.routing import Address, parse_route, route_connection, route_request


class BenchRoute:
    def __init__(self) -> None:
        self.route: Address | None = None

    def load(self, loader: Loader) -> None:
        loader.add_option("bench_route", str, "", "host:port every upstream connection goes to")

    def configure(self, updated: set[str]) -> None:
        if "bench_route" in updated:
            self.route = parse_route(ctx.options.bench_route)

    def request(self, flow: http.HTTPFlow) -> None:
        if self.route is not None:
            route_request(flow, self.route)

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        if self.route is not None:
            route_connection(data, self.route)


addons = [BenchRoute()]
