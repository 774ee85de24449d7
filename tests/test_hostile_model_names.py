"""Issue 8 item 1: no client-supplied model name can change the upstream host, path or query.

Every payload below is a 400 in the caller's protocol, and the mock Gemini sees no request at all.
"""

import http.client
import json
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.errors import ProxyError
from proxy.upstream.gemini.client import GeminiUpstream
from proxy.wire.model_name import check_model_name
from tests.harness import Stack

PAYLOADS = [
    "../../X", "../../_fake/reset?", "..", ".", "../v1/models/gemini-2.5-flash", "%2e%2e/%2e%2e/X",
    "%2e%2e%2fX", "gemini-2.5-flash?alt=json", "gemini-2.5-flash#", "gemini-2.5-flash:countTokens",
    "gemini-2.5-flash/../../X", "models/../X", "models/gemini-2.5-flash/../../../X", "tunedModels/..",
    "gemini-2.5-flash%3FX", "gemini 2.5", "gemini-2.5-flash\r\nX-Injected: 1", "gemini\x00", "a" * 200,
    "", "/etc/passwd", "//evil.example/X", "http://evil.example/", "gemini-2.5-flash;x=1", "gemini@latest",
    "ｇemini", "gemini-2.5-flash\\..\\X", "-gemini", "models/", "files/abc", "cachedContents/x",
    "gemini-2.5-flash:generateContent?key=stolen", "..%2F..%2FX%3Fq%3D1%23", "%252e%252e", "models//x", "~root",
]


@pytest.mark.parametrize("name", PAYLOADS)
def test_grammar_refuses(name: str) -> None:
    with pytest.raises(ProxyError) as e:
        check_model_name(name)
    assert e.value.status == 400 and e.value.param == "model"


@pytest.mark.parametrize("name,bare", [("gemini-2.5-flash", "gemini-2.5-flash"), ("models/gemma-3-27b-it",
                                       "gemma-3-27b-it"), ("tunedModels/my-model_1.2", "tunedModels/my-model_1.2")])
def test_grammar_accepts(name: str, bare: str) -> None:
    assert check_model_name(name) == bare


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_accepted_name_stays_one_segment(name: str) -> None:
    """Whatever passes the grammar builds a URL under /v1beta/{models|tunedModels}/ with no query of its own."""
    up = GeminiUpstream("http://127.0.0.1:9/base")
    try:
        url = up._url(name, stream=True)
    except ProxyError:
        return
    assert url.host == "127.0.0.1" and url.port == 9
    assert url.raw_path.startswith(("/base/v1beta/models/", "/base/v1beta/tunedModels/"))
    assert url.raw_path.count("/") == 4 and url.raw_path.endswith(":streamGenerateContent")
    assert dict(url.query) == {"alt": "sse"} and not url.fragment


def test_base_url_must_be_plain() -> None:
    for bad in ("ftp://x", "http://h/?q=1", "http://h/#f", "x"):
        with pytest.raises(ValueError):
            GeminiUpstream(bad)


def _post(url: str, path: str, body: object) -> tuple[int, dict]:
    """Send the path byte for byte (no client-side normalisation of dot segments or escapes)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"content-type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


@pytest.fixture(scope="module")
def fresh() -> Stack:
    s = Stack()
    yield s
    s.close()


@pytest.mark.parametrize("name", PAYLOADS)
def test_openai_routes_refuse_before_upstream(fresh: Stack, name: str) -> None:
    before = len(fresh.seen)
    for path, body in (("/v1/responses", {"model": name, "input": "hi"}),
                       ("/v1/responses", {"model": name, "input": "hi", "stream": True}),
                       ("/v1/chat/completions", {"model": name, "messages": [{"role": "user", "content": "hi"}]}),
                       ("/v1/gemini", {"model": name, "input": "hi"})):
        status, answer = _post(fresh.url, path, body)
        assert status == 400, (path, name, answer)
        err = answer["error"]
        if path == "/v1/gemini":
            assert err["status"] == "INVALID_ARGUMENT" and "Invalid model name" in err["message"]
        else:
            assert err["param"] == "model" and err["code"] == "invalid_model"
    assert len(fresh.seen) == before, fresh.seen[before:]


RAW_PATHS = ["..%2F..%2FX%3Fq%3D1%23:generateContent", "%2e%2e:generateContent", "..:generateContent",
             "a%2F..%2F..%2Fb:generateContent", "x%3Falt%3Djson:streamGenerateContent",
             "gemini%20x:generateContent", "gemini%0d%0aX:generateContent"]


@pytest.mark.parametrize("target", RAW_PATHS)
def test_rest_path_refuses_before_upstream(fresh: Stack, target: str) -> None:
    before = len(fresh.seen)
    status, answer = _post(fresh.url, f"/v1beta/models/{target}", {"contents": [{"parts": [{"text": "hi"}]}]})
    assert status in (400, 404), answer
    assert answer["error"]["status"] in ("INVALID_ARGUMENT", "NOT_FOUND")  # Gemini's shape on Gemini's paths
    assert len(fresh.seen) == before, fresh.seen[before:]


def test_alias_target_is_checked() -> None:
    from proxy.server.context import parse_aliases
    with pytest.raises(ValueError, match="Invalid model name"):
        parse_aliases(["gpt-5=../../x"])


def test_good_names_still_served(fresh: Stack) -> None:
    status, answer = _post(fresh.url, "/v1beta/models/models%2Fgemini-2.5-flash:generateContent",
                           {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    assert status == 200, answer  # `models/` inside the segment is the grammar's prefix, not a path
    assert fresh.seen[-1] == "POST /v1beta/models/gemini-2.5-flash:generateContent"
    status, answer = _post(fresh.url, "/v1/responses", {"model": "gemini-2.5-flash", "input": "hi"})
    assert status == 200 and answer["status"] == "completed"
    assert fresh.seen[-1] == "POST /v1beta/models/gemini-2.5-flash:generateContent"
