"""wire/shared_tools.py: a tools text seen before is parsed and checked once and shared (Responses,
Chat, Anthropic Messages and Gemini REST). The body it
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
from google import genai
from google.genai import types as genai_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.anthropic.routes import CORE_TOOLS
from proxy.errors import ProxyError
from proxy.server import context
from proxy.server.errors import ON_LOOP_BYTES, _parsed, parse_body, validate
from proxy.tools.prepare_tools import _prepare, prepare_tools
from proxy.wire import shared_tools
from proxy.wire.anthropic import MessagesRequest
from proxy.wire.chat import ChatRequest
from proxy.wire.gemini import GenerateContentRequest
from proxy.wire.json_body import split_member
from proxy.wire.responses import ResponsesRequest
from proxy.wire.shared_tools import SharedTools, parse_with_tools
from tests.harness import Stack, post_json
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


def parsed_as_whole(parse: Any, raw: bytes) -> tuple[Any, ...]:
    """What the whole parse gives `raw`; `parse` gives the same, twice (a kept text the second time):
    the same value, keys in the same order, or the same error."""
    whole = _outcome(_parsed, raw)
    assert _outcome(parse, raw) == whole and _outcome(parse, raw) == whole
    return whole


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
    whole = parsed_as_whole(_parse, raw)
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


def test_the_kept_texts_are_found_by_length_and_bytes_within_their_bytes() -> None:
    """The cache of tools texts (found by length, then compared, never hashed): texts of one length
    are each found as themselves; a copy of a text finds it; the least recently used go first, the
    bytes kept never above the bound; a text popped is gone."""
    cache = shared_tools._KeptTools(100)
    a, b, c = b"[" + b"a" * 28 + b"]", b"[" + b"b" * 28 + b"]", b"[" + b"c" * 38 + b"]"
    for text in (a, b, c):
        cache[text] = SharedTools([], text)
    assert cache.bytes == 100 and {t for t, _ in cache.items()} == {a, b, c}
    assert cache.get(bytes(bytearray(a))) is cache[a] and cache[b].text == b and b"[" + b"d" * 28 + b"]" not in cache
    cache.get(c)  # the most recently used length now: a and b's go first
    cache[b"[" + b"e" * 8 + b"]"] = SharedTools([], b"[" + b"e" * 8 + b"]")
    assert cache.bytes <= 100 and c in cache and b"[" + b"e" * 8 + b"]" in cache
    assert not (a in cache and b in cache), "one of the 30-byte texts made room"
    assert cache.pop(c) is not None and c not in cache and cache.pop(c, None) is None
    assert cache.bytes == sum(len(t) for t, _ in cache.items())
    fresh = shared_tools._KeptTools(100)
    for text in (a, c, b):  # b, kept last, makes its length the most recently used one
        fresh[text] = SharedTools([], text)
    fresh[b"[" + b"e" * 8 + b"]"] = SharedTools([], b"[" + b"e" * 8 + b"]")
    assert b in fresh and a in fresh and c not in fresh, "the 40-byte text was the least recently used"


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
        got = prepare_tools(shared, json_schema_mode=json_mode, web_search=web_search, digests=shared.facts)
        own = _prepare(tools, json_mode, False, web_search)
        assert (got.declarations, got.echo, got.schemas, got.hosted) == (own.declarations, own.echo, own.schemas,
                                                                         own.hosted)
    assert set(shared.facts) == {(False, False), (True, False), (False, True)}, "one key per preparation"


def test_responses_and_chat_share_their_tools_over_http(stack: Stack, client: openai.OpenAI) -> None:
    tools = _tools()
    for _ in range(2):
        client.responses.create(model="gemini-3-flash-preview", input="Weather in Paris?", tools=tools)
        assert [d["name"] for d in stack.last_body()["tools"][0]["functionDeclarations"]] == [tools[0]["name"]]
    kept = shared_tools._kept[orjson.dumps(tools)]
    assert ResponsesRequest in kept.checked and kept.facts
    chat_tools = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}} for t in tools]
    for _ in range(2):
        client.chat.completions.create(model="gemini-3-flash-preview", tools=chat_tools,  # type: ignore[arg-type]
                                       messages=[{"role": "user", "content": "Weather in Paris?"}])
        assert [d["name"] for d in stack.last_body()["tools"][0]["functionDeclarations"]] == [tools[0]["name"]]
    assert ChatRequest in shared_tools._kept[orjson.dumps(chat_tools)].checked


def test_anthropic_messages_share_their_tools_over_http(stack: Stack) -> None:
    """Claude Code sends the same tools every turn: parsed, checked and converted for the core once,
    and what Gemini gets is what a list of its own gives (the conftest's check holds their copies)."""
    tools = [{"name": f"get_weather_{uuid.uuid4().hex[:8]}", "description": "Weather in a city",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
              "cache_control": {"type": "ephemeral"}}]
    body = {"model": "gemini-3-flash-preview", "max_tokens": 100, "tools": tools,
            "messages": [{"role": "user", "content": "Weather in Paris?"}]}
    sent = []
    for _ in range(3):
        status, _answer = post_json(stack.url + "/v1/messages", body)
        assert status == 200
        sent.append(stack.last_body()["tools"])
    assert sent[0] == sent[1] == sent[2]
    assert [d["name"] for d in sent[0][0]["functionDeclarations"]] == [tools[0]["name"]]
    kept = shared_tools._kept[json.dumps(tools).encode()]  # (the text as post_json sent it)
    assert MessagesRequest in kept.checked and CORE_TOOLS in kept.facts
    assert kept.facts[CORE_TOOLS].facts, "the core's tools keep their preparation's key"
    assert not changed_shared_tools()


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


def _declarations(name: str = "get_weather", snake: bool = False) -> list[dict[str, Any]]:
    """Gemini-native tools of their own for each test, spelt as google-genai sends them (camelCase) or
    as proto JSON allows (snake_case), with a schema the proxy repairs (additionalProperties)."""
    decl = {"name": f"{name}_{uuid.uuid4().hex[:8]}", "description": "Weather in a city",
            "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}},
                           "additionalProperties": False}}
    return [{"function_declarations" if snake else "functionDeclarations": [decl]}]


def _native(stack: Stack, tools: list[dict[str, Any]], contents: Any = None) -> tuple[int, Any]:
    body = {"contents": contents or [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}], "tools": tools}
    return post_json(stack.url + "/v1beta/models/gemini-2.5-flash:generateContent", body)


def test_gemini_rest_shares_its_tools_and_sends_what_a_list_of_its_own_gives(stack: Stack) -> None:
    tools = _declarations()
    name = tools[0]["functionDeclarations"][0]["name"]
    g = genai.Client(api_key="k", http_options=genai_types.HttpOptions(base_url=stack.url))
    config = genai_types.GenerateContentConfig(tools=[genai_types.Tool(function_declarations=[
        genai_types.FunctionDeclaration.model_validate(tools[0]["functionDeclarations"][0])])])
    sent = []
    for _ in range(2):
        g.models.generate_content(model="gemini-2.5-flash", contents="Weather in Paris?", config=config)
        sent.append(stack.last_body()["tools"])
    kept = [k for t, k in shared_tools._kept.items() if name.encode() in t]
    assert len(kept) == 1 and GenerateContentRequest in kept[0].checked
    assert ("conversion", ()) in kept[0].facts, "the repair's cache key is worked out once per text"
    assert sent[0] == sent[1] and sent[0][0]["functionDeclarations"][0]["name"] == name
    assert "additionalProperties" not in json.dumps(sent[1]), "repaired on the second sight too"


def test_gemini_rest_tools_in_snake_case_are_spelt_again_on_every_sight(stack: Stack) -> None:
    tools = _declarations(snake=True)
    for _ in range(2):
        assert _native(stack, tools)[0] == 200
        decls = stack.last_body()["tools"][0]
        assert list(decls) == ["functionDeclarations"] and "additionalProperties" not in json.dumps(decls)
    assert shared_tools._kept[json.dumps(tools).encode()].facts["snake_free"] is False  # (as post_json spells it)


def test_gemini_rest_checks_the_rest_of_the_body_when_its_tools_passed(stack: Stack) -> None:
    tools = _declarations()
    assert _native(stack, tools)[0] == 200
    status, answer = _native(stack, tools, contents=[{"role": "user", "parts": "not a list"}])
    assert status == 400 and "contents[0].parts" in answer["error"]["message"]
    refused = [{"functionDeclarations": "not a list"}]
    for _ in range(2):
        status, answer = _native(stack, refused)
        assert status == 400 and "tools[0].functionDeclarations" in answer["error"]["message"]
    assert GenerateContentRequest not in shared_tools._kept[json.dumps(refused).encode()].checked
