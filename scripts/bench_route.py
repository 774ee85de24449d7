"""Plain mitmdump's floor for scripts/bench.sh: nothing but sending Google's hosts to the mock
(`--set bench_route=HOST:PORT`), the one thing the real addon's `gtp_route` also does."""

from mitmproxy import ctx
from mitmproxy.addonmanager import Loader
from mitmproxy.proxy import server_hooks


class BenchRoute:
    def load(self, loader: Loader) -> None:
        loader.add_option("bench_route", str, "", "host:port every upstream connection goes to")

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        if not ctx.options.bench_route or data.server.address is None:
            return
        host, _, port = ctx.options.bench_route.rpartition(":")
        data.server.sni = data.server.sni or data.server.address[0]
        data.server.address = (host, int(port))


addons = [BenchRoute()]
