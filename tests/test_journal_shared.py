"""The journal shared through Redis (journal/shared.py), between journals in this process, each with a
client of its own on a real Redis: any instance lists and opens another's exchanges as their owner
renders them, follows them live, never sees another scope's, waits for a silent instance no longer
than ASK_TIMEOUT, and what crosses Redis is scrubbed and does not stay."""

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator

import orjson
import pytest
import redis.asyncio as aioredis

from proxy.journal import shared as shared_module
from proxy.journal.exchange import Exchange
from proxy.journal.ring import Journal
from proxy.redact import Redactor
from tests.servers import RedisServer, monitored

KEY = "client-key-canary-0123456789"  # presented by the request: a secret of this exchange only
KNOWN = "gemini-key-canary-9876543210"  # one the serving instance knows (its redactor's)
CANARIES = (KEY.encode(), KNOWN.encode(), b"AIzaSyCanary0123456789012345678901234", b"custom-credential-7")
SCOPE = "c-aaaaaaaaaaaa"


def served(number: int | str, scope: str = SCOPE) -> Exchange:
    """An exchange holding secrets in every place one can be: credential headers (one whose value is
    no known secret), the query, bodies (one not UTF-8, one cut), the stream, notes, the error, and an
    upstream call's body, answer, chunks and error."""
    ex = Exchange(number, "frontend", "POST", f"/v1beta/models/m:streamGenerateContent?alt=sse&key={KEY}",
                  ((b"Authorization", f"Bearer {KEY}".encode()), (b"X-Api-Key", b"custom-credential-7"),
                   (b"Content-Type", b"application/json"),
                   (b"traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")),
                  request_id="req_1", session="s1", scope=scope, client_model="gpt-5")
    ex.request_body = orjson.dumps({"input": f"my key is {KEY}, {KNOWN}", "note": CANARIES[2].decode(),
                                    "text": "caf\u00e9 \u2603"})
    ex.answer_headers = {"Content-Type": "application/json", "Set-Cookie": "session=custom-credential-7"}
    ex.answer_body = b"\xff\xfe not UTF-8 " + KEY.encode()
    ex.streamed(b"data: " + KNOWN.encode() + b"\n\n")
    ex.note("repair", f"a note quoting {KEY}", path="/tools/0")
    ex.error = {"message": f"refused {KNOWN}", "status": 400}
    call = ex.upstream("gemini-2.5-flash", {"contents": [{"parts": [{"text": KEY}]}],
                                            "tools": [{"functionDeclarations": [{"name": "f"}]}]}, stream=True)
    call.chunk({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"k": KNOWN}}}]},
                                "finishReason": "STOP"}]})
    call.error = f"upstream said {KEY}"
    call.first_byte = call.last_byte = call.start + 0.01
    call2 = ex.upstream("gemini-2.5-pro", ("x" * 10 + KEY).encode() * 20_000, stream=False)  # cut: head kept
    call2.answer = b'{"candidates":[]}'
    ex.status, ex.end = 400, ex.start + 0.02
    return ex


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture
async def instances(redis_server: RedisServer) -> AsyncIterator[list[Journal]]:
    """Two instances' journals on one Redis, listening: the first knows a secret the second does not."""
    clients = [aioredis.Redis.from_url(redis_server.url) for _ in range(2)]
    journals = [Journal(redactor=Redactor([KNOWN]), shared=lambda c=clients[0]: c),
                Journal(shared=lambda c=clients[1]: c)]
    for journal in journals:
        journal.shared.start()
    for journal in journals:
        await asyncio.wait_for(journal.shared._ready.wait(), 5)
    yield journals
    for journal in journals:
        journal.shared.close()
    for client in clients:
        await client.aclose()


@pytest.fixture
async def unreachable() -> AsyncIterator[Journal]:
    """A journal whose store's Redis cannot be reached."""
    client = aioredis.Redis.from_url("redis://127.0.0.1:9/0", socket_connect_timeout=0.2)
    journal = Journal(shared=lambda: client)
    yield journal
    journal.shared.close()
    await client.aclose()


async def test_any_instance_lists_and_opens_another_instances_exchange_as_its_owner_renders_it(
        instances: list[Journal], redis_server: RedisServer) -> None:
    owner, reader = instances
    owner.add(served(7))
    mine = served(8)
    mine.time += 1  # newer
    reader.add(mine)
    with redis_server.monitor() as seen:
        rows = await reader.list_all(SCOPE)
        [theirs] = [row for row in rows if row["id"] == owner.list(SCOPE)[0]["id"]]
        doc = await reader.get_any(SCOPE, theirs["id"])
    assert [row["id"] for row in rows] == [reader.list(SCOPE)[0]["id"], theirs["id"]]  # newest first
    assert theirs == owner.list(SCOPE)[0] and theirs["calls"][0]["name"] == "f" and theirs["error"]
    assert doc == owner.get(SCOPE, theirs["id"])
    traffic = monitored(seen, b"gtp:jk:")
    assert b'"calls' in traffic and b"gemini-2.5-pro" in traffic  # the summary and the document crossed Redis
    for canary in CANARIES:
        assert canary not in traffic and canary not in doc
    assert [key async for key in reader.shared.client.scan_iter("gtp:jk:*")] == []  # and nothing stayed


async def test_another_scopes_exchanges_are_never_listed_nor_opened(instances: list[Journal]) -> None:
    owner, reader = instances
    owner.add(served(9))
    exchange_id = owner.list(SCOPE)[0]["id"]
    assert await reader.list_all("c-bbbbbbbbbbbb") == []
    assert await reader.get_any("c-bbbbbbbbbbbb", exchange_id) is None
    assert await reader.get_any(SCOPE, exchange_id) is not None
    assert await reader.list_all(SCOPE, status="ok") == [] and len(await reader.list_all(SCOPE, status="400")) == 1


async def test_an_instance_follows_another_instances_exchanges_live(instances: list[Journal]) -> None:
    owner, reader = instances
    async with reader.live(SCOPE) as queue:
        deadline = time.monotonic() + 5
        while not owner.shared.follows(SCOPE) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # the announcement of the follow, on its way
        owner.add(served(10))
        owner.add(served(11, scope="c-bbbbbbbbbbbb"))  # not followed: not announced
        summary = await asyncio.wait_for(queue.get(), 5)
        assert summary == owner.list(SCOPE)[0] and summary["session"] == "s1"
        await asyncio.sleep(0.3)
        assert queue.empty()
    assert not owner.shared.follows("c-bbbbbbbbbbbb")


async def test_an_instance_stops_announcing_a_scope_nobody_follows_any_more(
        instances: list[Journal], monkeypatch: pytest.MonkeyPatch) -> None:
    owner, reader = instances
    monkeypatch.setattr(shared_module, "FOLLOW_TTL", 0.2)
    async with reader.live(SCOPE):
        deadline = time.monotonic() + 5
        while not owner.shared.follows(SCOPE) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert owner.shared.follows(SCOPE)
    await asyncio.sleep(0.3)
    assert not owner.shared.follows(SCOPE) and not owner.shared.followers


async def test_an_instance_that_does_not_answer_is_waited_for_no_longer_than_ask_timeout(
        instances: list[Journal], redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    owner, reader = instances
    monkeypatch.setattr(shared_module, "ASK_TIMEOUT", 0.5)
    owner.add(served(12))
    silent = aioredis.Redis.from_url(redis_server.url).pubsub()  # hears every question, answers none
    await silent.subscribe("gtp:jk:ask")
    try:
        start = time.monotonic()
        with caplog.at_level(logging.INFO, logger="proxy.journal.shared"):
            rows = await reader.list_all(SCOPE)
        assert 0.5 <= time.monotonic() - start < 2
        assert [row["id"] for row in rows] == [owner.list(SCOPE)[0]["id"]]  # the others' answers, all the same
        assert "1 instance(s) did not answer" in caplog.text
    finally:
        await silent.aclose()


async def test_with_redis_unreachable_an_instance_lists_its_own(
        unreachable: Journal, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared_module, "ASK_TIMEOUT", 0.5)
    journal = unreachable
    journal.add(served(13))
    with caplog.at_level(logging.INFO):
        assert [row["session"] for row in await journal.list_all(SCOPE)] == ["s1"]
        assert await journal.get_any(SCOPE, "ex_0000000000000000000000") is None
    assert "the shared journal is unavailable" in caplog.text


async def test_a_follower_that_leaves_while_its_follow_is_announced_is_forgotten(
        unreachable: Journal, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared_module, "ASK_TIMEOUT", 5.0)
    journal = unreachable

    async def follow() -> None:
        async with journal.live(SCOPE):
            await asyncio.sleep(60)

    task = asyncio.get_running_loop().create_task(follow())
    await asyncio.sleep(0.3)  # waiting for Redis to announce the follow
    assert journal.followed() == {SCOPE}
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert journal.followed() == set()


async def test_a_journal_listens_once_its_store_turns_to_redis_and_not_before(redis_server: RedisServer) -> None:
    """The addon's store learns its backend after the journal is made (gtp_store is configured later):
    on memory the journal never listens, and the first exchange after the store turns to Redis starts
    it listening (Journal.add asks the store's backend for a client on every exchange)."""
    from proxy.journal.recorder import Recorder
    from proxy.store.memory import MemoryStore
    from proxy.store.open_store import open_store
    store = MemoryStore()
    recorder = Recorder.from_options("on", store=store, env={})
    journal = recorder.journal
    assert journal is not None and journal.shared is not None
    redis_store = None
    try:
        for number in range(3):
            journal.add(served(number))
        assert journal.shared.listener is None and journal.shared.client is None
        redis_store = open_store(redis_server.url)
        store.backend = redis_store.backend  # as SharedStore.configure does
        journal.add(served(3))
        assert journal.shared.listener is not None
        await asyncio.wait_for(journal.shared._ready.wait(), 5)
        assert journal.shared.client is redis_store.backend.client
    finally:
        recorder.close()
        if redis_store is not None:
            await redis_store.close()
