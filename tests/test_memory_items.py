"""Issue 62 item 1 for wire/resent_items.py: the history items stateless clients send again are kept
within the budget /metrics states, and the process holds what that budget counts and no more. A real
`serve` subprocess (journal off) over the mock in its own process, RSS read from /proc
(scripts/bench_memory.py), under a load of stateless conversations whose distinct items are several
times what the caches may hold. Bytes, not time."""

import asyncio
import sys

import aiohttp
import pytest

from proxy import fast_json
from proxy.wire.resent_items import ENTRY_OVERHEAD, TEXT_FACTOR
from scripts.bench_memory import HEADERS, metrics, rss, serve
from tests.servers import mock_gemini

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/PID/status")]

CONVERSATIONS, TURNS, ITEMS, ITEM = 300, 3, 30, 1_000


def _history(c: int, turn: int) -> list[dict]:
    """Conversation c's history at `turn`: ITEMS items of its own, two more per turn (a stateless
    agent's next turn resends the last one's and adds to it)."""
    out = []
    for i in range(ITEMS + 2 * turn):
        text = f"c{c} item {i} " + "lorem ipsum dolor sit amet " * (ITEM // 27)
        out.append({"type": "message", "role": "user" if i % 2 == 0 else "assistant",
                    "content": text if i % 2 == 0 else [{"type": "output_text", "text": text}]})
    if out[-1]["role"] != "user":
        out.append({"type": "message", "role": "user", "content": f"c{c} turn {turn} [[mock:finish STOP]]"})
    return out


async def _load(url: str, conversations: range) -> int:
    sent = 0
    async with aiohttp.ClientSession() as s:
        async def one(c: int) -> None:
            nonlocal sent
            for turn in range(TURNS):
                data = fast_json.dumps({"model": "gemini-2.5-flash", "input": _history(c, turn), "store": False})
                sent += len(data)
                async with s.post(url + "/v1/responses", data=data, headers=HEADERS) as r:
                    assert r.status == 200, (await r.read())[:300]
        for start in range(conversations.start, conversations.stop, 8):
            await asyncio.gather(*(one(c) for c in range(start, min(start + 8, conversations.stop))))
    return sent


def test_resent_items_stay_within_their_budget_and_the_process_within_it(tmp_path) -> None:
    mock, mock_url = mock_gemini(tmp_path)
    proc = serve(tmp_path, mock_url)
    try:
        url = proc.url()
        asyncio.run(_load(url, range(8)))  # warm: imports, first-request paths, the caches' own tables
        idle = rss(proc.proc.pid)
        sent = asyncio.run(_load(url, range(8, 8 + CONVERSATIONS)))
        gauges = asyncio.run(metrics(url))
        after = rss(proc.proc.pid)
    finally:
        proc.stop()
        mock.stop()
    held, budget = gauges['gtp_cache_bytes{cache="items"}'], gauges['gtp_cache_max_bytes{cache="items"}']
    # (their conversions, to_gemini/kept_conversion.py: each conversation's latest, kept beside its items)
    converted = gauges['gtp_cache_bytes{cache="conversions"}']
    conversions = gauges['gtp_cache_max_bytes{cache="conversions"}']
    # The distinct items, as the cache counts them, are past what it may hold (twice over).
    assert 2 * budget < CONVERSATIONS * (ITEMS + 2 * TURNS) * (TEXT_FACTOR * ITEM + ENTRY_OVERHEAD)
    assert 0.5 * budget < held <= budget, (held, budget)
    assert 0 < converted <= conversions, (converted, conversions)
    # Issue 62's 1.3x, for these caches' budgets: measured 0.77-0.78x alone and 0.67-0.75x beside two busy
    # loops (2026-12-07, the items alone): it counts each item as twice its text and 1,024 bytes, more
    # than it takes.
    budgets = budget + conversions
    print(f"RSS grew {(after - idle) / budgets:.2f}x the caches' budgets ({sent / 1e6:.0f} MB sent)")
    assert after - idle <= 1.3 * budgets, ((after - idle) / budgets, after - idle, budgets)
