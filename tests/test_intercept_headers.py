"""proxy/intercept/headers.py does what mitmproxy's accessors do, for any header fields: the same
values, the same fields left, the same body and content-length."""

import gzip

from hypothesis import given, settings
from hypothesis import strategies as st
from mitmproxy import http
from mitmproxy.test import tutils

from proxy.intercept import headers
from proxy.intercept.capture import may_call

NAMES = st.sampled_from([b"Content-Encoding", b"content-encoding", b"Transfer-Encoding", b"Content-Length",
                         b"content-length", b"X-Gtp-Session", b"x-gtp-session", b"Host", b"host",
                         b"Content-Type", b"Accept", b"X-\xc3\xa9"])
VALUES = st.sampled_from([b"", b"gzip", b"identity", b"chunked", b"12", b"abc", b"text/event-stream",
                          b"bogus", b"\xff\xfe", b"caf\xc3\xa9"])
FIELDS = st.lists(st.tuples(NAMES, VALUES), max_size=6).map(tuple)
LOOKED_UP = st.sampled_from(["content-encoding", "transfer-encoding", "content-length", "x-gtp-session", "host",
                             "X-GTP-Session", "content-type", "absent"])


def message(fields: tuple, body: bytes | None = b"{}") -> http.Request:
    req = tutils.treq()
    req.headers.fields = fields
    req.data.content = body
    return req


@settings(max_examples=300, deadline=None)
@given(FIELDS, LOOKED_UP)
def test_get_and_pop_are_mitmproxys(fields: tuple, name: str) -> None:
    key = name.encode().lower()
    assert headers.get(http.Headers(fields), key) == http.Headers(fields).get(name)
    ours, theirs = http.Headers(fields), http.Headers(fields)
    assert headers.pop(ours, key) == theirs.pop(name, None)
    assert ours.fields == theirs.fields


@settings(max_examples=300, deadline=None)
@given(FIELDS, st.sampled_from([b"", b"{}", b'{"a": 1}' * 50]))
def test_set_content_is_mitmproxys(fields: tuple, body: bytes) -> None:
    ours, theirs = message(fields), message(fields)
    headers.set_content(ours, body)
    theirs.set_content(body)
    assert ours.raw_content == theirs.raw_content
    assert ours.headers.fields == theirs.headers.fields


@settings(max_examples=300, deadline=None)
@given(FIELDS, st.sampled_from([None, b"", b"{}", gzip.compress(b"{}"), b"not gzip"]))
def test_content_is_mitmproxys(fields: tuple, body: bytes | None) -> None:
    assert headers.content(message(fields, body)) == message(fields, body).get_content(strict=False)


def test_an_answer_that_may_hold_a_call() -> None:
    assert may_call(b'{"candidates": [{"content": {"parts": [{"functionCall": {"name": "f"}}]}}]}')
    assert may_call(b'{"candidates": [{"content": {"parts": [{"\\u0066unctionCall": {"name": "f"}}]}}]}')
    assert not may_call(b'{"candidates": [{"content": {"parts": [{"text": "function call"}]}}]}')
