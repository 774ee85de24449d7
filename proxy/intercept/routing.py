"""`gtp_route`: send every upstream connection to one host:port (a local Gemini, for testing).

Each request is routed in the `request` hook, after every other addon saw it as the app sent it
(this addon runs last), so the connection mitmproxy then looks up already carries the routed
address and the next request on the app's connection reuses it. Rerouting only the server
connection made mitmproxy miss its own connection on every request (it looks them up by address),
open a new one each time, and stall after a few on one client connection. `server_connect` still
routes the connection `connection_strategy=eager` opens before any request, and keeps TLS naming
the app's host. The two functions also serve the benchmark's plain-mitmdump router.
"""

from mitmproxy import ctx, http
from mitmproxy.proxy import server_hooks

Address = tuple[str, int]


def parse_route(text: str | None) -> Address | None:
    """`host:port` (checked by the options addon first), or None when unset."""
    if not text:
        return None
    host, _, port = text.rpartition(":")
    return host, int(port)


def route_request(flow: http.HTTPFlow, route: Address) -> None:
    # The raw fields: the Host header keeps naming the app's host.
    flow.request.data.host, flow.request.data.port = route


def route_connection(data: server_hooks.ServerConnectionHookData, route: Address) -> None:
    if data.server.address is None:
        return
    original = data.server.address[0]
    if data.server.sni is None or data.server.sni == route[0]:
        data.server.sni = original if original != route[0] else data.client.sni
    data.server.address = route


class Route:
    def __init__(self) -> None:
        self.route: Address | None = None

    def configure(self, updated: set[str]) -> None:
        if "gtp_route" in updated:
            self.route = parse_route(ctx.options.gtp_route)

    def request(self, flow: http.HTTPFlow) -> None:
        if self.route is None or flow.response is not None:
            return
        route_request(flow, self.route)

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        if self.route is not None:
            route_connection(data, self.route)
