"""The upstream client: where the API key comes from, and what an unreachable Gemini looks like."""

import json
import socket

import openai
import pytest

from proxy.errors import ProxyError
from proxy.upstream.gemini.client import GeminiUpstream
from tests.harness import Stack
from tests.test_bad_input import post

BODY = json.dumps({"model": "gemini-2.5-flash", "input": "hi"}).encode()


def test_client_key_wins_then_the_configured_key(stack: Stack) -> None:
    post(f"{stack.url}/v1/responses", BODY, {"authorization": "Bearer client-key"})
    assert stack.received[-1]["key"] == "client-key"
    post(f"{stack.url}/v1/responses", BODY, {"x-goog-api-key": "goog-key"})
    assert stack.received[-1]["key"] == "goog-key"
    post(f"{stack.url}/v1/responses", BODY)
    assert stack.received[-1]["key"] == "test-key"


def test_gemini_api_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "env-key")
    assert GeminiUpstream("http://127.0.0.1:1").api_key == "env-key"
    assert GeminiUpstream("http://127.0.0.1:1", api_key="explicit").api_key == "explicit"


def test_unreachable_upstream_is_a_clear_502() -> None:
    s = Stack()
    try:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            dead = sock.getsockname()[1]  # bound, never listening: connections are refused
            s.upstream.base_url = f"http://127.0.0.1:{dead}"
            c = openai.OpenAI(base_url=f"{s.url}/v1", api_key="k", max_retries=0, _strict_response_validation=True)
            for stream in (False, True):
                with pytest.raises(openai.InternalServerError) as info:
                    c.responses.create(model="gemini-2.5-flash", input="hi", stream=stream)
                assert info.value.status_code == 502
                assert f"Could not reach Gemini at http://127.0.0.1:{dead}" in info.value.message
            status, body = post(f"{s.url}/v1/gemini", BODY)
            assert status == 502 and body["error"]["status"] == "UNAVAILABLE"
    finally:
        s.close()


def test_upstream_urls_are_built_once_and_bounded() -> None:
    """The URL for a model is kept once built (it is the same every request); a model Gemini's grammar
    refuses is refused every time (never kept), and client-chosen names cannot grow the memo."""
    from proxy.upstream.gemini.client import MAX_URLS

    up = GeminiUpstream("http://127.0.0.1:1")
    url = up._url("gemini-2.5-flash", True)
    assert str(url) == "http://127.0.0.1:1/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert up._url("gemini-2.5-flash", True) is url
    assert str(up._url("gemini-2.5-flash", False)) == "http://127.0.0.1:1/v1beta/models/gemini-2.5-flash:generateContent"
    for _ in range(2):
        with pytest.raises(ProxyError):
            up._url("../../v1/files", False)
    for i in range(MAX_URLS * 2):
        up._url(f"gemini-x-{i}", False)
    assert len(up._urls) <= MAX_URLS
    up.base_url = "http://127.0.0.1:2"  # a moved upstream gets URLs of its own
    assert str(up._url("gemini-2.5-flash", False)).startswith("http://127.0.0.1:2/")
