"""Issue 27: a long previous_response_id chain is not walked again each turn. The history of a
continued response is kept whole (history_cache.py), trusted only while every turn of it is still
stored — in memory and in a real Redis, where another instance may delete a turn."""
# ruff: noqa: F811 - the store fixtures are test_store_backends' own

import asyncio

import pytest

from proxy.errors import ProxyError
from proxy.store.base import StoredResponse, conversation_at
from proxy.store.history_cache import HistoryCache
from proxy.to_gemini.conversation import Conversation
from tests.test_store_backends import make_store, redis_server  # noqa: F401 - fixtures


def turn(i: int) -> list[dict]:
    return [{"role": "user", "parts": [{"text": f"question {i}"}]},
            {"role": "model", "parts": [{"text": f"answer {i}"}]}]


async def chain(store, n: int, session: str = "s") -> None:
    """n stored turns, resp_1 .. resp_n, each continuing the one before, as Responses stores them."""
    for i in range(1, n + 1):
        await store.put_response(session, StoredResponse(f"resp_{i}", {"id": f"resp_{i}", "status": "completed"},
                                                         turn(i), system=[{"text": "sys"}] if i == 1 else [],
                                                         parent=f"resp_{i - 1}" if i > 1 else None), chained=True)


def expected(n: int) -> list[dict]:
    return [c for i in range(1, n + 1) for c in turn(i)]


class CountingGets:
    """Counts the store's reads of stored responses."""

    def __init__(self, store) -> None:
        self.count, real = 0, store.get_response

        async def get(session: str, rid: str):
            self.count += 1
            return await real(session, rid)
        store.get_response = get


def test_a_continued_chain_reads_no_stored_turn(make_store) -> None:
    async def go() -> None:
        store = make_store()
        await chain(store, 1)
        gets = CountingGets(store)
        conv = await conversation_at(store, "s", "resp_1")  # first continuation: the one turn is read
        assert conv.contents == expected(1) and conv.system == [{"text": "sys"}]
        assert gets.count == 1
        for i in range(2, 40):  # each new turn is spliced onto its parent's cached history
            await store.put_response("s", StoredResponse(f"resp_{i}", {"id": f"resp_{i}", "status": "completed"},
                                                         turn(i), parent=f"resp_{i - 1}"), chained=True)
        gets.count = 0
        conv = await conversation_at(store, "s", "resp_39")
        assert conv == Conversation(expected(39), [{"text": "sys"}], [])
        assert gets.count == 0  # the walk would have read 39 entries
        await store.close()
    asyncio.run(go())


def test_a_chain_stored_elsewhere_is_walked_once_then_cached(make_store) -> None:
    """Another instance stored the chain (nothing in this process's cache): the first continuation
    walks it, the next turn reads only its own new entry."""
    async def go() -> None:
        store = make_store()
        await chain(store, 30)
        store.histories = HistoryCache()  # as a fresh instance sharing the store
        gets = CountingGets(store)
        assert (await conversation_at(store, "s", "resp_30")).contents == expected(30)
        assert gets.count == 30
        await store.put_response("s", StoredResponse("resp_31", {"id": "resp_31", "status": "completed"}, turn(31),
                                                     parent="resp_30"), chained=False)  # as another instance would
        gets.count = 0
        assert (await conversation_at(store, "s", "resp_31")).contents == expected(31)
        assert gets.count == 1
        await store.close()
    asyncio.run(go())


def test_a_turn_deleted_anywhere_is_reported_despite_the_cache(make_store) -> None:
    async def go() -> None:
        store = make_store()
        await chain(store, 5)
        assert (await conversation_at(store, "s", "resp_5")).contents == expected(5)
        await store.backend.pop(("s", "response", "resp_2"))  # as a DELETE on another instance does
        with pytest.raises(ProxyError) as e:
            await conversation_at(store, "s", "resp_5")
        assert "resp_2" in e.value.message and e.value.code == "previous_response_not_found"
        await store.backend.pop(("s", "response", "resp_5"))
        assert await conversation_at(store, "s", "resp_5") is None
        await store.close()
    asyncio.run(go())


def test_what_a_caller_changes_never_reaches_the_cache(make_store) -> None:
    """The repairs on the way to Gemini modify contents in place: each reader gets its own objects."""
    async def go() -> None:
        store = make_store()
        await chain(store, 3)
        first = await conversation_at(store, "s", "resp_3")
        first.contents[0]["parts"][0]["text"] = "changed"
        first.contents.append({"role": "user", "parts": []})
        assert (await conversation_at(store, "s", "resp_3")).contents == expected(3)
        await store.close()
    asyncio.run(go())


def test_a_background_response_still_running_is_not_cached(make_store) -> None:
    async def go() -> None:
        store = make_store()
        await store.put_response("s", StoredResponse("resp_1", {"id": "resp_1", "status": "queued"}, []))
        assert (await conversation_at(store, "s", "resp_1")).contents == []
        await store.put_response("s", StoredResponse("resp_1", {"id": "resp_1", "status": "completed"}, turn(1)))
        assert (await conversation_at(store, "s", "resp_1")).contents == expected(1)
        await store.close()
    asyncio.run(go())


def test_sessions_never_share_a_cached_history(make_store) -> None:
    async def go() -> None:
        store = make_store()
        await chain(store, 3, session="a")
        assert (await conversation_at(store, "a", "resp_3")).contents == expected(3)
        assert await conversation_at(store, "b", "resp_3") is None
        await store.close()
    asyncio.run(go())


def test_the_cache_holds_no_more_than_its_bytes() -> None:
    cache = HistoryCache(max_bytes=200_000)
    big = [{"role": "user", "parts": [{"text": "x" * 10_000}]}]
    for i in range(100):
        cache.put("s", f"r{i}", [f"r{i}"], Conversation(big, [], []))
    assert cache.lru.total <= 200_000
    assert cache.get("s", "r99") is not None and cache.get("s", "r0") is None
    cache.put("s", "huge", ["huge"], Conversation(big * 20, [], []))  # more than one history may take
    assert cache.get("s", "huge") is None


def test_a_cached_history_expires_once_unused_for_its_ttl() -> None:
    now = [1000.0]
    cache = HistoryCache(ttl=60.0, clock=lambda: now[0])
    cache.put("s", "r1", ["r1"], Conversation([{"role": "user", "parts": [{"text": "hi"}]}], [], []))
    now[0] += 59
    assert cache.get("s", "r1") is not None  # a use keeps it another ttl
    now[0] += 59
    assert cache.get("s", "r1") is not None
    now[0] += 61
    assert cache.get("s", "r1") is None


def test_a_linear_chain_keeps_one_entry_its_head() -> None:
    """Issue 62: a child replaces its parent's entry; 150 histories of one chain were near-copies."""
    async def go() -> None:
        from proxy.store import MemoryStore
        store = MemoryStore()
        await chain(store, 1)
        await conversation_at(store, "s", "resp_1")  # cached by the walk
        for i in range(2, 30):
            await store.put_response("s", StoredResponse(f"resp_{i}", {"id": f"resp_{i}", "status": "completed"},
                                                         turn(i), parent=f"resp_{i - 1}"), chained=True)
        assert len(store.histories.lru) == 1 and store.histories.get("s", "resp_29") is not None
        assert store.histories.bytes == store.histories.lru.total > 0
        gets = CountingGets(store)
        assert (await conversation_at(store, "s", "resp_29")).contents == expected(29)
        assert gets.count == 0
    asyncio.run(go())


def test_a_parent_branched_from_keeps_its_entry_beside_its_children() -> None:
    async def go() -> None:
        from proxy.store import MemoryStore
        store = MemoryStore()
        await chain(store, 1)
        await conversation_at(store, "s", "resp_1")
        for i in range(2, 6):
            await store.put_response("s", StoredResponse(f"resp_{i}", {"id": f"resp_{i}", "status": "completed"},
                                                         turn(i), parent=f"resp_{i - 1}"), chained=True)
        # resp_3 asked again: walked once (its entry was replaced), then kept beside both children.
        gets = CountingGets(store)
        assert (await conversation_at(store, "s", "resp_3")).contents == expected(3)
        assert gets.count == 3
        await store.put_response("s", StoredResponse("resp_b", {"id": "resp_b", "status": "completed"}, turn(99),
                                                     parent="resp_3"), chained=True)
        assert store.histories.get("s", "resp_3") is not None and store.histories.get("s", "resp_b") is not None
        gets.count = 0
        assert (await conversation_at(store, "s", "resp_3")).contents == expected(3)
        assert (await conversation_at(store, "s", "resp_b")).contents == expected(3) + turn(99)
        assert (await conversation_at(store, "s", "resp_5")).contents == expected(5)
        assert gets.count == 0
    asyncio.run(go())


def test_the_history_cache_budget_is_a_quarter_of_a_small_store() -> None:
    from proxy.store import MemoryStore
    assert MemoryStore(max_bytes=16 << 20, session_bytes=8 << 20).histories.max_bytes == 4 << 20
    assert MemoryStore().histories.max_bytes == 64 << 20
