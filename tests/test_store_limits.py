"""Issue 8 item 6: the session store is bounded by bytes per session and in total, least recently
used first out, and an evicted conversation is reported, never continued as if it were new."""

import asyncio
import json

import pytest

from proxy.errors import ProxyError
from proxy.store import MemoryStore, StoredResponse
from proxy.store.byte_lru import ByteLRU, TooLarge
from tests.harness import Stack


def test_byte_budgets_evict_least_recently_used() -> None:
    now = [0.0]
    lru = ByteLRU(max_bytes=100, session_bytes=60, ttl=50, clock=lambda: now[0])
    lru.put(("a", "k", "1"), [b"x" * 30])
    lru.put(("a", "k", "2"), [b"x" * 30])
    assert lru.get(("a", "k", "1"))  # 1 is now more recent than 2
    lru.put(("a", "k", "3"), [b"x" * 30])  # session a over 60: its least recently used (2) goes
    assert lru.get(("a", "k", "2")) is None and lru.evicted(("a", "k", "2"))
    lru.put(("b", "k", "1"), [b"x" * 50])  # total over 100: the oldest of anyone's goes
    assert lru.total <= 100 and lru.session_size("a") + lru.session_size("b") == lru.total
    with pytest.raises(TooLarge):
        lru.put(("c", "k", "1"), [b"x" * 61])
    now[0] = 100  # expired entries go without a tombstone
    assert lru.get(("b", "k", "1")) is None and not lru.evicted(("b", "k", "1"))


def test_memory_store_keeps_within_its_bytes() -> None:
    async def go() -> None:
        store = MemoryStore(max_bytes=200_000, session_bytes=100_000)
        for i in range(100):
            await store.put_response(f"s{i % 5}", StoredResponse(f"r{i}", {"id": f"r{i}"},
                                                                  [{"role": "user", "parts": [{"text": "x" * 5000}]}]))
        assert store.entries.total <= 200_000
        assert await store.get_response("s4", "r99") is not None and await store.get_response("s0", "r0") is None
        with pytest.raises(ProxyError) as e:
            await store.put_response("s0", StoredResponse("huge", {}, [{"text": "x" * 200_000}]))
        assert e.value.status == 413
    asyncio.run(go())


def test_an_evicted_conversation_is_reported_not_restarted() -> None:
    async def go() -> None:
        store = MemoryStore(max_bytes=50_000, session_bytes=50_000)
        await store.append_conversation("s", "old", [{"role": "user", "parts": [{"text": "hello"}]}])
        for i in range(20):
            await store.append_conversation("s", f"c{i}", [{"role": "user", "parts": [{"text": "y" * 5000}]}])
        with pytest.raises(ProxyError) as e:
            await store.get_conversation("s", "old")
        assert e.value.status == 409 and e.value.code == "conversation_evicted"
        with pytest.raises(ProxyError):
            await store.append_conversation("s", "old", [{"role": "model", "parts": [{"text": "hi"}]}])
        assert await store.get_conversation("s", "never-seen") == []  # a new name is a new conversation
    asyncio.run(go())


def test_conversation_name_with_crlf_is_refused_before_upstream() -> None:
    stack = Stack()
    try:
        import urllib.error
        import urllib.request
        before = len(stack.seen)
        req = urllib.request.Request(stack.url + "/v1/gemini", method="POST", headers={
            "content-type": "application/json", "x-goog-api-key": "k"}, data=json.dumps(
            {"model": "gemini-2.5-flash", "input": "hi", "conversation": "a\r\nX-Injected: 1"}).encode())
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 400 and json.loads(e.value.read())["error"]["status"] == "INVALID_ARGUMENT"
        assert len(stack.seen) == before
    finally:
        stack.close()
