"""Where intercepted traffic goes instead of Google: `gtp_route` sends every upstream connection to
one host:port (a local Gemini, for testing); `gtp_upstream=mock` (the offline demo, `gemini-tool-proxy
mitm --upstream mock`) sends the Gemini hosts' traffic — Developer API, Code Assist and Antigravity,
their account and quota calls, and Google's OAuth token and userinfo calls the apps make around them —
to the built-in mock over plain HTTP on loopback, so a newcomer sees the whole loop without a Google
account (everything else still goes where the app sent it; `gtp_route`, when set, wins). The mock
runs only with the lazy connection strategy (options.py sets it): no connection is made to Google
before the request is routed.

Each request is routed in the `request` hook, after every other addon saw it as the app sent it
(this addon runs last), so the connection mitmproxy then looks up already carries the routed
address and the next request on the app's connection reuses it. Rerouting only the server
connection made mitmproxy miss its own connection on every request (it looks them up by address),
open a new one each time, and stall after a few on one client connection. `server_connect` still
routes the connection `connection_strategy=eager` opens before any request, and keeps TLS naming
the app's host. The two functions also serve the benchmark's plain-mitmdump router.
"""

from typing import TYPE_CHECKING

from mitmproxy import ctx, http
from mitmproxy.proxy import server_hooks

from proxy.intercept.flow_selection import destination
from proxy.pattern_rules import matches

if TYPE_CHECKING:
    from proxy.intercept.options import Options

Address = tuple[str, int]
# Google's OAuth hosts, which Gemini CLI and the Antigravity clients call around their Gemini calls
# (a token refresh, the signed-in user): answered by the mock too in the offline demo.
ACCOUNT_HOSTS = ("oauth2.googleapis.com", "www.googleapis.com")


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


def route_to_mock(flow: http.HTTPFlow, mock: Address) -> None:
    """The request to the mock, in plain HTTP (its Host header still names Google's host)."""
    flow.request.scheme = "http"
    route_request(flow, mock)


class Route:
    def __init__(self, options: "Options | None" = None) -> None:
        self.route: Address | None = None
        self.options = options

    def configure(self, updated: set[str]) -> None:
        if "gtp_route" in updated:
            self.route = parse_route(ctx.options.gtp_route)

    def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:
            return
        if self.route is not None:  # an explicit route wins (the tests' TLS mock under Google's names)
            route_request(flow, self.route)
            return
        mock = self.options.mock_address if self.options is not None else None
        if mock is not None:
            host = destination(flow)
            if host is not None and (matches(host, self.options.flow.intercept_hosts) or host in ACCOUNT_HOSTS):
                route_to_mock(flow, mock)

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        if self.route is not None:
            route_connection(data, self.route)

