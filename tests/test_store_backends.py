"""Issue 12 item 1: the session store behaves the same in memory and in a real Redis — byte budgets
with least-recently-used eviction, tombstones, TTLs, linear conversations, tool contexts whose
rounds are read only as far as asked — and a Redis that goes away is a 503, then recovers."""

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proxy.errors import ProxyError
from proxy.session.session_tools import ToolRound
from proxy.signatures.call_record import CallRecord
from proxy.store.base import StoredResponse
from proxy.store.byte_lru import TooLarge
from proxy.store.entry_store import EntryStore
from proxy.store.open_store import check_store_url, open_store
from tests.servers import RedisServer


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


_db = iter(range(1, 16))


@pytest.fixture(params=["memory", "redis"])
def make_store(request: pytest.FixtureRequest):
    """A factory of empty stores of the parametrized kind (each Redis store gets its own prefix)."""
    made: list[EntryStore] = []

    def make(**limits) -> EntryStore:
        if request.param == "memory":
            return open_store("memory", **limits)
        server = request.getfixturevalue("redis_server")
        store = open_store(server.url, **limits)
        store.backend.prefix = f"t{time.monotonic_ns()}:"
        made.append(store)
        return store

    yield make
    for store in made:
        asyncio.run(store.close())


def call(i: int) -> CallRecord:
    return CallRecord(f"call_{i}", "get_weather", "get_weather", f"g{i}", f"sig{i}", {"city": f"c{i}"})


def test_responses_calls_and_deletes(make_store) -> None:
    async def go() -> None:
        store = make_store()
        stored = StoredResponse("resp_1", {"id": "resp_1"}, [{"role": "user", "parts": [{"text": "hi"}]}],
                                pending=["call_1"], parent=None)
        await store.put_response("s", stored)
        assert await store.get_response("s", "resp_1") == stored
        assert await store.get_response("other", "resp_1") is None, "sessions never see each other"
        await store.put_calls("s", [call(1), call(2)])
        assert await store.get_calls("s", ["call_1", "call_2", "nope"]) == {"call_1": call(1), "call_2": call(2)}
        assert await store.delete_response("s", "resp_1") is True
        assert await store.delete_response("s", "resp_1") is False
        assert await store.get_response("s", "resp_1") is None
        await store.close()
    asyncio.run(go())


def test_an_agents_calls_are_looked_up_in_one_step(make_store) -> None:
    """A history names every call it made; its records are asked for together (one Redis round trip,
    not one per call), and each found one is used, so its time to live starts again. Missing, expired
    and evicted records are simply not found, in either store."""
    async def go() -> None:
        store = make_store(ttl=1.0)
        await store.put_calls("s", [call(i) for i in range(30)])
        await store.put_calls("other", [call(99)])
        trips = []
        backend = store.backend
        if hasattr(backend, "_round_trip"):
            real = backend._round_trip

            async def counted(command: bytes):
                trips.append(command)
                return await real(command)
            backend._round_trip = counted
        ids = [f"call_{i}" for i in range(0, 30, 2)] + ["nope", "call_99", "call_4"]
        found = await store.get_calls("s", ids)
        assert found == {f"call_{i}": call(i) for i in range(0, 30, 2)}, "another session's record is never found"
        if hasattr(backend, "_round_trip"):
            assert len(trips) == 1, f"{len(trips)} round trips for {len(ids)} calls"
        assert await store.get_calls("s", []) == {}
        await asyncio.sleep(0.6)
        assert len(await store.get_calls("s", ["call_0", "call_2"])) == 2  # used: their time to live starts again
        await asyncio.sleep(0.6)  # (a late wake-up only ages the untouched ones more)
        assert set(await store.get_calls("s", ["call_0", "call_1", "call_2", "call_3"])) == {"call_0", "call_2"}, \
            "the records used 0.6 s ago are alive, those last used 1.2 s ago expired"
    asyncio.run(go())


def test_budgets_evict_least_recently_used_with_tombstones(make_store) -> None:
    async def go() -> None:
        store = make_store(max_bytes=40_000, session_bytes=20_000)
        turn = [{"role": "user", "parts": [{"text": "x" * 4000}]}]
        await store.append_conversation("a", "old", turn)
        for i in range(6):
            await store.put_response("a", StoredResponse(f"r{i}", {}, turn))
        with pytest.raises(ProxyError) as e:  # evicted, and said so: never restarted as a new conversation
            await store.get_conversation("a", "old")
        assert e.value.status == 409 and e.value.code == "conversation_evicted"
        with pytest.raises(ProxyError) as e:
            await store.append_conversation("a", "old", turn)
        assert e.value.code == "conversation_evicted"
        assert await store.get_response("a", "r5") is not None and await store.get_response("a", "r0") is None
        for i in range(12):  # other sessions push the total over its budget: the oldest of anyone's go
            await store.put_response(f"b{i}", StoredResponse("r", {}, turn))
        assert await store.get_response("b11", "r") is not None and await store.get_response("a", "r5") is None
        with pytest.raises(ProxyError) as e:
            await store.put_response("c", StoredResponse("huge", {}, [{"text": "y" * 30_000}]))
        assert e.value.status == 413
        await store.close()
    asyncio.run(go())


def test_conversations_grow_by_turns(make_store) -> None:
    async def go() -> None:
        store = make_store()
        for i in range(50):
            await store.append_conversation("s", "c", [{"role": "user", "parts": [{"text": f"t{i}"}]}])
        assert [c["parts"][0]["text"] for c in await store.get_conversation("s", "c")] == [f"t{i}" for i in range(50)]
        assert await store.get_conversation("s", "new") == []
        await store.close()
    asyncio.run(go())


def test_a_refused_write_leaves_what_was_stored_untouched(make_store) -> None:
    """Issue 57 item 1: a turn too large to keep is refused (413) and the conversation, the response
    or the rounds before it stay as they were: never dropped with it (then reported evicted)."""
    async def go() -> None:
        store = make_store(max_bytes=200_000, session_bytes=50_000)
        first = [{"role": "user", "parts": [{"text": "turn one"}]}, {"role": "model", "parts": [{"text": "ok"}]}]
        await store.append_conversation("s", "c", first)
        with pytest.raises(ProxyError) as e:
            await store.append_conversation("s", "c", [{"role": "user", "parts": [{"text": "x" * 60_000}]}])
        assert e.value.status == 413 and "conversation is unchanged" in e.value.message
        assert await store.get_conversation("s", "c") == first
        await store.append_conversation("s", "c", first)  # and it goes on
        assert await store.get_conversation("s", "c") == first + first
        await store.put_response("s", StoredResponse("r1", {"id": "r1"}, first))
        with pytest.raises(ProxyError) as e:
            await store.put_response("s", StoredResponse("r1", {"id": "r1", "big": "x" * 60_000}, first))
        assert e.value.status == 413
        assert (await store.get_response("s", "r1")).response == {"id": "r1"}
        await store.add_round("s", ToolRound([call(1)]))
        with pytest.raises(ProxyError):
            await store.add_round("s", ToolRound([CallRecord("big", "f", "f", "g", "x" * 60_000, {})]))
        assert [r.calls for r in (await store.get_tool_context("s")).rounds] == [[call(1)]]
        await store.close()
    asyncio.run(go())


def test_tool_context_rounds_are_read_only_as_far_as_asked(make_store) -> None:
    async def go() -> None:
        store = make_store(max_rounds=100)
        decls = [{"name": "get_weather", "parameters": {"type": "OBJECT"}}]
        await store.set_tools("s", decls, {"functionCallingConfig": {"mode": "ANY"}}, {"get_weather": "weather"})
        for i in range(150):
            await store.add_round("s", ToolRound([call(i)]))
        assert await store.add_results("s", {"call_149": {"t": 1}, "call_0": {}}) == ["call_0"], \
            "a trimmed round is unknown, and nothing is recorded then"
        assert await store.add_results("s", {"call_149": {"t": 1}, "call_148": {"t": 2}}) == []
        newest = await store.get_tool_context("s", rounds=2)
        assert newest is not None and newest.declarations == decls and newest.client_names == {"get_weather": "weather"}
        assert [r.calls[0].call_id for r in newest.rounds] == ["call_148", "call_149"]
        assert [r.results for r in newest.rounds] == [{"call_148": {"t": 2}}, {"call_149": {"t": 1}}]
        assert (await store.get_tool_context("s", rounds=0)).rounds == []
        every = await store.get_tool_context("s")
        assert len(every.rounds) == 100 and every.rounds[0].calls[0] == call(50)
        await store.set_tools("s", [], None, {})  # new tools keep the captured rounds
        assert len((await store.get_tool_context("s")).rounds) == 100
        await store.drop_tool_context("s")
        assert await store.get_tool_context("s") is None
        await store.close()
    asyncio.run(go())


def test_entries_expire_after_their_ttl(make_store) -> None:
    async def go() -> None:
        store = make_store(ttl=0.3)
        await store.put_response("s", StoredResponse("r", {}, []))
        await store.append_conversation("s", "c", [{"role": "user"}])
        await asyncio.sleep(0.6)
        assert await store.get_response("s", "r") is None
        assert await store.get_conversation("s", "c") == [], "expired, not evicted: a new conversation"
        await store.close()
    asyncio.run(go())


def test_concurrent_appends_lose_nothing(make_store) -> None:
    async def go() -> None:
        store = make_store()
        await asyncio.gather(*(store.append_conversation("s", "c", [{"n": i}]) for i in range(100)),
                             *(store.add_round("s", ToolRound([call(i)])) for i in range(100)))
        assert sorted(c["n"] for c in await store.get_conversation("s", "c")) == list(range(100))
        assert len((await store.get_tool_context("s")).rounds) == 100
        await store.close()
    asyncio.run(go())


def test_a_taken_mark_is_won_by_exactly_one_taker(make_store) -> None:
    """take_mark is a claim (an Anthropic thread's answer is continued once): of many concurrent
    takers exactly one finds the mark, in one session only, and a mark put back can be won again."""
    async def go() -> None:
        store = make_store()
        await store.put_mark("s", "claim", "m", {})
        await store.put_mark("other", "claim", "m", {})
        won = await asyncio.gather(*(store.take_mark("s", "claim", "m") for _ in range(50)))
        assert won.count(True) == 1 and await store.get_mark("s", "claim", "m") is None
        assert await store.get_mark("other", "claim", "m") == {}
        assert not await store.take_mark("s", "claim", "never")
        await store.put_mark("s", "claim", "m", {})
        assert await store.take_mark("s", "claim", "m")
        await store.close()
    asyncio.run(go())


def test_two_clients_of_one_redis_share_everything(redis_server: RedisServer) -> None:
    async def go() -> None:
        a, b = open_store(redis_server.url), open_store(redis_server.url)
        await a.put_response("shared", StoredResponse("r", {"id": "r"}, []))
        await a.set_tools("shared", [{"name": "f"}], None, {})
        await b.add_round("shared", ToolRound([call(1)]))
        assert (await b.get_response("shared", "r")).response == {"id": "r"}
        ctx = await a.get_tool_context("shared", rounds=1)
        assert ctx.declarations == [{"name": "f"}] and ctx.rounds[0].calls == [call(1)]
        await a.close()
        await b.close()
    asyncio.run(go())


def test_redis_byte_accounting_stays_exact_through_overwrites_deletes_and_evictions(redis_server: RedisServer
                                                                                    ) -> None:
    """The script's bookkeeping (bytes in all, per session, entries) equals what is really kept, whatever
    mix of first puts, overwrites, deletes, appends and evictions came before (drop() skips the
    bookkeeping of an entry that was never accounted: this holds it to the stored bytes)."""
    async def go() -> None:
        store = open_store(redis_server.url, max_bytes=60_000, session_bytes=30_000)
        backend = store.backend
        backend.prefix = f"acct{time.monotonic_ns()}:"
        client = backend.client

        async def actual(session: str | None = None) -> tuple[int, int]:
            keys = [k async for k in client.scan_iter(f"{backend.prefix}e:*")]
            if session is not None:
                keys = [k for k in keys if k.decode().startswith(f"{backend.prefix}e:{len(session)}:{session}:")]
            sizes = [sum(map(len, await client.lrange(k, 0, -1))) for k in keys]
            return sum(sizes), len(sizes)

        async def check() -> None:
            total, entries, a_bytes = await backend.stats("a")
            assert (total, entries) == await actual()
            assert a_bytes == (await actual("a"))[0]

        for i in range(5):
            await backend.put(("a", "response", f"r{i}"), [b"x" * (1000 + i)])
        await check()
        await backend.put(("a", "response", "r1"), [b"y" * 3000, b"z" * 10])  # an overwrite
        await backend.put(("b", "response", "r1"), [b"w" * 500])  # the same name in another session
        await check()
        assert await backend.pop(("a", "response", "r2")) is True
        assert await backend.pop(("a", "response", "never")) is False
        await check()
        for _ in range(8):
            await backend.append(("a", "conversation", "c"), b"t" * 700, keep=5)
        await check()
        with pytest.raises(TooLarge):  # refused: nothing changes, the bookkeeping included
            await backend.append(("a", "conversation", "c"), b"t" * 40_000, keep=5)
        with pytest.raises(TooLarge):
            await backend.put(("a", "response", "r1"), [b"q" * 40_000])
        await check()
        assert await backend.get(("a", "conversation", "c")) == [b"t" * 700] * 5
        assert await backend.get(("a", "response", "r1")) == [b"y" * 3000, b"z" * 10]
        for i in range(40):  # past both budgets: evictions, tombstones
            await backend.put((f"s{i % 3}", "response", f"big{i}"), [b"e" * 4000])
        await check()
        assert (await backend.stats())[0] <= 60_000
        await store.close()
    asyncio.run(go())


def test_redis_down_is_a_503_and_it_recovers(tmp_path: Path) -> None:
    server = RedisServer(tmp_path)
    store = open_store(server.url)

    async def put(name: str) -> None:
        await store.put_response("s", StoredResponse(name, {"id": name}, []))

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(put("before"))
        server.stop()
        with pytest.raises(ProxyError) as e:
            loop.run_until_complete(put("during"))
        assert e.value.status == 503 and e.value.code == "store_unavailable" and "Redis" in e.value.message
        server.start()  # same port, its append-only file: what was stored is still there
        loop.run_until_complete(put("after"))
        assert loop.run_until_complete(store.get_response("s", "before")) is not None
        assert loop.run_until_complete(store.get_response("s", "after")) is not None
    finally:
        loop.run_until_complete(store.close())
        loop.close()
        server.stop()


def test_store_urls_are_checked() -> None:
    assert check_store_url("redis://127.0.0.1:6379/0") and check_store_url("rediss://h:6380/1")
    for bad in ("mysql://h/db", "redis:///0", "memcached", ""):
        with pytest.raises(ValueError, match="store"):
            check_store_url(bad)


def test_the_redis_store_parses_replies_with_hiredis() -> None:
    """hiredis is a dependency because a store round trip is 20-60 us faster with it (the bench's
    Redis row); redis-py falls back to its Python parser silently when it is missing."""
    store = open_store("redis://127.0.0.1:1/0")  # no connection is made
    connection = store.backend.client.connection_pool.make_connection()
    assert type(connection._parser).__name__ == "_AsyncHiredisParser"


def test_redis_calls_share_a_bounded_set_of_connections(redis_server: RedisServer, monkeypatch) -> None:
    """The store's calls take redis-py's connections from a free list of its own (redis_entries.py):
    at most MAX_CONNECTIONS at once, the rest wait for one; all of them answered."""
    monkeypatch.setattr("proxy.store.redis_entries.MAX_CONNECTIONS", 3)

    async def go() -> None:
        store = open_store(redis_server.url)
        backend = store.backend
        backend.prefix = f"pool{time.monotonic_ns()}:"
        await asyncio.gather(*(backend.put(("s", "response", f"r{i}"), [f"doc{i}".encode()]) for i in range(60)))
        assert len(backend._free) == 3
        assert [await backend.get(("s", "response", f"r{i}")) for i in range(60)] == [[f"doc{i}".encode()]
                                                                                   for i in range(60)]
        await store.close()
    asyncio.run(go())


def test_redis_scripts_are_loaded_again_when_redis_forgot_them(redis_server: RedisServer) -> None:
    async def go() -> None:
        store = open_store(redis_server.url)
        backend = store.backend
        backend.prefix = f"noscript{time.monotonic_ns()}:"
        await backend.put(("s", "response", "a"), [b"1"])
        await backend.client.script_flush()  # as after a restart: EVALSHA answers NOSCRIPT
        await backend.put(("s", "response", "b"), [b"2"])
        assert await backend.get(("s", "response", "a")) == [b"1"]
        assert await backend.get(("s", "response", "b")) == [b"2"]
        await store.close()
    asyncio.run(go())


def test_a_cancelled_redis_call_never_hands_its_reply_to_the_next(redis_server: RedisServer) -> None:
    """A request cancelled while its script waits (the client went away) leaves a reply on the way:
    its connection is dropped, so the next call reads its own answer."""
    async def go() -> None:
        store = open_store(redis_server.url)
        backend = store.backend
        backend.prefix = f"cancel{time.monotonic_ns()}:"
        await backend.put(("s", "response", "kept"), [b"doc"])
        await backend.client.execute_command("CLIENT", "PAUSE", "300", "ALL")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(backend.put(("s", "response", "other"), [b"late"]), 0.05)
        await asyncio.sleep(0.4)  # the pause ends; Redis answers the cancelled put
        assert await backend.get(("s", "response", "kept")) == [b"doc"]
        assert await backend.get(("s", "response", "missing")) is None
        await store.close()
    asyncio.run(go())
