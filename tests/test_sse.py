import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.wire.sse import MAX_EVENT_BYTES, SSEDecoder

STREAM = b'data: {"a": 1}\r\n\r\ndata: {"b": 2}\n\nevent: x\ndata: line1\ndata: line2\n\n: comment\n\ndata: {"c": 3}'


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_any_chunking_gives_the_same_events(size: int) -> None:
    dec = SSEDecoder()
    out = []
    for i in range(0, len(STREAM), size):
        out += dec.feed(STREAM[i:i + size])
    out += dec.close()
    assert out == ['{"a": 1}', '{"b": 2}', "line1\nline2", '{"c": 3}']


def test_unbounded_event_is_refused() -> None:
    dec = SSEDecoder()
    with pytest.raises(ValueError):
        dec.feed(b"data: " + b"x" * (MAX_EVENT_BYTES + 1))


def _reference(stream: bytes) -> list[str]:
    """The decoder before it was made linear (re-sliced per event): the semantics to keep."""
    out, buf = [], stream
    while True:
        cuts = [(buf.find(sep), len(sep)) for sep in (b"\r\n\r\n", b"\n\n", b"\r\r") if buf.find(sep) != -1]
        if not cuts:
            break
        end, n = min(cuts)
        raw, buf = buf[:end], buf[end + n:]
        data = [ln.rstrip(b"\r")[5:].removeprefix(b" ") for ln in raw.split(b"\n") if ln.rstrip(b"\r")
                .startswith(b"data:")]
        if data:
            out.append(b"\n".join(data).decode())
    if buf.strip():
        data = [ln.rstrip(b"\r")[5:].removeprefix(b" ") for ln in buf.split(b"\n") if ln.rstrip(b"\r")
                .startswith(b"data:")]
        if data:
            out.append(b"\n".join(data).decode())
    return out


_pieces = st.lists(st.sampled_from([b"data: ", b"data:", b"x", b"{}", b"\r", b"\n", b"\r\n", b"\r\n\r\n", b"\n\n",
                                    b": c", b"event: e", b"id: 1", b"\xc3\xa9"]), max_size=40)


@settings(max_examples=300)
@given(_pieces, st.lists(st.integers(1, 9), min_size=1, max_size=20))
def test_chunked_equals_whole_and_the_old_decoder(pieces: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(pieces)
    try:
        expected = _reference(stream)
    except UnicodeDecodeError:
        return
    dec, out, i, k = SSEDecoder(), [], 0, 0
    while i < len(stream):
        n = cuts[k % len(cuts)]
        out += dec.feed(stream[i:i + n])
        i, k = i + n, k + 1
    out += dec.close()
    assert out == expected


def test_the_buffer_keeps_only_what_is_unread() -> None:
    """Consumed events are dropped from the buffer (in bulk), so a long stream holds one event's bytes."""
    dec = SSEDecoder()
    event = b'data: {"x": "' + b"y" * 1000 + b'"}\r\n\r\n'
    for _ in range(5000):
        assert len(dec.feed(event)) == 1
    assert len(dec._buf) < 2 * 64 * 1024 + len(event)
