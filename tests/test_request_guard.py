"""No web page drives a loopback proxy (server/guard.py), as curl would show it: a body that is not
declared JSON gets a 415 in the route's protocol, a Host that is not this machine's a 421 (DNS
rebinding), a foreign Origin or Sec-Fetch-Site a 403, all before Gemini is called; `--allowed-host`,
`--allowed-origin` and the proxy's own origin are let through. tests/test_cross_origin_browser.py
does the same from a real Chromium page."""

import asyncio
import http.client
import json
import subprocess
import sys
import urllib.parse

import anthropic
import openai
import pytest

from proxy.server.guard import RequestGuard, is_json_type, split_host
from tests.harness import Stack
from tests.mitm_harness import MitmStack
from tests.servers import mock_gemini, proxy_instance
from tests.test_mitm_e2e import GL, gemini, user

KEY = "guard-client-key-0123456789"
ASK = {"model": "gemini-2.5-flash", "input": "hello"}
# Each protocol's JSON route and a body it would accept (our reading of each wire: the SDK tests
# elsewhere hold these shapes).
ROUTES = {
    "responses": ("/v1/responses", ASK),
    "chat": ("/v1/chat/completions", {"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "hi"}]}),
    "anthropic": ("/v1/messages", {"model": "gemini-2.5-flash", "max_tokens": 50,
                                   "messages": [{"role": "user", "content": "hi"}]}),
    "gemini": ("/v1beta/models/gemini-2.5-flash:generateContent", {"contents": [{"role": "user",
                                                                                "parts": [{"text": "hi"}]}]}),
    "interactions": ("/v1beta/interactions", {"model": "gemini-2.5-flash", "input": "hi"}),
    "sessions": ("/v1/sessions/s1/tool_outputs", {"outputs": [{"call_id": "c1", "output": "pwned"}]}),
}


@pytest.fixture(scope="module")
def stack():
    s = Stack()
    yield s
    s.close()


def send(url: str, method: str, path: str, body: bytes | None = None, headers: dict | None = None
         ) -> tuple[int, dict, bytes]:
    """A raw request, with exactly the headers given (a Host among them, as a rebinding page's)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=15)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.headers), r.read()
    finally:
        conn.close()


def in_protocol(name: str, status: int, body: bytes) -> str:
    """The error's message, read as that protocol's clients read it (the shape is the assertion)."""
    err = json.loads(body)
    if name == "anthropic":
        assert err["type"] == "error" and err["error"]["type"] in ("invalid_request_error", "permission_error")
        return err["error"]["message"]
    if name == "gemini":
        assert err["error"]["code"] == status and err["error"]["status"] in ("INVALID_ARGUMENT", "PERMISSION_DENIED")
        return err["error"]["message"]
    if name == "interactions":
        assert err["error"]["code"] in ("INVALID_ARGUMENT", "PERMISSION_DENIED")  # google-genai's string code
        return err["error"]["message"]
    assert set(err["error"]) == {"message", "type", "param", "code"}  # OpenAI's shape (sessions too)
    return err["error"]["message"]


# -- pure logic --------------------------------------------------------------------------------------

def test_json_types_and_host_names():
    assert all(is_json_type(t) for t in ("application/json", "application/json; charset=utf-8", "Application/JSON",
                                         "application/merge-patch+json", "application/vnd.api+json;charset=UTF-8"))
    assert not any(is_json_type(t) for t in ("", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                                             "multipart/form-data; boundary=x", "text/json", "application/jsonx"))
    assert [split_host(h) for h in ("127.0.0.1:8741", "[::1]:8741", "LocalHost.", "a.example", "[::1]")] == [
        "127.0.0.1", "::1", "localhost", "a.example", "::1"]


def test_the_default_on_each_kind_of_bind():
    loop = RequestGuard.configured("127.0.0.1")
    assert all(loop.host_allowed(h) for h in ("localhost:1", "127.0.0.1:8741", "127.3.2.1", "[::1]:9", "app.localhost",
                                              None))
    assert not any(loop.host_allowed(h) for h in ("attacker.example", "127.0.0.1.nip.io", "10.0.0.1:8741", "[::2]",
                                                  "localhost.attacker.example"))
    assert RequestGuard.configured("::1", ["proxy.example"]).host_allowed("proxy.example:443")
    # Beyond loopback the operator chose the network: any Host, until they name some.
    assert RequestGuard.configured("0.0.0.0").host_allowed("anything.example")
    named = RequestGuard.configured("192.168.1.5", ["*.corp.example"])
    assert named.host_allowed("gtp.corp.example") and named.host_allowed("192.168.1.5:8741")
    assert not named.host_allowed("attacker.example")
    assert RequestGuard.configured("127.0.0.1", ["*"]).host_allowed("attacker.example")
    with pytest.raises(ValueError, match="scheme://host"):
        RequestGuard.configured("127.0.0.1", origins=["app.example/path"])


# -- Content-Type ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ROUTES)
@pytest.mark.parametrize("kind", ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded", None])
def test_a_body_not_declared_json_is_refused_in_the_routes_protocol(stack, name, kind):
    """What a page may send with no preflight (fetch no-cors: text/plain, a form, a Blob without a
    type), and what `curl -d` sends: 415, and Gemini is not called."""
    path, body = ROUTES[name]
    before = stack.accepted
    status, _, answer = send(stack.url, "POST", path, json.dumps(body).encode(),
                             {"content-type": kind} if kind else {})
    assert status == 415, answer
    assert "Content-Type: application/json" in in_protocol(name, 415, answer)
    assert stack.accepted == before


@pytest.mark.parametrize("kind", ["application/json", "application/json; charset=utf-8", "application/vnd.x+json"])
def test_json_in_any_spelling_is_served(stack, kind):
    status, _, answer = send(stack.url, "POST", "/v1/responses", json.dumps(ASK).encode(), {"content-type": kind})
    assert status == 200, answer


def test_the_sdks_read_the_415(stack):
    """openai and anthropic, told to send text/plain, raise their status error with our message."""
    with pytest.raises(openai.APIStatusError) as e:
        openai.OpenAI(base_url=stack.url + "/v1", api_key="k", max_retries=0).responses.create(
            **ASK, extra_headers={"content-type": "text/plain"})
    assert e.value.status_code == 415 and e.value.body["code"] == "unsupported_media_type"
    with pytest.raises(anthropic.APIStatusError) as e:
        anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0).messages.create(
            model="gemini-2.5-flash", max_tokens=50, messages=[{"role": "user", "content": "hi"}],
            extra_headers={"content-type": "text/plain"})
    assert e.value.status_code == 415 and "application/json" in e.value.message


def test_what_is_not_a_json_body_keeps_working(stack):
    """A POST with no body (a cancel) needs no type; the resumable upload's raw bytes are not JSON."""
    status, _, answer = send(stack.url, "POST", "/v1/responses/resp_nope/cancel")
    assert status == 404, answer  # past the guard: no such response
    status, _, answer = send(stack.url, "POST", "/upload/v1beta/files?upload_id=nope", b"\x89PNG raw",
                             {"content-type": "application/octet-stream"})
    assert status != 415, answer


# -- Host --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["responses", "anthropic", "gemini"])
def test_a_rebinding_host_reaches_no_handler(stack, name):
    path, body = ROUTES[name]
    before = stack.accepted
    status, _, answer = send(stack.url, "POST", path, json.dumps(body).encode(),
                             {"host": "attacker.example:8741", "content-type": "application/json"})
    assert status == 421 and "attacker.example" in in_protocol(name, 421, answer)
    assert stack.accepted == before


def test_a_rebinding_host_reads_nothing(stack):
    send(stack.url, "POST", "/v1/responses", json.dumps({**ASK, "input": "secret prompt"}).encode(),
         {"content-type": "application/json"})
    rows = json.loads(send(stack.url, "GET", "/inspect/api/exchanges", headers={"host": "localhost"})[2])
    one = f"/inspect/api/exchanges/{rows['exchanges'][0]['id']}"
    assert b"secret prompt" in send(stack.url, "GET", one, headers={"host": "localhost"})[2]  # by this machine's name
    for path in (one, "/inspect/api/exchanges", "/inspect", "/v1/sessions/s1", "/metrics", "/v1/models"):
        status, _, answer = send(stack.url, "GET", path, headers={"host": "attacker.example"})
        assert status == 421 and b"secret prompt" not in answer, (path, answer)


def test_allowed_hosts_are_served():
    s = Stack(guard=RequestGuard.configured("127.0.0.1", ["gtp.example"]))
    try:
        for host in ("gtp.example", "gtp.example:443", "[::1]:1"):
            assert send(s.url, "GET", "/inspect/api/exchanges", headers={"host": host})[0] == 200, host
        assert send(s.url, "GET", "/inspect/api/exchanges", headers={"host": "other.example"})[0] == 421
    finally:
        s.close()


# -- Origin ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("headers", [{"origin": "http://attacker.example"}, {"origin": "http://127.0.0.1:1"},
                                     {"origin": "null"}, {"sec-fetch-site": "cross-site"},
                                     {"sec-fetch-site": "same-site"}])
def test_a_foreign_page_is_refused(stack, headers):
    before = stack.accepted
    for name in ("responses", "sessions", "gemini"):
        path, body = ROUTES[name]
        status, _, answer = send(stack.url, "POST", path, json.dumps(body).encode(),
                                 {"content-type": "application/json", **headers})
        assert status == 403 and "refused" in in_protocol(name, 403, answer)
    status, _, answer = send(stack.url, "GET", "/inspect/api/exchanges", headers=headers)
    assert status == 403, answer
    assert stack.accepted == before


def test_the_proxys_own_page_and_a_link_to_it_are_served(stack):
    own = stack.url.removeprefix("http://")
    status, _, _ = send(stack.url, "POST", "/v1/responses", json.dumps(ASK).encode(),
                        {"content-type": "application/json", "origin": stack.url, "sec-fetch-site": "same-origin"})
    assert status == 200
    status, _, _ = send(stack.url, "GET", "/inspect/api/exchanges", headers={"host": own, "origin": stack.url})
    assert status == 200
    # A link on another site opens the page in a tab (the user reads it, not the site); its API stays shut.
    nav = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document"}
    assert send(stack.url, "GET", "/inspect", headers=nav)[0] == 200
    assert send(stack.url, "GET", "/inspect/api/exchanges", headers=nav)[0] == 403


def test_allowed_origins_are_served():
    s = Stack(guard=RequestGuard.configured("127.0.0.1", origins=["https://app.example/"]))
    try:
        status, _, _ = send(s.url, "POST", "/v1/responses", json.dumps(ASK).encode(),
                            {"content-type": "application/json", "origin": "https://APP.example",
                             "sec-fetch-site": "cross-site"})
        assert status == 200
        assert send(s.url, "GET", "/v1/models", headers={"origin": "https://app.example:8443"})[0] == 403
    finally:
        s.close()


# -- through `serve`: the options, and the inspector's sign-in ----------------------------------------

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("guard")
    mock, murl = mock_gemini(tmp)
    proc, url = proxy_instance(tmp, "proxy", murl, "--api-key", KEY, "--allowed-host", "gtp.example",
                               "--allowed-origin", "https://app.example", "--log-format", "json")
    yield tmp, murl, proc, url
    proc.stop()
    mock.stop()


def test_serve_takes_allowed_host_and_origin(served):
    _, _, _, url = served
    auth = {"authorization": f"Bearer {KEY}"}
    assert send(url, "GET", "/v1/models", headers={**auth, "host": "gtp.example"})[0] == 200
    assert send(url, "GET", "/v1/models", headers={**auth, "host": "attacker.example"})[0] == 421
    assert send(url, "GET", "/v1/models", headers={**auth, "origin": "https://app.example"})[0] == 200
    assert send(url, "GET", "/v1/models", headers={**auth, "origin": "https://attacker.example"})[0] == 403


def test_serve_refuses_a_bad_allowed_origin(tmp_path):
    run = subprocess.run([sys.executable, "-m", "proxy", "serve", "--port", "0", "--upstream", "mock",
                          "--allowed-origin", "app.example"], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "--allowed-origin" in run.stderr and "scheme://host" in run.stderr


def test_a_null_origin_is_the_proxys_own_only_when_the_browser_says_so(stack):
    """A form on a no-referrer page posts with `Origin: null`; the browser's Sec-Fetch-Site (which a
    page cannot set) tells the proxy's own page from a sandboxed frame or a file:// page."""
    body = json.dumps(ASK).encode()
    own = {"content-type": "application/json", "origin": "null", "sec-fetch-site": "same-origin"}
    assert send(stack.url, "POST", "/v1/responses", body, own)[0] == 200
    for site in ("cross-site", "same-site", None):
        headers = {**own, "sec-fetch-site": site} if site else {"content-type": "application/json", "origin": "null"}
        assert send(stack.url, "POST", "/v1/responses", body, headers)[0] == 403, site


def test_the_addons_front_end_runs_the_same_checks(tmp_path):
    """mitmdump's front-end (intercept/frontend.py) with gtp_allowed_hosts / gtp_allowed_origins: the
    same refusals; the traffic mitmdump proxies is not the front-end's and passes whatever its headers."""
    m = MitmStack(tmp_path, "--set", "gtp_allowed_hosts=gtp.example", "--set",
                  "gtp_allowed_origins=https://app.example", "--set", "gtp_gemini_key=test-key")
    try:
        url, body = m.frontend_url, json.dumps(ASK).encode()
        kind = {"content-type": "application/json"}
        assert send(url, "GET", "/inspect/api/exchanges", headers={"host": "attacker.example"})[0] == 421
        assert send(url, "GET", "/inspect/api/exchanges", headers={"host": "gtp.example"})[0] == 200
        assert send(url, "POST", "/v1/responses", body, {"content-type": "text/plain"})[0] == 415
        assert send(url, "POST", "/v1/responses", body, {**kind, "origin": "http://attacker.example"})[0] == 403
        ok = send(url, "POST", "/v1/responses", body, {**kind, "origin": "https://app.example"})
        assert ok[0] == 200, ok
        before = m.accepted
        status, answer, _ = asyncio.run(gemini(m, GL + "/v1beta/models/gemini-2.5-flash:generateContent",
                                               {"contents": [user("hi")]},
                                               {"origin": "http://attacker.example", "sec-fetch-site": "cross-site"}))
        assert status == 200 and m.accepted == before + 1, answer
    finally:
        m.close()
