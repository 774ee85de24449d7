"""`gtp_route`: send every upstream connection to one host:port (a local Gemini, for testing).

Each request is routed in the `request` hook, after every other addon saw it as the app sent it
(this addon runs last), so the connection mitmproxy then looks up already carries the routed
address and the next request on the app's connection reuses it. Rerouting only the server
connection made mitmproxy miss its own connection on every request (it looks them up by address),
open a new one each time, and stall after a few on one client connection. `server_connect` still
routes the connection `connection_strategy=eager` opens before any request, and keeps TLS naming
the app's host.
"""

from mitmproxy import ctx, http
from mitmproxy.proxy import server_hooks


def _route() -> tuple[str, int] | None:
    route = ctx.options.gtp_route
    if not route:
        return None
    host, _, port = route.rpartition(":")
    return host, int(port)


class Route:
    def request(self, flow: http.HTTPFlow) -> None:
        route = _route()
        if route is None or flow.response is not None:
            return
        # The raw fields: the Host header keeps naming the app's host.
        flow.request.data.host, flow.request.data.port = route

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        route = _route()
        if route is None or data.server.address is None:
            return
        original = data.server.address[0]
        if data.server.sni is None or data.server.sni == route[0]:
            data.server.sni = original if original != route[0] else data.client.sni
        data.server.address = route
