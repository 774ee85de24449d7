"""The addon decides by where a request really goes (issue 8 item 3), on mitmproxy's own test flows."""

from mitmproxy.test import tflow

from proxy.intercept.flow_selection import destination

GL = "generativelanguage.googleapis.com"


def _flow(host: str, header: str | None, sni: str | None = None):
    f = tflow.tflow()
    f.request.host = host
    if header is None:
        f.request.headers.pop("host", None)
    else:
        f.request.host_header = header
    f.client_conn.sni = sni
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
    assert destination(_flow("142.250.0.1", GL, sni=GL)) == GL    # transparent mode: the verified server name
    assert destination(_flow("142.250.0.1", None)) == "142.250.0.1"
