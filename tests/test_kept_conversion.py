"""to_gemini/kept_conversion.py: a stateless client's history continues the conversion of its last one
(issue 62: the history's conversion was a fifth of a large request's instructions). Whatever a request
continues, Gemini gets what a conversion from scratch gives, the repairs noted on every request; what
is kept never changes, not under the repairs that change the contents handed out; a changed call
record, tool name or item converts afresh; another scope never continues one's state; over HTTP, the
official SDKs' next turn is sent what a fresh proxy sends; a kept state's count covers what it holds.
The conftest checks after every test that each kept state is still what a fresh conversion gives."""

import json
import urllib.request
import uuid
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy.errors import PairingError, ProxyError
from proxy.journal import exchange
from proxy.signatures.call_record import CallRecord
from proxy.to_gemini import kept_conversion
from proxy.to_gemini.input_to_contents import fresh_state, input_to_contents, parse_input
from proxy.tools.prepare_tools import prepare_tools
from proxy.wire import resent_items
from tests.harness import Stack
from tests.shared_tools_check import changed_kept_conversions
from tests.test_resent_items import held_and_counted

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
TOOLS = [{"type": "function", "name": "ls", "parameters": {"type": "object", "properties": {}}},
         {"type": "function", "name": "dash/search", "parameters": {"type": "object", "properties": {}}},
         {"type": "custom", "name": "apply_patch", "description": "patch"}]


def _history(tag: str) -> list[dict[str, Any]]:
    """An agent's history with every kind of step the builder has: instructions, text and media,
    single and parallel calls, a custom tool, a result with a `$ref` key, a result with an image,
    an error result, reasoning, a subagent's message."""
    image = {"type": "input_image", "image_url": "data:image/png;base64," + PNG}
    return [
        {"type": "message", "role": "developer", "content": f"be brief {tag}"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"look {tag}"}, image]},
        {"type": "reasoning", "id": f"rs_{tag}", "summary": []},
        {"type": "function_call", "call_id": f"c1_{tag}", "name": "ls", "arguments": '{"path": "."}'},
        {"type": "function_call_output", "call_id": f"c1_{tag}", "output": f"a.py {tag}"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"two more {tag}"}]},
        {"type": "function_call", "call_id": f"c2_{tag}", "name": "ls", "arguments": '{"path": "src"}'},
        {"type": "function_call", "call_id": f"c3_{tag}", "name": "dash/search", "arguments": '{"q": "x"}'},
        {"type": "function_call_output", "call_id": f"c3_{tag}", "output": '{"$ref": "#/x"}'},
        {"type": "function_call_output", "call_id": f"c2_{tag}",
         "output": [{"type": "input_text", "text": "see"}, image]},
        {"type": "custom_tool_call", "call_id": f"c4_{tag}", "name": "apply_patch", "input": "*** Begin"},
        {"type": "function_call_output", "call_id": f"c4_{tag}", "output": "failed", "is_error": True},
        {"type": "message", "role": "user", "content": f"and now {tag}"},
        {"type": "function_call", "call_id": f"c5_{tag}", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": f"c5_{tag}", "output": "b.py"},
        {"type": "message", "role": "user", "content": f"last {tag}"},
    ]


def _convert(items: list[Any], model: str, scope: str | None, calls: dict[str, CallRecord] | None = None,
             names: Any = None) -> tuple[Any, list[str]]:
    """input_to_contents' contents and system as the route gets them (or its error), and the notes the
    request's journal exchange got."""
    notes: list[str] = []

    class Noted:
        def note(self, kind: str, message: str, **detail: Any) -> None:
            notes.append(kind)
    token = exchange.CURRENT.set(Noted())  # type: ignore[arg-type]
    try:
        conv = input_to_contents(items, calls=calls or {}, names=names if names is not None else
                                 prepare_tools(TOOLS).names, model=model, scope=scope)
        return (conv.contents, conv.system), notes
    except (PairingError, ProxyError) as e:
        return ("refused", e.message), notes
    finally:
        exchange.CURRENT.reset(token)


MODELS = ["gemini-2.5-flash", "gemini-3-flash-preview", "claude-sonnet-4-6"]  # (3: signs; claude: call ids)


@pytest.mark.parametrize("model", MODELS)
@given(cuts=st.lists(st.integers(min_value=1, max_value=16), min_size=1, max_size=6))
def test_every_continued_history_is_converted_as_a_fresh_one(model: str, cuts: list[int]) -> None:
    """Turns of one conversation, each the one before's items and more (or fewer: an edited history),
    its last item sent anew (the next turn's may differ): each as a fresh conversion makes it, with
    the same repairs noted in each turn's journal; the kept states stay as fresh ones."""
    tag = uuid.uuid4().hex[:8]
    raw = _history(tag)
    scope = f"s-{tag}"
    items = parse_input(raw)  # the kept items: the same objects turn after turn, as the routes get them
    for n in cuts:
        turn = items[:n - 1] + parse_input(raw[n - 1:n])  # (the last item: a new object of equal value)
        assert _convert(turn, model, scope) == _convert(turn, model, None)
    assert not changed_kept_conversions()


def test_a_turn_continues_the_last_and_converts_only_what_follows(monkeypatch) -> None:
    tag = uuid.uuid4().hex[:8]
    items = parse_input(_history(tag))
    scope = f"s-{tag}"
    _convert(items[:10], "gemini-2.5-flash", scope)
    state = kept_conversion.kept_conversions.get(scope).states[0]
    assert state.items == items[:9], "kept: the state before the last item"
    seen: list[int] = []
    original = kept_conversion.find

    def found(*args: Any) -> Any:
        got = original(*args)
        seen.append(len(got.items) if got is not None else 0)
        return got
    monkeypatch.setattr(kept_conversion, "find", found)
    assert _convert(items, "gemini-2.5-flash", scope) == _convert(items, "gemini-2.5-flash", None)
    assert seen[0] == 9, "continued from the turn before's state"
    states = kept_conversion.kept_conversions.get(scope).states
    assert len(states[0].items) == len(items) - 1 and state not in states, "replaced by the state it led to"
    assert states[0].contents[:len(state.contents) - 1] == state.contents[:-1]


def test_a_changed_record_name_or_item_converts_afresh() -> None:
    """The state was made with no record of a call, the tools of then, the items of then: a record that
    appeared since (its signature must reach Gemini), another tool list, an edited item are not continued."""
    tag = uuid.uuid4().hex[:8]
    items = parse_input(_history(tag))
    scope = f"s-{tag}"
    model = "gemini-3-flash-preview"
    _convert(items, model, scope)
    record = CallRecord(f"c1_{tag}", "ls", "ls", "gid-1", "sig-1", {"path": "."})
    with_record = _convert(items, model, scope, calls={f"c1_{tag}": record})
    assert with_record == _convert(items, model, None, calls={f"c1_{tag}": record})
    assert {"functionCall": {"name": "ls", "args": {"path": "."}, "id": "gid-1"}, "thoughtSignature": "sig-1"} in [
        p for c in with_record[0][0] for p in c["parts"]]
    # (a tool named as Gemini would name dash/search: dash/search's own Gemini name takes a suffix then)
    other = prepare_tools([{"type": "function", "name": "dash_search", "parameters": {"type": "object"}},
                           *TOOLS]).names
    assert other.to_gemini("dash/search") != prepare_tools(TOOLS).names.to_gemini("dash/search")
    assert _convert(items, model, scope, names=other) == _convert(items, model, None, names=other)
    edited = parse_input([*_history(tag)[:3], {"type": "message", "role": "user", "content": "edited"},
                          *_history(tag)[4:]])
    assert _convert(edited, model, scope) == _convert(edited, model, None)
    assert kept_conversion.find(scope, edited[:5] + items[5:], {}, prepare_tools(TOOLS).names.to_gemini_map) is None
    assert not changed_kept_conversions()


def test_a_scope_never_continues_anothers_state() -> None:
    tag = uuid.uuid4().hex[:8]
    items = parse_input(_history(tag))
    names = prepare_tools(TOOLS).names
    _convert(items, "gemini-2.5-flash", f"a-{tag}")
    assert kept_conversion.find(f"a-{tag}", items, {}, names.to_gemini_map) is not None
    assert kept_conversion.find(f"b-{tag}", items, {}, names.to_gemini_map) is None
    assert kept_conversion.kept_conversions.get(f"b-{tag}") is None


def test_the_repairs_change_what_a_request_gets_never_what_is_kept() -> None:
    """Claude on Antigravity's wire (ids on every call), Gemini 3 (the sentinel on unsigned calls), a
    `$ref` in a result, media in a result for a model without functionResponse.parts: every turn's
    repairs are made and noted again, and the kept state stays as the builder left it."""
    tag = uuid.uuid4().hex[:8]
    raw = _history(tag)
    for model in MODELS:
        scope = f"s-{tag}-{model}"
        items = parse_input(raw)
        first, notes1 = _convert(items, model, scope)
        again, notes2 = _convert(items, model, scope)
        assert first == again and notes1 == notes2 and notes1, model
        state = kept_conversion.kept_conversions.get(scope).states[0]
        fresh = fresh_state(state.items, {}, state.names)
        assert (state.contents, state.outputs, state.system) == (fresh.contents, fresh.outputs, fresh.system)
        assert not any("thoughtSignature" in p for c in state.contents for p in c["parts"]), "unsigned as built"
    assert not changed_kept_conversions()


def test_a_short_history_is_converted_whole(monkeypatch) -> None:
    monkeypatch.setattr(kept_conversion, "MIN_ITEMS", 8)
    tag = uuid.uuid4().hex[:8]
    items = parse_input(_history(tag))[:6]
    _convert(items, "gemini-2.5-flash", f"s-{tag}")
    assert kept_conversion.kept_conversions.get(f"s-{tag}") is None


def test_over_http_the_next_turn_is_sent_what_a_fresh_proxy_sends(monkeypatch) -> None:
    """The real route, the openai SDK with strict validation, a stateless agent loop of three turns (each
    the last one's input, its answer's items, a result): each turn but the first continues the last
    one's conversion, and Gemini gets what it gets with nothing kept; /metrics counts the cache."""
    monkeypatch.setattr(resent_items, "RESENT_MIN_BYTES", 0)
    stack = Stack()
    try:
        tag = uuid.uuid4().hex[:8]
        client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True,
                               max_retries=0)
        history: list[Any] = _history(tag)[:5]
        tools = [TOOLS[0]]
        sent = []
        for turn in range(3):
            history = [*history, {"type": "message", "role": "user",
                                  "content": f"turn {turn} {tag}: ls"}]
            reply = client.responses.create(model="gemini-2.5-flash", input=history, tools=tools,  # type: ignore[arg-type]
                                            store=False)
            body = stack.last_body()
            kept_conversion.kept_conversions.clear()  # the same turn, nothing kept: a fresh conversion's body
            client.responses.create(model="gemini-2.5-flash", input=history, tools=tools, store=False)  # type: ignore[arg-type]
            assert stack.last_body()["contents"] == body["contents"], turn
            sent.append(body)
            calls = [o for o in reply.output if o.type == "function_call"]
            assert calls, reply.output
            history = [*history, *[o.model_dump(exclude_none=True) for o in calls],
                       *[{"type": "function_call_output", "call_id": c.call_id, "output": f"ok {turn}"} for c in calls]]
        assert sent[2]["contents"][:len(sent[1]["contents"]) - 1] == sent[1]["contents"][:-1]
        with urllib.request.urlopen(stack.url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        held = float(next(line.split()[-1] for line in text.splitlines()
                          if line.startswith('gtp_cache_bytes{cache="conversions"}')))
        budget = float(next(line.split()[-1] for line in text.splitlines()
                            if line.startswith('gtp_cache_max_bytes{cache="conversions"}')))
        assert 0 < held <= budget == kept_conversion.CONVERSIONS_BYTES
        assert not changed_kept_conversions()
    finally:
        stack.close()


def test_a_kept_states_count_covers_what_it_holds() -> None:
    """The bytes a kept state is counted for cover the objects it holds beyond its items' (tracemalloc),
    for an agent's history (scripts/bench_tails.py's large body)."""
    from scripts.bench import TURN
    from scripts.bench_tails import LARGE, body

    raw = json.loads(json.dumps(body("responses", LARGE)).replace(TURN, "t"))
    items = parse_input(raw["input"])
    names = prepare_tools(raw["tools"]).names

    def keep(scope: str) -> None:
        input_to_contents(items, names=names, model="gemini-2.5-flash", scope=scope)
    held, counted = held_and_counted(keep, caches=(kept_conversion.kept_conversions,))
    assert counted > 0 and held <= counted, (held, counted)
    assert counted <= 3 * held, "and not many times over"


def _plain_history(tag: str) -> list[dict[str, Any]]:
    """A front-end's own kind of history: calls with ids, text results; nothing a repair changes in place
    on Gemini 2.5 (on Gemini 3 the sentinel signs its unsigned calls)."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": f"go {tag}"}]
    for i in range(6):
        items += [{"type": "function_call", "call_id": f"p{i}_{tag}", "name": "ls", "arguments": f'{{"n": {i}}}'},
                  {"type": "function_call_output", "call_id": f"p{i}_{tag}", "output": f"out {i} {tag}"}]
    return [*items, {"type": "message", "role": "user", "content": f"last {tag}"}]


def test_a_continued_history_shares_the_kept_turns_unless_a_repair_could_change_them() -> None:
    """Gemini 2.5 and a plain history: the continued turns are the kept ones themselves (no copy of each
    call's parts on every turn). Gemini 3 signs unsigned calls in place: its request gets copies, and
    the kept turns stay unsigned. Both as a fresh conversion makes them."""
    tag = uuid.uuid4().hex[:8]
    items = parse_input(_plain_history(tag))
    for model, shared in (("gemini-2.5-flash", True), ("gemini-3-flash-preview", False)):
        scope = f"s-{tag}-{model}"
        _convert(items[:-2], model, scope)
        state = kept_conversion.kept_conversions.get(scope).states[0]
        (contents, _), _ = got = _convert(items, model, scope)
        assert got == _convert(items, model, None), model
        head = state.contents[:-1]
        assert len(head) > 8 and all((a is b) is shared for a, b in zip(contents, head, strict=False)), model
        assert all(a == b for a, b in zip(contents, head, strict=False)) is shared, model  # (3: signed copies)
        assert not any("thoughtSignature" in p for c in state.contents for p in c["parts"]), model
    assert not changed_kept_conversions()


def test_a_stored_conversations_turns_are_left_as_they_were() -> None:
    """previous_response_id on a WebSocket continues the Conversation the connection kept (objects, which
    may share a kept state's turns): the sentinel Gemini 3 puts on an unsigned call goes on the request's
    copy, never on the stored turn."""
    from proxy.to_gemini.conversation import Conversation

    tag = uuid.uuid4().hex[:8]
    stored = [{"role": "user", "parts": [{"text": f"go {tag}"}]},
              {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}, "id": f"q_{tag}"}}]},
              {"role": "user", "parts": [{"functionResponse": {"name": "ls", "id": f"q_{tag}",
                                                               "response": {"output": "a.py"}}}]}]
    before = json.loads(json.dumps(stored))
    conv = input_to_contents(parse_input([{"type": "message", "role": "user", "content": f"more {tag}"}]),
                             prior=Conversation(stored, [], []), names=prepare_tools(TOOLS).names,
                             model="gemini-3-flash-preview")
    assert conv.contents[1]["parts"][0].get("thoughtSignature"), "signed for Gemini 3"
    assert stored == before, "the stored turns as they were"
