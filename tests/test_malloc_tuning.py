"""malloc_tuning's fixed mmap threshold: large enough that parsing a large request keeps orjson's
working pool on the heap (a pool above the threshold was mapped, faulted in page by page and
unmapped on every request: 20 page faults per large request, measured by scripts/bench.sh's rows)."""

import asyncio
import tracemalloc

import orjson
import pytest

from proxy import malloc_tuning


@pytest.fixture
def trims(monkeypatch) -> list[int]:
    """The trims malloc_tuning makes (a stand-in libc records each), from counts of nothing noted."""
    made: list[int] = []

    class Libc:
        def malloc_trim(self, pad: int) -> None:
            made.append(pad)

    monkeypatch.setattr(malloc_tuning, "_libc", Libc)
    monkeypatch.setitem(malloc_tuning._state, "transient", 0)
    monkeypatch.setitem(malloc_tuning._state, "since_idle", 0)
    return made


def test_parsing_a_64_kb_request_takes_a_pool_below_the_mmap_threshold() -> None:
    body = orjson.dumps({"input": [{"role": "user", "content": f"message {i}: " + "lorem ipsum " * 70}
                                   for i in range(74)]})
    assert 60_000 < len(body) <= 65_536
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        value = orjson.loads(body)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    pool = peak - kept  # what the parse took and gave back: its working pool
    assert value["input"][73]["role"] == "user"
    assert pool > 10 * len(body)  # orjson's pool is still about 12 times the text (else this test says nothing)
    assert pool < malloc_tuning.MMAP_THRESHOLD, (pool, before)


def test_a_trim_is_due_after_enough_freed_history_or_when_idle(trims: list[int]) -> None:
    async def run() -> None:
        malloc_tuning.transient(malloc_tuning.IDLE_TRIM_BYTES)
        malloc_tuning.trim_if_due(idle=False)  # others still run: not yet
        await asyncio.sleep(0)
        assert trims == []
        malloc_tuning.trim_if_due(idle=True)  # the last one ended: now, and once its end freed what it holds
        assert trims == [0]
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert trims == [0, 0]
        malloc_tuning.trim_if_due(idle=True)  # nothing freed since
        malloc_tuning.transient(malloc_tuning.TRIM_AFTER_BYTES)
        malloc_tuning.trim_if_due(idle=False)  # enough freed, though others run: soon
        assert trims == [0, 0]
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert trims == [0, 0, 0]

    asyncio.run(run())


def test_a_trim_while_others_run_leaves_the_idle_trim_due(trims: list[int]) -> None:
    """What the requests still running hold when a trim runs, they free after it: the load's last
    request, ending with none running, trims although nothing was noted since (tests/test_memory_chain.py's
    load left 35 MB of freed heap resident when this trim was skipped)."""

    async def run() -> None:
        malloc_tuning.transient(malloc_tuning.TRIM_AFTER_BYTES)
        malloc_tuning.trim_if_due(idle=False)  # enough freed while others run: a trim soon
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert trims == [0]
        malloc_tuning.trim_if_due(idle=False)  # the others end, noting nothing more: no trim yet
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert trims == [0]
        malloc_tuning.trim_if_due(idle=True)  # the last one: what they all held is free now
        assert trims == [0, 0]
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert trims == [0, 0, 0]
        malloc_tuning.trim_if_due(idle=True)  # nothing noted since the idle trim: none
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert trims == [0, 0, 0]

    asyncio.run(run())


def test_what_is_noted_for_the_idle_trim_alone_adds_no_trim_while_others_run(trims: list[int]) -> None:
    """Stored turns a walk parsed (entry_store.get_response): a load whose histories all missed the
    cache is trimmed as it ends, and trimmed no more often while it runs."""

    async def run() -> None:
        malloc_tuning.transient(malloc_tuning.TRIM_AFTER_BYTES, idle_only=True)
        malloc_tuning.trim_if_due(idle=False)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert trims == []
        malloc_tuning.trim_if_due(idle=True)
        assert trims == [0]

    asyncio.run(run())
