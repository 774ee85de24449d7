import pytest

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
