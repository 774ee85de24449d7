"""Issue 8 item 2: front-end authentication, per-client sessions, and no open binds by accident."""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from proxy.anthropic.errors import is_anthropic_path
from proxy.gemini.errors import is_gemini_path
from proxy.interactions.errors import INTERACTIONS_PATH
from proxy.server.auth import ClientKeys, is_loopback, load_keys, refuse_open_bind, scope_of
from tests.harness import Stack
from tests.mitm_harness import MITMDUMP, ROOT

ALICE, BOB = "alice-key-0123456789abcdef", "bob-key-0123456789abcdef00"
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather for a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture(scope="module")
def locked() -> Stack:
    s = Stack(keys=[ALICE, BOB])
    yield s
    s.close()


def _call(url: str, method: str, path: str, body: object | None = None, headers: dict | None = None
          ) -> tuple[int, dict, dict]:
    req = urllib.request.Request(url + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, _parsed(r.read(), r.headers), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, _parsed(e.read(), e.headers), dict(e.headers)


def _parsed(raw: bytes, headers) -> dict:
    """JSON answers parsed; the inspector's sign-in page (HTML, for a browser) and its style sheet as
    {"html": text}."""
    if headers.get("content-type", "").startswith(("text/html", "text/css")):
        return {"html": raw.decode()}
    return json.loads(raw or b"{}")


def _routes(stack: Stack) -> list[tuple[str, str]]:
    """Every route the app serves, with its placeholders filled: a new route cannot skip auth unnoticed."""
    out = []
    for route in stack.app.router.routes():
        info = route.resource.get_info() if route.resource else {}
        path = info.get("path") or info.get("formatter", "")
        path = (path.replace("{response_id}", "resp_x").replace("{session}", "s1")
                .replace("{version}", "v1beta").replace("{target}", "gemini-2.5-flash:generateContent")
                .replace("{tail}", "files/x").replace("{name}", "inspect.css"))
        if route.method == "*":  # a catch-all: every method must be refused
            out += [(m, path) for m in ("GET", "POST", "DELETE")]
        elif route.method != "HEAD":
            out.append((route.method, path))
    return out


def test_every_route_but_the_health_checks_needs_a_key(locked: Stack) -> None:
    routes = _routes(locked)
    assert len(routes) >= 10
    before = len(locked.seen)
    for method, path in routes:
        body = None if method in ("GET", "DELETE") else {}
        for headers in ({}, {"authorization": "Bearer wrong-key-0123456789abc"}, {"x-goog-api-key": "nope"},
                        {"x-api-key": "wrong-key-0123456789abc"}):
            status, answer, got = _call(locked.url, method, path, body, headers)
            if path in ("/healthz", "/readyz", "/inspect/static/inspect.css", "/favicon.ico"):  # the sign-in page's
                # style and the browser's favicon request (an empty 204): no data
                assert status == (204 if path == "/favicon.ico" else 200)
                continue
            assert status == 401, (method, path, headers, answer)
            if "html" in answer:  # /inspect without a key: a browser's sign-in form, never the journal
                assert path == "/inspect"
                assert "<form" in answer["html"] and "exchanges" not in answer["html"]
            elif INTERACTIONS_PATH.match(path):  # the Interactions API's own error shape
                assert answer["error"]["code"] == "UNAUTHENTICATED"
            elif is_anthropic_path(path):  # Anthropic's
                assert answer == {"type": "error", "error": {"type": "authentication_error",
                                                             "message": answer["error"]["message"]}}
            elif is_gemini_path(path):
                assert answer["error"]["status"] == "UNAUTHENTICATED" and answer["error"]["code"] == 401
            else:
                assert answer["error"]["code"] == "invalid_api_key"
    status, _, _ = _call(locked.url, "GET", "/v1/models?key=" + "x" * 20)
    assert status == 401
    assert len(locked.seen) == before  # nothing reached Gemini


def test_sdks_see_their_own_auth_errors(locked: Stack) -> None:
    c = openai.OpenAI(base_url=locked.url + "/v1", api_key="wrong-key-0123456789abc", _strict_response_validation=True)
    with pytest.raises(openai.AuthenticationError):
        c.responses.create(model="gemini-2.5-flash", input="hi")
    g = genai.Client(api_key="wrong", http_options=types.HttpOptions(base_url=locked.url))
    with pytest.raises(genai_errors.ClientError) as e:
        g.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert e.value.code == 401 and e.value.status == "UNAUTHENTICATED"


def test_key_in_each_usual_place_admits_and_server_key_goes_upstream(locked: Stack) -> None:
    c = openai.OpenAI(base_url=locked.url + "/v1", api_key=ALICE, _strict_response_validation=True)
    assert c.responses.create(model="gemini-2.5-flash", input="hi").status == "completed"
    assert locked.received[-1]["key"] == "test-key"  # the server's key, never the client's
    g = genai.Client(api_key=ALICE, http_options=types.HttpOptions(base_url=locked.url))
    assert g.models.generate_content(model="gemini-2.5-flash", contents="hi").text
    assert locked.received[-1]["key"] == "test-key"
    status, answer, _ = _call(locked.url, "POST", f"/v1beta/models/gemini-2.5-flash:generateContent?key={BOB}",
                              {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    assert status == 200 and locked.received[-1]["key"] == "test-key"
    assert BOB not in locked.received[-1]["path"]


def test_clients_never_share_sessions_or_responses(locked: Stack) -> None:
    alice = openai.OpenAI(base_url=locked.url + "/v1", api_key=ALICE, _strict_response_validation=True)
    bob = openai.OpenAI(base_url=locked.url + "/v1", api_key=BOB, _strict_response_validation=True)
    first = alice.responses.create(model="gemini-2.5-flash", input="remember the word teal")  # default session
    with pytest.raises(openai.NotFoundError):
        bob.responses.retrieve(first.id)
    with pytest.raises(openai.BadRequestError):
        bob.responses.create(model="gemini-2.5-flash", input="what word?", previous_response_id=first.id)
    assert alice.responses.retrieve(first.id).id == first.id
    assert alice.responses.create(model="gemini-2.5-flash", input="what word?",
                                  previous_response_id=first.id).status == "completed"

    a, b = {"authorization": f"Bearer {ALICE}"}, {"x-goog-api-key": BOB}
    status, put, _ = _call(locked.url, "PUT", "/v1/sessions/work/tools", {"tools": [WEATHER]}, a)
    assert status == 200 and put["session"] == "work" and put["intercept_session"] == f"{scope_of(ALICE)}:work"
    assert _call(locked.url, "GET", "/v1/sessions/work", None, b)[0] == 404
    assert _call(locked.url, "DELETE", "/v1/sessions/work", None, b)[0] == 200
    status, got, _ = _call(locked.url, "GET", "/v1/sessions/work", None, a)
    assert status == 200 and got["functionDeclarations"][0]["name"] == "get_weather"  # Bob's delete hit his own


def test_session_names_keep_to_the_grammar(locked: Stack) -> None:
    status, answer, _ = _call(locked.url, "POST", "/v1/responses", {"model": "gemini-2.5-flash", "input": "hi"},
                              {"authorization": f"Bearer {ALICE}", "x-gtp-session": "a b"})
    assert status == 400 and answer["error"]["param"] == "x-gtp-session"


def test_key_sources_and_checks(tmp_path) -> None:
    f = tmp_path / "keys"
    f.write_text("# clients\n" + ALICE + "\n\n")
    keys = load_keys(["x" * 16], str(f), env={"GTP_API_KEYS": f"{BOB}, {'y' * 16}"})
    assert len(keys) == 4 and keys.scope(ALICE) == scope_of(ALICE) and keys.scope("z" * 16) is None
    with pytest.raises(ValueError, match="at least 16"):
        ClientKeys(["short"])
    with pytest.raises(ValueError, match="cannot read"):
        load_keys([], str(tmp_path / "missing"), env={})
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("example.com")
    assert refuse_open_bind("0.0.0.0", ClientKeys(()), False, "--x")
    assert refuse_open_bind("0.0.0.0", keys, False, "--x") is None
    assert refuse_open_bind("0.0.0.0", ClientKeys(()), True, "--x") is None


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "proxy", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "GTP_API_KEYS": "", **(env or {})})


def test_serve_refuses_open_bind_without_keys() -> None:
    proc = _cli("serve", "--host", "0.0.0.0", "--port", "0")
    assert proc.returncode != 0 and "refusing to listen on 0.0.0.0 without authentication" in proc.stderr
    proc = _cli("serve", "--port", "0", "--api-key", "short")
    assert proc.returncode != 0 and "at least 16 characters" in proc.stderr


def test_plain_mitmdump_refuses_every_interface(tmp_path) -> None:
    """Asked for every interface without proxy authentication, it refuses. (Left unset, mitmdump's
    every-interface default becomes 127.0.0.1: tests/test_rough_edges.py.)"""
    base = [str(MITMDUMP), "-s", str(ROOT / "addons" / "gemini_tools.py"), "--listen-port", "0",
            "--set", f"confdir={tmp_path}", "--set", "gtp_frontend_port=-1"]
    proc = subprocess.run([*base, "--listen-host", "0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "refusing to intercept on 0.0.0.0" in proc.stdout + proc.stderr
    proc = subprocess.run([*base[:-2], "--listen-host", "127.0.0.1", "--set", "gtp_frontend_host=0.0.0.0",
                           "--set", "gtp_frontend_port=0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "refusing to listen on 0.0.0.0 without authentication" in proc.stdout + proc.stderr


def test_a_keyless_client_cannot_name_a_keyed_clients_session() -> None:
    """Sessions of clients with keys are stored as 'c-<12 hex>:NAME'; a keyless instance on the same
    store must not reach them by naming that (issue 24)."""
    import json
    import urllib.error
    import urllib.request

    from tests.harness import Stack

    stack = Stack()
    try:
        for method, path, body, headers in (
                ("POST", "/v1/responses", {"model": "gemini-2.5-flash", "input": "hi"},
                 {"x-gtp-session": "c-0123456789ab:default"}),
                ("PUT", "/v1/sessions/c-0123456789ab:default/tools", {"tools": []}, {}),
                ("GET", "/v1/sessions/c-abcdef012345:x", None, {})):
            req = urllib.request.Request(stack.url + path, method=method, headers={
                "content-type": "application/json", **headers}, data=json.dumps(body).encode() if body else None)
            try:
                urllib.request.urlopen(req)
            except urllib.error.HTTPError as e:
                err = json.load(e)["error"]
                assert e.code == 400 and "clients with keys" in err["message"], err
            else:
                raise AssertionError(path)
        ok = urllib.request.Request(stack.url + "/v1/responses", headers={
            "content-type": "application/json", "x-gtp-session": "c-plain:name"},
            data=json.dumps({"model": "gemini-2.5-flash", "input": "hi"}).encode())
        assert urllib.request.urlopen(ok).status == 200, "other names with 'c-' stay usable"
    finally:
        stack.close()


def test_a_keyless_instance_refuses_a_store_that_keyed_instances_use(tmp_path) -> None:
    import subprocess
    import sys

    from tests.servers import ROOT, RedisServer, proxy_instance

    redis = RedisServer(tmp_path)
    keyed = None
    try:
        keyed, _ = proxy_instance(tmp_path, "keyed", "mock", "--store", redis.url, "--api-key", "k" * 24)
        done = subprocess.run([sys.executable, "-m", "proxy", "serve", "--port", "0", "--upstream", "mock",
                               "--store", redis.url], cwd=ROOT, capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and "holds sessions of instances with client keys" in done.stderr, done.stderr
    finally:
        if keyed:
            keyed.stop()
        redis.stop()
