"""`gtp_route`: send every upstream connection to one host:port (a local Gemini, for testing)."""

from mitmproxy import ctx
from mitmproxy.proxy import server_hooks


class Route:
    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        route = ctx.options.gtp_route
        if not route or data.server.address is None:
            return
        host, _, port = route.rpartition(":")
        data.server.sni = data.server.sni or data.server.address[0]
        data.server.address = (host, int(port))
