"""Issue 62: a stored previous_response_id chain costs memory linear in what was sent, measured from
outside in bytes: a real `serve` subprocess (journal off) over the mock in its own process, RSS read
from /proc (scripts/bench_memory.py). Bytes, not time: the margins were measured with the machine
loaded (docs/benchmarks.md, "Memory of a stored chain")."""

import asyncio
import sys

import pytest

from scripts.bench_memory import SIZE, chain, measure, metrics, rss, serve
from tests.servers import mock_gemini

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/PID/status")]


def test_a_150_turn_chain_keeps_its_input_once_and_one_history(tmp_path) -> None:
    m = measure(150, SIZE, tmp=tmp_path)
    # What the store keeps of 150 turns: each turn's input once (it was twice).
    assert m["gtp_store_bytes"] < 1.2 * m["sent"], m
    # The history cache: one entry, the chain's head (it was a near-copy per turn).
    assert m['gtp_cache_bytes{cache="history"}'] < 1.2 * m["sent"], m
    growth = m["after"] - m["before"]
    # Issue 62's goal: 2.5x. Measured under load (6 runs): 1.96x-1.97x, what the store and the
    # history cache hold (2.05x the bytes sent) and no more. It was 4.0-4.3x: each stored turn's input
    # kept alive in a reference cycle until the cyclic collector ran (shared_input.py), and the last
    # turn's parsed history left resident in the heap (malloc_tuning.trim_if_due); 8.15x before that.
    print(f"RSS grew {growth / m['sent']:.2f}x the bytes sent")
    assert growth <= 2.5 * m["sent"], m


STORE, SESSION, JOURNAL = 16 << 20, 4 << 20, 8 << 20
CACHE = STORE // 4  # the history cache's share (history_cache.cache_bytes)


async def _load(url: str) -> int:
    """Many sessions' chains, past every budget: the store and the cache evict, the journal drops."""
    sent = 0
    for wave in range(4):
        sent += sum(await asyncio.gather(*(chain(url, 4, 5 * SIZE, session=f"load-{wave}-{i}") for i in range(21))))
    return sent


def test_after_a_load_past_its_budgets_what_is_kept_stays_within_them(tmp_path) -> None:
    mock, mock_url = mock_gemini(tmp_path)
    proc = serve(tmp_path, mock_url, "--store-max-bytes", str(STORE), "--session-max-bytes", str(SESSION),
                 "--journal", "on", "--journal-max-bytes", str(JOURNAL))
    try:
        url = proc.url()
        idle = rss(proc.proc.pid)
        sent = asyncio.run(_load(url))
        # The gauges first: their answer comes once the server finished what the load's last answers
        # left to do after they were sent (the journal keeps their exchanges, then the heap is trimmed).
        gauges = asyncio.run(metrics(url))
        after = rss(proc.proc.pid)
    finally:
        proc.stop()
        mock.stop()
    budgets = STORE + JOURNAL + CACHE
    assert sent > 2 * budgets  # the load is past the budgets: what is kept is what they allow
    assert gauges["gtp_store_bytes"] <= STORE and gauges["gtp_journal_bytes"] <= JOURNAL
    assert gauges['gtp_cache_bytes{cache="history"}'] <= CACHE
    assert gauges['gtp_cache_max_bytes{cache="history"}'] == CACHE
    # The process's memory over what it holds idle (the interpreter, its modules: about 80 MB), against
    # issue 62's goal: 1.3x the budgets' sum. Measured 1.20-1.21x in 56 runs (alone, beside busy loops,
    # beside a pytest -n 2 loop; load 0.7-16). It was 2.0-2.1x in about one run in
    # eight (and in the whole suite's parallel pass): a trim while 20 requests ran reset the count of
    # what was freed, the load's last request found nothing noted and skipped the idle trim, 35 MB of
    # freed heap stayed resident (malloc_tuning.trim_if_due). 4.6-4.8x before that: the stored turns'
    # inputs held in reference cycles (shared_input.py), pooled upstream connections holding their first
    # requests' exchanges (journal/recorder.py), the load's freed heap resident (malloc_tuning.trim_if_due).
    print(f"RSS grew {(after - idle) / budgets:.2f}x the budgets' sum")
    assert after - idle <= 1.3 * budgets, ((after - idle) / budgets, after - idle, budgets)
