"""wire/resent_items.py: a stateless client's history items, parsed and checked once per client scope
(issue 62). The body a split parse gives is the whole parse's (or its error); an item the same scope
sent before gets the same objects and skips parse_input's check; another scope's does not; a stored
chain's items are not kept; the cache stays within its bytes; its count covers what it holds. The
conftest checks after every test that no kept item was changed in place."""

import json
import tracemalloc
import uuid
from typing import Any

import anthropic
import openai
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.errors import ProxyError
from proxy.server.errors import _parsed, validate
from proxy.to_gemini import input_to_contents
from proxy.to_gemini.input_to_contents import INPUT_ITEM, parse_input
from proxy.wire import resent_items
from proxy.wire.anthropic import MessagesRequest
from proxy.wire.chat import ChatRequest
from proxy.wire.resent_items import ResentItems, SizedLRU, parse_items
from proxy.wire.shared_tools import parse_with_tools
from scripts.bench_tails import LARGE, body
from tests.harness import Stack
from tests.shared_tools_check import changed_resent_items
from tests.test_shared_tools import _JSON, parsed_as_whole

SCOPE = "c-0123456789ab"


@pytest.fixture(autouse=True)
def split_every_history(monkeypatch):
    """The tests' histories are short: split them all the same (the threshold has a test of its own)."""
    monkeypatch.setattr(resent_items, "RESENT_MIN_BYTES", 0)


def test_a_short_history_is_parsed_with_the_body(monkeypatch) -> None:
    monkeypatch.setattr(resent_items, "RESENT_MIN_BYTES", 2048)
    short = _history(uuid.uuid4().hex[:8])
    long = short + [{"type": "message", "role": "user", "content": "x" * 2048}]
    assert type(_parse(orjson.dumps({"model": "m", "input": short}))["input"]) is list
    assert type(_parse(orjson.dumps({"model": "m", "input": long}))["input"]) is ResentItems


def _parse(raw: bytes, scope: str = SCOPE) -> Any:
    return parse_with_tools(raw, _parsed, ("input", scope))


def _history(tag: str) -> list[dict[str, Any]]:
    """Items of their own for each test (the cache is the process's)."""
    return [{"type": "message", "role": "user", "content": f"task {tag}"},
            {"type": "function_call", "call_id": f"call_{tag}", "name": "ls", "arguments": json.dumps({"dir": tag})},
            {"type": "function_call_output", "call_id": f"call_{tag}", "output": f"{tag}/a.py"},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": f"Two files ({tag})."}]}]


@st.composite
def _bodies(draw: st.DrawFn) -> bytes:
    """A JSON object with an `input` member anywhere among its keys: an array of objects, of anything,
    or not an array; numbers past 64 bits, NaN, lone surrogates and deep nesting included, which the
    whole parse refuses or reads exactly."""
    members = draw(st.lists(st.tuples(st.text(max_size=6).filter(lambda k: k != "input"), _JSON), max_size=3))
    item = st.dictionaries(st.text(max_size=6), _JSON, max_size=4)
    odd = st.sampled_from(['{"x":NaN}', '{"n":18446744073709551616}', '{"s":"\\ud800"}', '{"f":1e400}',
                           '{"d":' + "[" * 99 + "]" * 99 + "}", '{"d":' + "[" * 96 + "]" * 96 + "}", "[1]", '"s"'])
    texts = draw(st.lists(item.map(json.dumps) | odd, max_size=5))
    history = draw(st.sampled_from(["[" + ",".join(texts) + "]", '"hi"', "null", "{}"]))
    members.insert(draw(st.integers(0, len(members))), ("input", None))
    spaced = draw(st.booleans())
    return ("{" + (", " if spaced else ",").join(
        json.dumps(k) + (": " if spaced else ":") + (history if k == "input" else json.dumps(v))
        for k, v in members) + "}").encode("utf-8", "surrogatepass")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=_bodies())
def test_a_body_whose_items_are_split_is_what_the_whole_parse_gives(raw: bytes) -> None:
    parsed_as_whole(_parse, raw)


def test_an_item_sent_again_by_the_same_scope_is_parsed_and_checked_once(monkeypatch) -> None:
    old = _history(uuid.uuid4().hex[:8])
    first = _parse(orjson.dumps({"model": "m", "input": old}))["input"]
    assert type(first) is ResentItems and first == old
    typed = parse_input(first)
    assert [k.checked[INPUT_ITEM] for k in first.kept] == typed

    checked: list[Any] = []
    real = input_to_contents.ITEM_LISTS
    spy = {model: type("Spy", (), {"validate_python": lambda self, raw, a=adapter: checked.extend(raw)
                                   or a.validate_python(raw)})() for model, adapter in real.items()}
    monkeypatch.setattr(input_to_contents, "ITEM_LISTS", spy)
    new = [{"type": "message", "role": "user", "content": "and now?"}]
    second = _parse(orjson.dumps({"model": "m", "input": old + new}))["input"]
    assert all(a is b for a, b in zip(second[:4], first, strict=True)), "the same objects"
    again = parse_input(second)
    assert checked == new, "only the new item was checked"
    assert again[:4] == typed and all(a is b for a, b in zip(again, typed, strict=False))
    assert again == parse_input(list(old + new)), "what a list of its own gives"


def test_another_scope_gets_objects_of_its_own() -> None:
    """Nobody crosses: the same text from another client key is parsed again, and nothing of one
    scope's entries is found under another's."""
    old = _history(uuid.uuid4().hex[:8])
    raw = orjson.dumps({"model": "m", "input": old})
    mine, theirs = _parse(raw, "c-aaaaaaaaaaaa")["input"], _parse(raw, "c-bbbbbbbbbbbb")["input"]
    assert mine == theirs and not any(a is b for a, b in zip(mine, theirs, strict=True))
    scopes = {scope for scope, text in resent_items.kept_items.entries if text == orjson.dumps(old[0])}
    assert scopes == {"c-aaaaaaaaaaaa", "c-bbbbbbbbbbbb"}


def test_a_stored_chains_items_are_not_kept_and_a_big_item_is_not_in_the_item_cache() -> None:
    """(A big item is taken from its scope's recent history, which counts it: not shown here, each
    parse is of another scope.)"""
    old = _history(uuid.uuid4().hex[:8])
    _parse(orjson.dumps({"model": "m", "previous_response_id": "resp_1", "input": old}))
    kept = resent_items.kept_items.entries
    assert not any(text == orjson.dumps(i) for i in old for _, text in kept)
    assert resent_items.recent_histories.get(SCOPE) is None or not any(
        h.text.startswith(orjson.dumps(old)[:-1]) for h in resent_items.recent_histories.get(SCOPE).histories)
    big = [{"type": "message", "role": "user", "content": "x" * (resent_items.MAX_ITEM_BYTES + 1)}]
    one, two = (_parse(orjson.dumps({"model": "m", "input": big}), f"c-{uuid.uuid4().hex[:12]}")["input"]
                for _ in range(2))
    assert one == two == big and one[0] is not two[0], "not in the item cache"
    assert not any(text == orjson.dumps(big[0]) for _, text in kept)


def test_the_cache_stays_within_its_bytes_least_recent_first() -> None:
    cache = SizedLRU(10_000)
    for i in range(100):
        kept = resent_items.Kept({"i": i}, 1_000)
        cache.put(("s", b"%d" % i), kept)
        assert cache.bytes <= cache.max_bytes
    assert cache.get(("s", b"95")) is not None and cache.get(("s", b"85")) is None
    cache.put(("s", b"100"), resent_items.Kept({}, 1_000))
    assert cache.get(("s", b"90")) is None, "90 was the least recent"
    assert all(cache.get(("s", b"%d" % i)) is not None for i in (91, 95, 99, 100)), "95 was read: it stays"
    assert cache.bytes == sum(k.size for k in cache.entries.values()) == 10_000


def held_and_counted(make: Any, caches: tuple[Any, ...] | None = None) -> tuple[int, int]:
    """What `make(scope)` (for a new client scope) leaves held (tracemalloc) and what `caches` (the item
    caches) count it for, in bytes."""
    caches = caches or (resent_items.kept_items, resent_items.recent_histories)
    before_bytes = sum(c.bytes for c in caches)
    scope = f"c-{uuid.uuid4().hex[:12]}"
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        made = make(scope)
        del made
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    return held, sum(c.bytes for c in caches) - before_bytes


def test_an_items_count_covers_what_holding_it_takes() -> None:
    """The bytes an item is counted for (TEXT_FACTOR, ENTRY_OVERHEAD) against what its text, the
    objects parsed from it, parse_input's typed item and its entry take (tracemalloc), for an agent's
    history (scripts/bench_tails.py's large body: calls, results, messages)."""
    raw = orjson.dumps(body("responses", LARGE)["input"])

    def make(scope: str) -> Any:
        parsed = parse_items(raw, scope, True, 98)
        assert parsed is not None
        parse_input(parsed)
    held, counted = held_and_counted(make)
    assert counted > 0 and held <= counted, (held, counted)


def test_a_bad_item_among_known_ones_is_a_400_naming_its_index() -> None:
    old = _history(uuid.uuid4().hex[:8])
    parse_input(_parse(orjson.dumps({"model": "m", "input": old}))["input"])
    bad = old[:2] + [{"type": "function_call_output", "call_id": 5, "output": "x"}] + old[2:]
    for parse in (lambda raw: _parse(raw)["input"], lambda raw: list(_parsed(raw)["input"])):
        with pytest.raises(ProxyError) as e:
            parse_input(parse(orjson.dumps({"model": "m", "input": bad})))
        assert e.value.param == "input[2].call_id", e.value.param


def test_a_stateless_clients_turns_over_http_reuse_its_items_per_client_key() -> None:
    """The real route, the openai SDK's own requests, two client keys: each key's second turn finds
    its first turn's items (under its own scope only), and Gemini is sent what it was sent before."""
    alice, bob = "alice-key-" + uuid.uuid4().hex[:16], "bob-key-" + uuid.uuid4().hex[:16]
    stack = Stack(keys=[alice, bob])
    try:
        history = _history(uuid.uuid4().hex[:8])
        texts = {orjson.dumps(i) for i in history}
        sent = []
        for key in (alice, bob):
            c = openai.OpenAI(base_url=f"{stack.url}/v1", api_key=key, _strict_response_validation=True,
                              max_retries=0)
            for turn in ("first", "second"):
                c.responses.create(model="gemini-3-flash-preview", input=history + [  # type: ignore[arg-type]
                    {"type": "message", "role": "user", "content": f"{turn} turn"}], store=False)
                sent.append(stack.last_body()["contents"])
        scopes = {scope for scope, text in resent_items.kept_items.entries if text in texts}
        assert len(scopes) == 2, scopes  # one per client key, and never the unscoped ""
        assert sent[0][:-1] == sent[1][:-1] == sent[2][:-1] == sent[3][:-1]
    finally:
        stack.close()


def _chat_history(tag: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": f"be brief {tag}"}, {"role": "user", "content": f"list {tag}"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{tag}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"call_{tag}", "content": f"{tag}/a.py"}]


def _anthropic_history(tag: str) -> list[dict[str, Any]]:
    cache = {"type": "ephemeral"}
    return [{"role": "user", "content": [{"type": "text", "text": f"list {tag}", "cache_control": cache}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{tag}", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{tag}",
                                          "content": f"{tag}/a"}]}]


@pytest.mark.parametrize(("model", "history", "rest"), [
    (ChatRequest, _chat_history, {"model": "m"}),
    (MessagesRequest, _anthropic_history, {"model": "m", "max_tokens": 10})])
def test_resent_messages_are_checked_once_and_give_what_the_whole_check_gives(model, history, rest) -> None:
    """Chat's and Anthropic's messages (validate's per-item path): the same request model, field for
    field, as the whole body's check; an item checked before is not checked again; a bad item, new or
    among known ones, is the whole check's 400."""
    def parse(raw: bytes) -> Any:
        return parse_with_tools(raw, _parsed, ("messages", SCOPE))

    old = history(uuid.uuid4().hex[:8])
    for messages in (old, old + [{"role": "user", "content": "next"}]):
        raw = orjson.dumps({**rest, "messages": messages})
        split, whole = validate(model, parse(raw)), validate(model, _parsed(raw))
        assert split == whole and split.model_fields_set == whole.model_fields_set
    again = parse(orjson.dumps({**rest, "messages": old}))
    known = again["messages"]
    assert all(model in k.checked for k in known.kept), "each item's check was kept"
    assert validate(model, again).messages[0] is known.kept[0].checked[model], "and used"
    bad_ones = [[*old[:1], {"role": "nobody", "content": "x"}, *old[1:]], [*old, {"content": "no role"}], [],
                [{"role": "user", "content": 5}]]
    for messages in bad_ones:
        raw = orjson.dumps({**rest, "messages": messages})
        outcomes = []
        for p in (parse, _parsed):
            try:
                outcomes.append(validate(model, p(raw)))
            except ProxyError as e:
                outcomes.append((e.message, e.param))
        assert outcomes[0] == outcomes[1], outcomes
        assert messages == [] or type(outcomes[0]) is tuple, "refused"


def test_chat_and_anthropic_turns_over_http_reuse_their_messages(stack: Stack) -> None:
    """The real routes, the official SDKs: the second turn's known messages come from the cache, and
    Gemini is sent for them what it was sent the turn before."""
    tag = uuid.uuid4().hex[:8]
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    sent = []
    for turn in ("first", "second"):
        client.chat.completions.create(model="gemini-3-flash-preview", messages=_chat_history(tag) + [  # type: ignore[operator]
            {"role": "user", "content": f"{turn} turn"}])
        sent.append(stack.last_body()["contents"])
    ant = anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0)
    for turn in ("first", "second"):
        ant.messages.create(model="gemini-3-flash-preview", max_tokens=50, messages=_anthropic_history(tag) + [  # type: ignore[operator]
            {"role": "assistant", "content": "ok"}, {"role": "user", "content": f"{turn} turn"}])
        sent.append(stack.last_body()["contents"])
    assert sent[0][:-1] == sent[1][:-1] and sent[2][:-1] == sent[3][:-1]
    by_text = {text: kept for (_, text), kept in resent_items.kept_items.entries.items()}
    assert ChatRequest in by_text[orjson.dumps(_chat_history(tag)[2])].checked
    assert MessagesRequest in by_text[orjson.dumps(_anthropic_history(tag)[1])].checked


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(st.tuples(st.integers(0, 6), st.lists(st.integers(0, 3), max_size=4),
                                st.sampled_from([(",", ":"), (", ", ": "), (" ,\n ", " : ")])), min_size=1, max_size=6))
def test_a_history_that_shares_items_with_a_recent_one_reads_as_a_parse_of_its_own(turns) -> None:
    """Turns of one scope that keep some of the last history's items (an agent appends; a client that
    edits an item, Claude Code moving its cache_control, keeps fewer) and add others, written compact,
    spaced or with newlines: each gives what parsing its text gives, and each item's recorded end is
    where its text ends."""
    scope = f"c-{uuid.uuid4().hex[:12]}"
    history: list[Any] = []
    before: list[Any] = []
    spelled = None
    with pytest.MonkeyPatch.context() as m:
        m.setattr(resent_items, "kept_items", SizedLRU(0))  # no item cache: what is shared came from the recent
        for keep, added, separators in turns:
            history = history[:keep] + [{"n": n, "t": "x" * n * 7, "deep": [{"a": [n]}]} for n in added]
            text = json.dumps(history, separators=separators).encode()
            got = parse_items(text, scope, True, 98)
            assert got == json.loads(text)
            same = min(keep, len(before)) if separators == spelled else 0  # (the same items, the same bytes)
            assert all(a is b for a, b in zip(got.kept[:same], before[:same], strict=True)), "taken from the recent"
            recent = resent_items.recent_histories.get(scope)
            if history:
                latest = recent.histories[0]
                assert latest.text == text and [k.value for k in latest.kept] == history
                ends = [0, *latest.ends]
                assert [json.loads(text[ends[i]:ends[i + 1]].lstrip(b"[, \n")) for i in range(len(history))] == history
            before, spelled = got.kept, separators


def test_the_conftest_check_sees_a_kept_item_changed_in_place() -> None:
    """The check after every test (tests/shared_tools_check.py) finds a kept item, a recent history's
    item and a typed item changed in place; put back, it finds nothing."""
    old = _history(uuid.uuid4().hex[:8])
    items = _parse(orjson.dumps({"model": "m", "input": old}))["input"]
    typed = parse_input(items)
    for change, undo in ((lambda: items[0].__setitem__("content", "changed"),
                          lambda: items[0].__setitem__("content", old[0]["content"])),
                         (lambda: typed[1].wire().__setitem__("name", "rm"),
                          lambda: typed[1].wire().__setitem__("name", "ls"))):
        change()
        try:
            assert changed_resent_items(), "a change in place went unseen"
        finally:
            undo()
    assert not changed_resent_items()
    with pytest.MonkeyPatch.context() as m:  # in a recent history only (no item cache)
        m.setattr(resent_items, "kept_items", SizedLRU(0))
        items = parse_items(orjson.dumps(_history(uuid.uuid4().hex[:8])), SCOPE, True, 98)
        items[2]["output"] = "changed"
        assert changed_resent_items()
        resent_items.recent_histories.clear()
