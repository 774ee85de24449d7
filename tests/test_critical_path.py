"""scripts/critical_path.py: the edges its shim notes in a real `serve` and a real null hop (the
shim patches aiohttp's internals: a renamed method would leave segments empty, and this fails), and
how the notes become segments."""

from pathlib import Path

from scripts.critical_path import SEGMENTS, measure, segments


def test_segments_are_medians_of_the_spans_between_edges() -> None:
    notes = [{"in": 0, "app": 10_000, "read": 12_000, "read_end": 15_000, "up": 20_000, "up_back": 90_000,
              "out": 100_000},
             {"in": 0, "app": 30_000, "read": 33_000, "read_end": 38_000, "up": 40_000, "up_back": 100_000,
              "out": 130_000}]
    got = segments(notes)
    assert got == {"parse": 20.0, "admit": 2.5, "read": 4.0, "to Gemini": 3.5, "upstream": 65.0,
                   "answer": 20.0, "total": 115.0}
    hop = segments([{"in": 0, "app": 10_000, "up": 14_000, "up_back": 90_000, "out": 95_000}])
    assert hop["admit"] == hop["read"] == 0 and hop["to Gemini"] == 4.0  # from the handler to its upstream call


def test_a_real_proxy_and_hop_show_every_edge(tmp_path: Path) -> None:
    got = measure("responses", "small", 8, tmp_path)
    proxy, hop = got["proxy"], got["hop"]
    assert all(proxy[name] > 0 for name, _, _ in SEGMENTS), proxy
    assert hop["admit"] == hop["read"] == 0 and hop["to Gemini"] > 0 and hop["upstream"] > 0 and hop["answer"] > 0
    for who in (proxy, hop):
        assert who["total"] >= who["upstream"]
