"""Issue 59 item 8: streams split anywhere give the same calls (tests/split_feed.py).

Every recorded stream in tests/recorded/ (globbed: fixtures added later are fed too) and a
parallel-call answer in every text dialect are re-fed in seeded random cuts — single bytes, 1-4
bytes as SGLang #31915 cut them (it lost a call of two in 71-91 % of such splits), up to 64 bytes,
and whole or several events at once — through the decoders the proxy runs: the SSE decoder, the
MITM's capture tap, the Interactions translator, the chunk merger, each dialect's text parser and
the MITM's text-call rewriter. The calls (ids, names, arguments, order, signatures) and the merged
answer must be those of the unsplit feed; parallel calls never collapse (hermes-agent #57939).
"""

import random

import pytest

from proxy.dialects import DIALECTS
from proxy.dialects.base import Call, ToolSpec
from tests import split_feed

RECORDED = list(split_feed.recorded_streams())
SPLITS = 120  # per recorded stream, plus one feed of single bytes

# Our own answer (not a recording): two calls of one tool and one of another, non-ASCII arguments
# (a UTF-8 character cut between two reads must survive), in each dialect's own rendering.
WEATHER = ToolSpec("get_weather", "Weather for a city", {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]})
TIME = ToolSpec("get_time", "Time in a zone", {"type": "object", "properties": {"tz": {"type": "string"}}})
TOOLS = {"get_weather": WEATHER, "get_time": TIME}
CALLS = [Call("get_weather", {"city": "Zürich", "days": 3}), Call("get_weather", {"city": "東京"}),
         Call("get_time", {"tz": "Europe/Paris"})]
EXPECTED = [(c.name, c.arguments) for c in CALLS]


def test_the_recorded_streams_are_all_here() -> None:
    names = {n for n, _, _ in RECORDED}
    assert {"vertex-stream-args-two-calls.jsonl", "gemini3-tool-call.jsonl",
            "interactions-tool-call-step1.jsonl"} <= names, names


@pytest.mark.parametrize(("name", "kind", "data"), RECORDED, ids=[n for n, _, _ in RECORDED])
def test_a_recorded_stream_cut_anywhere_gives_the_same_calls(name, kind, data) -> None:
    feed = split_feed.FEEDERS[kind]
    whole = feed([data])
    if name == "vertex-stream-args-two-calls.jsonl":  # the parallel pair, as recorded
        assert [c[1] for c in whole["calls"]] == ["getWeather", "getWeather"]
    boundaries = split_feed.boundaries_of(data)
    rng = random.Random(f"recorded:{name}")
    assert feed(split_feed.single(data)) == whole, "fed a byte at a time"
    for i in range(SPLITS):
        pieces = split_feed.cuts(data, rng, boundaries)
        assert b"".join(pieces) == data
        assert feed(pieces) == whole, f"split {i}: {[len(p) for p in pieces]}"


def _answer(d) -> str:
    """The dialect's parallel-call answer; prose before it where the dialect has a marker (a bare
    dialect's calls are calls only when nothing else is said)."""
    return ("" if d.bare else "Checking all three. ") + d.render_calls(CALLS)


@pytest.mark.parametrize("name", list(DIALECTS))
def test_a_dialect_answer_cut_anywhere_gives_every_parallel_call(name) -> None:
    d = DIALECTS[name]
    text = _answer(d)
    whole = split_feed.parse_pieces(d, TOOLS, [text])
    assert whole["calls"] == EXPECTED and not whole["warnings"], whole
    rng = random.Random(f"dialect:{name}")
    assert split_feed.parse_pieces(d, TOOLS, split_feed.single(text)) == whole, "fed a character at a time"
    starts = [text.find(m) for m in ("get_weather", "get_time") if m in text]
    for i in range(150):
        pieces = split_feed.cuts(text, rng, starts)
        assert split_feed.parse_pieces(d, TOOLS, pieces) == whole, f"split {i}: {pieces}"


@pytest.mark.parametrize("name", list(DIALECTS))
def test_the_mitm_text_call_path_cut_anywhere_gives_every_parallel_call(name) -> None:
    """Text pieces as Gemini chunks, their SSE bytes cut again (UTF-8 characters too), through the
    MITM's rewriter and capture tap."""
    d = DIALECTS[name]
    text = _answer(d)
    rng = random.Random(f"mitm:{name}")
    for i in range(30):
        data = split_feed.text_stream(split_feed.cuts(text, rng))
        pieces = split_feed.cuts(data, rng, split_feed.boundaries_of(data))
        assert split_feed.mitm_text_calls(d, list(TOOLS.values()), pieces) == EXPECTED, f"split {i}"
