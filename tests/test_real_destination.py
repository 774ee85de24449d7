"""The addon decides by where a request really goes (issue 8 item 3, issue 58): the server name mitmproxy
verifies upstream, on mitmproxy's own test flows."""

from mitmproxy.proxy.mode_specs import ProxyMode
from mitmproxy.test import tflow

from proxy.intercept.flow_selection import destination

GL = "generativelanguage.googleapis.com"
CC = "daily-cloudcode-pa.googleapis.com"


def _flow(host: str, header: str | None, sni: str | None = None, server_sni: str | None = None):
    """A flow before its server connection: tflow's connections name "address" in TLS, which no real
    flow to `host` does (server_sni: what a mode set, e.g. reverse:https://NAME, or an eager connection)."""
    f = tflow.tflow()
    f.request.host = host
    if header is None:
        f.request.headers.pop("host", None)
    else:
        f.request.host_header = header
    f.client_conn.sni = sni
    f.server_conn.sni = server_sni
    return f


def test_host_header_naming_another_destination_is_not_ours() -> None:
    assert destination(_flow("not-google.example", GL)) is None  # CONNECT / absolute-form target differs
    assert destination(_flow("127.0.0.1", GL)) is None             # transparent, no server name
    assert destination(_flow("127.0.0.1", GL, sni="evil.example")) is None
    assert destination(_flow(GL, "bad host header!!")) is None


def test_real_destination_is_used() -> None:
    assert destination(_flow(GL, GL)) == GL
    assert destination(_flow(GL, f"{GL.upper()}:443")) == GL
    assert destination(_flow(GL, None)) == GL
    assert destination(_flow(GL, GL, sni=GL)) == GL
    assert destination(_flow("142.250.0.1", GL, sni=GL)) == GL    # transparent mode: the verified server name
    assert destination(_flow("10.253.0.1", None, sni=f"{CC}.")) == CC
    assert destination(_flow("142.250.0.1", None)) == "142.250.0.1"


def test_the_tls_server_name_decides_not_the_connect_host() -> None:
    """mitmproxy dials the CONNECT target's address but sends and verifies the client's SNI upstream (seen
    with a real mitmdump, lazy and eager: CONNECT localhost:PORT, ClientHello for GL, the server got SNI GL)."""
    # CONNECT to Google's name, TLS naming another: that other server's certificate answers, not Google.
    assert destination(_flow(GL, GL, sni="not-google.example")) is None
    assert destination(_flow(GL, "not-google.example", sni="not-google.example")) == "not-google.example"
    assert destination(_flow(GL, None, sni="not-google.example")) == "not-google.example"
    # CONNECT to any name, TLS naming Google: Google's certificate answers.
    assert destination(_flow("not-google.example", GL, sni=GL)) == GL
    assert destination(_flow("localhost", None, sni=GL)) == GL


def test_a_mode_naming_the_server_wins_over_the_client() -> None:
    """reverse:https://NAME connects to NAME whatever the client's TLS named (the proxy itself)."""
    f = _flow(GL, GL, sni="localhost", server_sni=GL)
    f.client_conn.proxy_mode = ProxyMode.parse(f"reverse:https://{GL}")
    assert destination(f) == GL
    assert destination(_flow(GL, GL, sni=GL, server_sni="not-google.example")) is None
