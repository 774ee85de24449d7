"""wire/resent_items.converted: a resent Chat or Anthropic message's typed items are made once per
client scope and kept beside its check (issue 62: their conversion was a tenth of a large request's
instructions). What a request gets is what a conversion from scratch gives; a kept item is never
changed, not even by Anthropic's joining of consecutive user turns; another scope makes its own;
over HTTP, a stateless client's next turn converts only its new messages and Gemini is sent what it
was sent the turn before. The conftest checks after every test that no kept item changed in place."""

import functools
import uuid
from typing import Any

import anthropic
import openai
import orjson
import pytest

from proxy.anthropic import routes as anthropic_routes
from proxy.anthropic import to_items as anthropic_items
from proxy.chat import routes as chat_routes
from proxy.chat import to_items as chat_items
from proxy.server.errors import _parsed, validate
from proxy.to_gemini.input_to_contents import own_items
from proxy.wire import resent_items
from proxy.wire.anthropic import MessagesRequest
from proxy.wire.chat import ChatRequest
from proxy.wire.resent_items import converted
from proxy.wire.shared_tools import parse_with_tools
from tests.harness import Stack
from tests.shared_tools_check import changed_resent_items
from tests.test_resent_items import held_and_counted


@pytest.fixture(autouse=True)
def split_every_history(monkeypatch):
    """The tests' histories are short: split them all the same (the threshold has a test of its own)."""
    monkeypatch.setattr(resent_items, "RESENT_MIN_BYTES", 0)


def _chat(tag: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": f"be brief {tag}"},
            {"role": "user", "content": [{"type": "text", "text": f"list {tag}"}, {"type": "text", "text": "now"}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{tag}", "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}}]},
            {"role": "tool", "tool_call_id": f"call_{tag}", "content": f"{tag}/a.py"},
            {"role": "assistant", "content": f"done {tag}"}]


def _anthropic(tag: str) -> list[dict[str, Any]]:
    """Consecutive user turns (joined into one) around a call and its result."""
    return [{"role": "user", "content": f"list {tag}"},
            {"role": "user", "content": [{"type": "text", "text": f"quickly {tag}",
                                          "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "sure"},
                                              {"type": "tool_use", "id": f"toolu_{tag}", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{tag}", "content": f"{tag}/a"},
                                         {"type": "text", "text": f"and? {tag}"}]},
            {"role": "user", "content": f"more {tag}"},
            {"role": "assistant", "content": f"ok {tag}"}]


def _items_of(model: Any, module: Any, raw: bytes, scope: str, count: list[int]) -> list[Any]:
    """The route's way: the body parsed for `scope`, checked by `model`, each message converted by
    `module`'s message_items (counted in `count`) unless kept."""
    body = parse_with_tools(raw, _parsed, ("messages", scope))
    req = validate(model, body)

    def convert(i: int, m: Any) -> list[Any]:
        count.append(i)
        return own_items(module.message_items(i, m))
    return converted(body["messages"], req.messages, model, module.KEPT_ITEMS, convert)


_chat_items = functools.partial(_items_of, ChatRequest, chat_items)
_anthropic_items = functools.partial(_items_of, MessagesRequest, anthropic_items)


CASES = [("chat", _chat, {"model": "m"}, _chat_items, lambda ms: chat_items.chat_messages_to_items(ms), ChatRequest),
         ("anthropic", _anthropic, {"model": "m", "max_tokens": 9}, _anthropic_items,
          lambda ms: anthropic_items.messages_to_items(ms), MessagesRequest)]


@pytest.mark.parametrize(("name", "history", "rest", "items_of", "from_scratch", "model"), CASES,
                         ids=[c[0] for c in CASES])
def test_a_resent_messages_items_are_made_once_per_scope(name, history, rest, items_of, from_scratch, model) -> None:
    tag = uuid.uuid4().hex[:8]
    old = history(tag)
    new = [*old, {"role": "user", "content": f"next {tag}"}]
    scope, other = f"c-{tag}0000", f"c-{tag}1111"
    first: list[int] = []
    turn1 = items_of(orjson.dumps({**rest, "messages": old}), scope, first)
    assert first == list(range(len(old)))
    second: list[int] = []
    turn2 = items_of(orjson.dumps({**rest, "messages": new}), scope, second)
    assert second == [len(old)], "only the new message is converted"
    assert all(a is b for a, b in zip(turn1, turn2, strict=False)), "the kept items themselves"
    elsewhere: list[int] = []
    turn3 = items_of(orjson.dumps({**rest, "messages": new}), other, elsewhere)
    assert elsewhere == list(range(len(new))), "another client key's are its own"
    assert not any(a is b for a, b in zip(turn2, turn3, strict=True))
    # What the route then sends on: what a conversion from scratch of the same body gives.
    whole = validate(model, _parsed(orjson.dumps({**rest, "messages": new}))).messages
    flat = [item for part in turn2 for item in part]
    if name == "anthropic":
        flat = anthropic_items.joined(turn2)
    assert [item.wire() for item in flat] == from_scratch(whole)
    assert not changed_resent_items()


def test_joining_consecutive_user_turns_leaves_the_kept_items_as_they_were() -> None:
    """Anthropic's consecutive user turns are one Gemini turn: the joined item is a new one; the two
    kept ones, which the client's next turn shares, keep their own content."""
    tag = uuid.uuid4().hex[:8]
    raw = orjson.dumps({"model": "m", "max_tokens": 9, "messages": _anthropic(tag)})
    per = _anthropic_items(raw, f"c-{tag}0000", [])
    before = [[orjson.dumps(item.wire()) for item in part] for part in per]
    items = anthropic_items.joined(per)
    assert [i.wire().get("role") for i in items] == ["user", "assistant", None, None, "user", "assistant"]
    assert [p["text"] for p in items[0].wire()["content"]] == [f"list {tag}", f"quickly {tag}"]
    assert [p["text"] for p in items[4].wire()["content"]] == [f"and? {tag}", f"more {tag}"]
    assert items[0] is not per[0][0] and items[4] is not per[3][1]
    assert [[orjson.dumps(item.wire()) for item in part] for part in per] == before
    again = anthropic_items.joined(_anthropic_items(raw, f"c-{tag}0000", []))
    assert [i.wire() for i in again] == [i.wire() for i in items]


def test_over_http_a_stateless_clients_next_turn_converts_only_its_new_messages(monkeypatch) -> None:
    """The real routes, the official SDKs with strict validation: a second turn converts its one new
    message, and Gemini is sent for the rest what it was sent the turn before."""
    calls: dict[str, list[int]] = {"chat": [], "anthropic": []}

    def counting(kind: str, convert: Any) -> Any:
        def count(i: int, m: Any) -> list[dict[str, Any]]:
            calls[kind].append(i)
            return convert(i, m)
        return count
    monkeypatch.setattr(chat_routes, "message_items", counting("chat", chat_items.message_items))
    monkeypatch.setattr(anthropic_routes, "message_items", counting("anthropic", anthropic_items.message_items))
    stack = Stack()
    try:
        tag = uuid.uuid4().hex[:8]
        client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True,
                               max_retries=0)
        sent = []
        history = _chat(tag)
        for turn in ("first", "second"):
            history = [*history, {"role": "user", "content": f"{turn} turn {tag}"}]
            reply = client.chat.completions.create(model="gemini-3-flash-preview", messages=history)  # type: ignore[arg-type]
            assert reply.choices[0].message.content
            sent.append(stack.last_body()["contents"])
            history = [*history, {"role": "assistant", "content": f"ok {tag}"}]
        assert calls["chat"] == [*range(6), 6, 7], "the second turn: its two new messages only"
        assert sent[1][:len(sent[0])] == sent[0]
        ant = anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0)
        messages = _anthropic(tag)
        for turn in ("first", "second"):
            messages = [*messages, {"role": "user", "content": f"{turn} turn {tag}"}]
            answer = ant.messages.create(model="gemini-3-flash-preview", max_tokens=50, messages=messages)  # type: ignore[arg-type]
            assert answer.content
            sent.append(stack.last_body()["contents"])
            messages = [*messages, {"role": "assistant", "content": f"ok {tag}"}]
        # (message 7, the assistant's "ok", has the text of message 5: the same kept items, twice; every
        # text carries the test's tag: no other test's kept message is one of these)
        assert calls["anthropic"] == [*range(7), 8]
        assert sent[3][:len(sent[2])] == sent[2]
        assert not changed_resent_items()
    finally:
        stack.close()


@pytest.mark.parametrize("kind", ["chat", "anthropic"])
def test_an_items_count_covers_its_check_and_its_kept_items(kind: str) -> None:
    """The bytes a resent message is counted for (resent_items' TEXT_FACTOR and ENTRY_OVERHEAD) cover
    its text, the objects parsed from it, the route's check and the typed items kept beside it
    (tracemalloc), for an agent's history (scripts/bench_tails.py's large body)."""
    from scripts.bench_tails import LARGE, body

    raw = orjson.dumps(body(kind, LARGE))
    items_of = _chat_items if kind == "chat" else _anthropic_items
    items_of(raw, "c-tools-first", [])  # (its tools' first sight: the body is parsed whole, its tools kept)
    held, counted = held_and_counted(lambda scope: items_of(raw, scope, []))
    assert counted > 0 and held <= counted, (held, counted)
