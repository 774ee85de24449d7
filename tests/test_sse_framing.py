"""How a writer's events are framed into writes: small events share one write (a stream's first
event reaches the client in one write), while events carrying a long answer go one per write, each
made only when the previous one was written."""

from proxy.server.translator_writer import JOIN_BELOW, sse_events


def _blocks(frames):
    return [frames] if isinstance(frames, bytes) else list(frames)


def test_small_events_share_one_write():
    events = [{"type": "response.created", "response": {"id": "r1"}},
              {"type": "response.in_progress", "response": {"id": "r1"}}]
    blocks = _blocks(sse_events(events))
    assert len(blocks) == 1
    assert blocks[0].count(b"event: ") == 2 and blocks[0].index(b"response.created") < blocks[0].index(b"in_progress")


def test_long_events_are_made_one_at_a_time():
    text = "x" * JOIN_BELOW
    events = [{"type": "response.output_text.done", "text": text},
              {"type": "response.content_part.done", "part": {"text": text}},
              {"type": "response.completed", "response": {"output": [{"text": text}]}}]
    frames = sse_events(events)
    assert not isinstance(frames, bytes)
    first = next(frames)
    assert first.count(b"event: ") == 1 and b"output_text.done" in first
    rest = list(frames)
    assert [b.count(b"event: ") for b in rest] == [1, 1]


def test_none_and_one():
    assert sse_events([]) == b""
    assert sse_events([{"type": "a"}]).startswith(b"event: a\n")
