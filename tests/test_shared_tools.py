"""wire/shared_tools.py: a tools text seen before is parsed and checked once and shared. The body it
gives is the one the whole parse gives (or the same error); its tools skip a check they passed for
that wire model only; a route that changed them would be caught (tests/shared_tools_check.py, which
the conftest runs after every test)."""

import asyncio
import json
import uuid
from typing import Any

import openai
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.errors import ProxyError
from proxy.server import context
from proxy.server.errors import ON_LOOP_BYTES, _parsed, parse_body, validate
from proxy.tools.prepare_tools import _prepare, prepare_tools
from proxy.wire import shared_tools
from proxy.wire.chat import ChatRequest
from proxy.wire.json_body import split_member
from proxy.wire.responses import ResponsesRequest
from proxy.wire.shared_tools import SharedTools, parse_with_tools
from tests.harness import Stack
from tests.shared_tools_check import changed_shared_tools


def _tools(name: str = "get_weather") -> list[dict[str, Any]]:
    """A tool list of its own for each test (the cache is the process's)."""
    return [{"type": "function", "name": f"{name}_{uuid.uuid4().hex[:8]}", "description": "Weather in a city",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def _parse(raw: bytes) -> Any:
    return parse_with_tools(raw, _parsed)


def _outcome(parse: Any, raw: bytes) -> tuple[Any, ...]:
    """What a parse gives, keys in order, or the error it raises (message and field)."""
    try:
        body = parse(raw)
    except ProxyError as e:
        return ("error", e.message, e.param)
    return ("ok", list(body) if isinstance(body, dict) else None, body)


_LEAVES = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=8) | st.sampled_from(["\ud800", "\udfff"]))
_JSON = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                        max_size=4), max_leaves=12)


@st.composite
def _bodies(draw: st.DrawFn) -> bytes:
    """A JSON object's text, with or without `tools` (a list, or not), anywhere among its keys,
    written compact or spaced, escaped or as UTF-8; numbers past 64 bits and lone surrogates
    included, which the whole parse refuses or reads exactly."""
    members = draw(st.lists(st.tuples(st.text(max_size=6).filter(lambda k: k != "tools"), _JSON), max_size=4))
    tools = draw(st.none() | st.lists(_JSON, max_size=3) | _JSON)
    if tools is not None:
        members.insert(draw(st.integers(0, len(members))), ("tools", tools))
    spaced, ascii_only = draw(st.booleans()), draw(st.booleans())
    text = "{" + (", " if spaced else ",").join(
        json.dumps(k, ensure_ascii=ascii_only) + (": " if spaced else ":") + json.dumps(v, ensure_ascii=ascii_only)
        for k, v in members) + "}"
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=_bodies())
def test_a_split_body_is_what_the_whole_parse_gives(raw: bytes) -> None:
    """(A body msgspec cannot split, such as one with a lone surrogate, is parsed whole: not shared.)"""
    whole = _outcome(_parsed, raw)
    first, again = _outcome(_parse, raw), _outcome(_parse, raw)
    assert first == whole and again == whole  # the same value, keys in the same order, or the same error
    if whole[0] == "ok" and type(whole[2].get("tools")) is list and split_member(raw, "tools") is not None:
        one, two = _parse(raw)["tools"], _parse(raw)["tools"]
        assert type(one) is SharedTools and one is two, "a text seen before is parsed once, then shared"


def test_the_rest_of_a_body_is_still_checked_when_its_tools_are_shared() -> None:
    tools = orjson.dumps(_tools())
    assert type(_parse(b'{"model":"m","tools":' + tools + b"}")["tools"]) is SharedTools
    cases = [(b'{"x":NaN,"tools":' + tools + b"}", "a number JSON cannot carry"),
             (b'{"x":' + b"[" * 100 + b"]" * 100 + b',"tools":' + tools + b"}", "nested deeper"),
             (b'{"x":"\\ud800","tools":' + tools + b"}", "lone UTF-16 surrogate"),
             (b'{"x":1,"tools":' + tools + b"", "could not parse")]
    for raw, error in cases:
        for parse in (_parsed, _parse):
            with pytest.raises(ProxyError, match=error):
                parse(raw)
    big = _parse(b'{"n":18446744073709551616,"tools":' + tools + b"}")
    assert big["n"] == 2**64 and type(big["tools"]) is SharedTools


def test_refused_tools_are_never_kept() -> None:
    many = orjson.dumps([{"type": "function", "name": f"f{i}"} for i in range(513)])
    for _ in range(2):
        with pytest.raises(ProxyError, match="513 function declarations"):
            _parse(b'{"tools":' + many + b"}")
    assert many not in shared_tools._kept


def test_tools_that_are_not_a_list_are_not_kept() -> None:
    for raw in (b'{"tools":null}', b'{"tools":{"a":1}}', b'{"tools":"x"}'):
        assert _parse(raw) == _parsed(raw) and raw[9:-1] not in shared_tools._kept


def test_a_big_body_and_a_route_that_did_not_ask_parse_their_tools_every_time() -> None:
    tools = orjson.dumps(_tools())
    small = b'{"tools":' + tools + b"}"
    big = b'{"pad":"' + b"x" * ON_LOOP_BYTES + b'","tools":' + tools + b"}"
    assert type(asyncio.run(parse_body(small))["tools"]) is list, "not asked: a list of its own"
    assert type(asyncio.run(parse_body(big, shared_tools=True))["tools"]) is list, "parsed off the loop"
    assert type(asyncio.run(parse_body(small, shared_tools=True))["tools"]) is SharedTools


def test_tools_are_checked_once_per_wire_model() -> None:
    tools = _tools()
    text = orjson.dumps(tools)
    raw = orjson.dumps({"model": "m", "input": "hi", "tools": tools, "temperature": 0.5})
    first, second = validate(ResponsesRequest, _parse(raw)), validate(ResponsesRequest, _parse(raw))
    kept = shared_tools._kept[text]
    assert second == first and second.model_fields_set == first.model_fields_set and second.tools == tools
    assert second.tools is kept.checked[ResponsesRequest], "the second check skipped the tools"
    messages = [{"role": "user", "content": "hi"}]
    chat = validate(ChatRequest, _parse(orjson.dumps({"model": "m", "messages": messages, "tools": tools})))
    assert chat.tools == tools and set(kept.checked) == {ResponsesRequest, ChatRequest}


def test_the_rest_of_a_body_with_checked_tools_gets_the_same_400() -> None:
    tools = orjson.dumps(_tools())
    validate(ResponsesRequest, _parse(b'{"model":"m","tools":' + tools + b"}"))
    for raw, where in ((b'{"model":"m","temperature":"hot","tools":' + tools + b"}", "temperature"),
                       (b'{"tools":' + tools + b"}", "model"),
                       (b'{"model":"m","tool_choice":{"name":"x"},"tools":' + tools + b"}", "tool_choice.type")):
        errors = []
        for parse in (_parsed, _parse):
            with pytest.raises(ProxyError) as e:
                validate(ResponsesRequest, parse(raw))
            errors.append((e.value.message, e.value.param, e.value.code))
        assert errors[0] == errors[1] and errors[0][1] == where


def test_tools_a_model_refuses_are_refused_every_time() -> None:
    tools = orjson.dumps([{"type": "function", "name": 5}])
    for _ in range(2):
        with pytest.raises(ProxyError, match=r"tools\[0\]\.name"):
            validate(ResponsesRequest, _parse(b'{"model":"m","tools":' + tools + b"}"))
    assert not shared_tools._kept[tools].checked


def test_shared_tools_are_prepared_as_a_list_of_their_own_would_be() -> None:
    tools = _tools()
    shared = _parse(orjson.dumps({"tools": tools}))["tools"]
    for json_mode, web_search in [(False, False), (True, False), (False, True), (True, False), (False, False)]:
        got = prepare_tools(shared, json_schema_mode=json_mode, web_search=web_search, digests=shared.keys)
        own = _prepare(tools, json_mode, False, web_search)
        assert (got.declarations, got.echo, got.schemas, got.hosted) == (own.declarations, own.echo, own.schemas,
                                                                         own.hosted)
    assert set(shared.keys) == {(False, False), (True, False), (False, True)}, "one key per preparation"


def test_responses_and_chat_share_their_tools_over_http(stack: Stack, client: openai.OpenAI) -> None:
    tools = _tools()
    for _ in range(2):
        client.responses.create(model="gemini-3-flash-preview", input="Weather in Paris?", tools=tools)
        assert [d["name"] for d in stack.last_body()["tools"][0]["functionDeclarations"]] == [tools[0]["name"]]
    kept = shared_tools._kept[orjson.dumps(tools)]
    assert ResponsesRequest in kept.checked and kept.keys
    chat_tools = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}} for t in tools]
    for _ in range(2):
        client.chat.completions.create(model="gemini-3-flash-preview", tools=chat_tools,  # type: ignore[arg-type]
                                       messages=[{"role": "user", "content": "Weather in Paris?"}])
        assert [d["name"] for d in stack.last_body()["tools"][0]["functionDeclarations"]] == [tools[0]["name"]]
    assert ChatRequest in shared_tools._kept[orjson.dumps(chat_tools)].checked


def test_a_route_that_changed_shared_tools_would_be_caught(stack: Stack, client: openai.OpenAI,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    tools = _tools()
    original = context.prepare_tools

    def careless(sent: Any, *args: Any, **kwargs: Any) -> Any:
        sent[0]["description"] += " (edited)"
        return original(sent, *args, **kwargs)

    monkeypatch.setattr(context, "prepare_tools", careless)
    client.responses.create(model="gemini-3-flash-preview", input="Weather in Paris?", tools=tools)
    text = orjson.dumps(tools)
    assert any(repr(text[:200]) in c for c in changed_shared_tools())
    shared_tools._kept.pop(text)  # (the conftest's own check would fail this test too)
    assert not changed_shared_tools()
