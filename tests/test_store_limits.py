"""Issue 8 item 6: the session store is bounded by bytes per session and in total, least recently
used first out, and an evicted conversation is reported, never continued as if it were new."""

import asyncio
import json

import openai
import pytest

from proxy.errors import ProxyError
from proxy.store import MemoryStore, StoredResponse
from proxy.store.byte_lru import DOC_OVERHEAD, ENTRY_OVERHEAD, ByteLRU, TooLarge
from tests.harness import Stack


def test_byte_budgets_evict_least_recently_used() -> None:
    e = ENTRY_OVERHEAD + 3 + 30 + DOC_OVERHEAD  # what an entry of one 30-byte document holds
    now = [0.0]
    lru = ByteLRU(max_bytes=3 * e + 10, session_bytes=2 * e, ttl=50, clock=lambda: now[0])
    lru.put(("a", "k", "1"), [b"x" * 30])
    lru.put(("a", "k", "2"), [b"x" * 30])
    assert lru.total == 2 * e, "each entry counts what holding it costs"
    assert lru.get(("a", "k", "1"))  # 1 is now more recent than 2
    lru.put(("a", "k", "3"), [b"x" * 30])  # session a over its budget: its least recently used (2) goes
    assert lru.get(("a", "k", "2")) is None and lru.evicted(("a", "k", "2"))
    lru.put(("b", "k", "1"), [b"x" * 50])  # total over budget: the oldest of anyone's goes
    assert lru.total <= 3 * e + 10 and lru.session_size("a") + lru.session_size("b") == lru.total
    with pytest.raises(TooLarge):
        lru.put(("c", "k", "1"), [b"x" * 2 * e])
    now[0] = 100  # expired entries go without a tombstone
    assert lru.get(("b", "k", "1")) is None and not lru.evicted(("b", "k", "1"))


def test_entries_are_held_in_objects_of_their_own_size() -> None:
    """orjson's output keeps its 8 KiB working buffer: held as it came, a 1.7 KB document cost 8 KB."""
    import orjson

    def rss() -> int:
        return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) * 1024

    lru = ByteLRU(max_bytes=1 << 30, session_bytes=1 << 30, ttl=3600)
    before = rss()
    for i in range(20_000):  # as the store gets them: each fresh from orjson
        lru.put(("s", "response", f"r{i}"), [orjson.dumps({"i": i, "text": "x" * 1700})])
    grew = rss() - before
    assert grew <= lru.total * 1.3, (grew, lru.total)


def test_kept_entries_are_invisible_to_the_garbage_collector() -> None:
    """Every stored response is an entry: kept as objects the collector tracks (a dataclass and its
    list, as before), each collection of the process walked all of them. Kept as tuples of bytes and
    numbers, they are untracked by the collector's passes, also once read, touched and appended to."""
    import gc

    lru = ByteLRU(max_bytes=1 << 30, session_bytes=1 << 30, ttl=3600)
    for i in range(1000):
        lru.put(("s", "response", f"r{i}"), [b'{"i":%d}' % i])
    for i in range(0, 1000, 7):
        assert lru.get(("s", "response", f"r{i}")) == [b'{"i":%d}' % i]
        lru.append(("s", "response", f"r{i}"), b"[]", keep=2)
    gc.collect()
    gc.collect()  # a tuple is untracked once what it holds is: an entry's documents one pass, the entry the next
    tracked = sum(gc.is_tracked(entry) for entry in lru._all.values())
    assert tracked == 0, f"{tracked} of {len(lru)} entries are still tracked"
    got = lru.get(("s", "response", "r7"))
    assert got == [b'{"i":7}', b"[]"]
    got.append(b"changed")  # a reader's copy: the store is unchanged
    assert lru.get(("s", "response", "r7")) == [b'{"i":7}', b"[]"]


def test_storing_a_turn_input_leaves_no_reference_cycle() -> None:
    """strip_shared's walk was a recursive closure: a cycle (the function and its cells) that held the
    turn's input strings until the cyclic collector ran, tens of turns later under gc_tuning (issue 62:
    6 MB over a 150-turn chain of 40 KB turns). Reference counting alone frees what it used."""
    import gc

    from proxy.store.shared_input import restore_shared, strip_shared

    text = "x" * 1000
    contents = [{"role": "user", "parts": [{"text": text}]}]
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}]
    gc.collect()
    gc.disable()
    try:
        kept, shared = strip_shared(items, contents)
        assert kept[0]["content"][0]["text"] == "" and shared == [[[0, "content", 0, "text"], 0, 0]]
        assert restore_shared(kept, contents, shared) == items
        del kept, shared
        assert gc.collect() == 0
    finally:
        gc.enable()


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


# -- issue 24 item 2: a turn too large to keep is refused before Gemini is asked, or fails honestly ----

@pytest.fixture(scope="module")
def small_sessions(tmp_path_factory: pytest.TempPathFactory):
    """A real `serve` whose sessions may keep 64 KiB, in front of a real mock process."""
    from tests.servers import mock_gemini, proxy_instance

    tmp = tmp_path_factory.mktemp("small-sessions")
    mock, mock_url = mock_gemini(tmp)
    proc, url = proxy_instance(tmp, "small", mock_url, "--session-max-bytes", "64K", "--store-max-bytes", "1M")
    yield url, mock_url
    proc.stop()
    mock.stop()


def _mock_last_text(mock_url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(f"{mock_url}/mock/last") as r:
        body = json.load(r)["body"]
    return json.dumps(body["contents"])[-200:]


def test_an_input_too_large_to_keep_is_refused_before_the_upstream_call(small_sessions) -> None:
    import urllib.error
    import urllib.request

    url, mock_url = small_sessions
    c = openai.OpenAI(base_url=url + "/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    c.responses.create(model="gemini-2.5-flash", input="a small marker turn")
    big = "x" * 100_000
    with pytest.raises(openai.APIStatusError) as e:
        c.responses.create(model="gemini-2.5-flash", input=big)
    assert e.value.status_code == 413 and e.value.body["code"] == "session_too_large"
    assert e.value.body["param"] == "input"
    assert "a small marker turn" in _mock_last_text(mock_url), "Gemini was never asked (nothing billed)"
    # Not asked to keep it: answered, not kept.
    assert c.responses.create(model="gemini-2.5-flash", input=big, store=False).status == "completed"
    # A /v1/gemini conversation whose history and this turn exceed the budget: refused first too.
    c.responses.create(model="gemini-2.5-flash", input="another small marker")
    req = urllib.request.Request(url + "/v1/gemini", headers={"content-type": "application/json"},
                                 data=json.dumps({"model": "gemini-2.5-flash", "input": big,
                                                  "conversation": "big"}).encode())
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req)
    assert err.value.code == 413 and "too large to keep" in json.load(err.value)["error"]["message"]
    assert "another small marker" in _mock_last_text(mock_url)


def test_an_answer_too_large_to_keep_is_never_reported_kept(small_sessions) -> None:
    """The answer itself pushes the turn past the budget: a stream ends response.failed (never
    response.completed with an id that was not stored); a whole answer is a 413 in the caller's shape."""
    url, _ = small_sessions
    c = openai.OpenAI(base_url=url + "/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    events = list(c.responses.create(model="gemini-2.5-flash", input="[[mock:bulk 100000]] go", stream=True))
    assert events[-1].type == "response.failed" and "too large to keep" in events[-1].response.error.message
    assert not any(e.type == "response.completed" for e in events)
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(events[-1].response.id)
    with pytest.raises(openai.APIStatusError) as e:
        c.responses.create(model="gemini-2.5-flash", input="[[mock:bulk 100000]] go")
    assert e.value.status_code == 413
    streamed = list(c.responses.create(model="gemini-2.5-flash", input="[[mock:bulk 100000]] go", stream=True,
                                       store=False))
    assert streamed[-1].type == "response.completed", "not asked to keep it: a success"


# -- issue 57 item 1: a turn too large to keep never costs the conversation before it ---------------

@pytest.fixture(scope="module", params=["memory", "redis"])
def megabyte_sessions(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A real `serve` with `--session-max-bytes 1M` over its memory store or a real redis-server,
    in front of a real mock process."""
    from tests.servers import RedisServer, mock_gemini, proxy_instance

    tmp = tmp_path_factory.mktemp(f"mb-sessions-{request.param}")
    redis = RedisServer(tmp) if request.param == "redis" else None
    store = ["--store", redis.url] if redis else []
    mock, mock_url = mock_gemini(tmp)
    proc, url = proxy_instance(tmp, "mb", mock_url, "--session-max-bytes", "1M", "--store-max-bytes", "4M", *store)
    yield url, mock_url
    proc.stop()
    mock.stop()
    if redis:
        redis.stop()


def _gemini_turn(url: str, text: str, stream: bool = False) -> tuple[int, dict | str]:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url + "/v1/gemini", headers={"content-type": "application/json"},
                                 data=json.dumps({"model": "gemini-2.5-flash", "input": text, "stream": stream,
                                                  "conversation": "kept"}).encode())
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, (r.read().decode() if stream else json.load(r))
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_a_turn_too_large_to_keep_leaves_the_conversation_intact(megabyte_sessions) -> None:
    """The issue's reproduction: turn 1 is kept; a turn whose input fits but whose answer does not is
    answered by Gemini, then refused (413) saying its answer is not kept and the conversation is
    unchanged; turn 3 continues the conversation with turn 1 in it (it was 409 "evicted")."""
    url, mock_url = megabyte_sessions
    assert _gemini_turn(url, "turn one marker")[0] == 200
    status, body = _gemini_turn(url, "[[mock:bulk 700000]] " + "y" * 400_000)
    assert status == 413, body
    message = body["error"]["message"]
    assert "too large to keep" in message and "conversation is unchanged" in message
    status, streamed = _gemini_turn(url, "[[mock:bulk 700000]] " + "y" * 400_000, stream=True)
    assert status == 200 and "too large to keep" in streamed  # the stream ends with its error
    status, body = _gemini_turn(url, "turn three")
    assert status == 200, body
    assert "turn one marker" in json.dumps(_mock_last_body(mock_url)["contents"])
    assert "y" * 1000 not in json.dumps(_mock_last_body(mock_url)["contents"]), "the refused turn is not kept"


def _mock_last_body(mock_url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(f"{mock_url}/mock/last") as r:
        return json.load(r)["body"]


def test_a_response_too_large_to_keep_leaves_its_chain_intact(megabyte_sessions) -> None:
    """The same through Responses: the turn whose answer is too large is refused saying so and naming
    the turn before, which is unchanged and continues (whole and streamed)."""
    url, mock_url = megabyte_sessions
    c = openai.OpenAI(base_url=url + "/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    first = c.responses.create(model="gemini-2.5-flash", input="chain marker one")
    with pytest.raises(openai.APIStatusError) as e:
        c.responses.create(model="gemini-2.5-flash", previous_response_id=first.id,
                           input="[[mock:bulk 700000]] " + "y" * 400_000)
    assert e.value.status_code == 413 and f"'{first.id}' and the turns before it are unchanged" in e.value.message
    events = list(c.responses.create(model="gemini-2.5-flash", previous_response_id=first.id, stream=True,
                                     input="[[mock:bulk 700000]] " + "y" * 400_000))
    assert events[-1].type == "response.failed" and "too large to keep" in events[-1].response.error.message
    assert c.responses.create(model="gemini-2.5-flash", previous_response_id=first.id,
                              input="and then?").status == "completed"
    assert "chain marker one" in json.dumps(_mock_last_body(mock_url)["contents"])
