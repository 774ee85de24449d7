"""Issue 62: a request whose history is text turns goes out as its other members rewritten once per
(their text, the session's stored tools, model, merge) with the app's contents spliced in as sent
(proxy/intercept/rewrite.py), and the session's tools are parsed only when asked for
(entry_store.LazyToolContext). The body sent must be, for every body, the one the full path (parse
all, rewrite, dump) sends: the first time and every time after, whichever tools the session holds."""

import asyncio
import json
from collections.abc import Iterator

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mitmproxy import http
from mitmproxy.test import tutils

from proxy.intercept import rewrite, text_history
from proxy.intercept.addon import GeminiTools
from proxy.session.placeholders import DEFAULT_PLACEHOLDER
from proxy.session.session_tools import ToolContext
from proxy.store import MemoryStore
from proxy.store.entry_store import LazyToolContext
from proxy.tools.prepare_tools import prepare_tools
from tests.test_text_history import through_addon

FLASH = "gemini-2.5-flash"
SESSION_TOOLS = [prepare_tools([{"type": "function", "name": name, "description": description, "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "description": "é \" \\ 😀"}}}}])
    for name, description in (("get_weather", "Weather"), ("get_time", 'the "time"'), ("own", "shadows the app's"))]


async def _sent(raw: bytes, tools: int | None, merge: bool, full: bool, store: MemoryStore | None = None,
                model: str = FLASH) -> bytes:
    """The body the addon sends for `raw` through its real hooks, the session holding SESSION_TOOLS[tools]
    (None: no session); `full`: the body parsed whole (the reference)."""
    addon = GeminiTools(store or MemoryStore())
    if tools is not None:
        await addon.store.set_tools("s1", SESSION_TOOLS[tools].declarations, None, SESSION_TOOLS[tools].names.to_client)
    host = "generativelanguage.googleapis.com"
    req = tutils.treq(host=host, port=443, scheme=b"https", method=b"POST",
                      path=f"/v1beta/models/{model}:generateContent".encode(),
                      headers=http.Headers(content_type="application/json",
                                           **({"x-gtp-session": "s1"} if tools is not None else {})), content=raw)
    return await through_addon(addon, req, host, merge, full)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


_TEXT = st.sampled_from(["hi", "café", "😀 emoji", 'an "escaped" quote and \\ slash', '{"tools": [1]}', "tools",
                         '"tools":', "line\nbreak", "\u2028 separator", "<b>&amp;</b>"])
_TEXT_TURN = st.builds(lambda role, t: {"role": role, "parts": [{"text": t}]},
                       st.sampled_from(["user", "model"]), _TEXT)
# Turns that hold "tools" keys of their own (a call's arguments, a result): never touched, full path.
_NESTED = st.sampled_from([
    {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"tools": [{"x": "y"}]}}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"tools": {"a": 1}}}}]},
])
_APP_TOOLS = st.sampled_from([
    None, [],
    [{"functionDeclarations": [{"name": "own", "description": "é \"q\"",
                                "parameters": {"type": "object", "additionalProperties": False, "properties": {}}}]}],
    [{"functionDeclarations": [{"name": "app_fn", "parametersJsonSchema": {"type": "object"}}]}, {"googleSearch": {}}],
])


@st.composite
def _bodies(draw: st.DrawFn) -> bytes:
    turns = draw(st.lists(_TEXT_TURN, min_size=1, max_size=4))
    turns[-1] = {"role": "user", "parts": turns[-1]["parts"]}
    if draw(st.booleans()):
        turns.insert(draw(st.integers(0, len(turns) - 1)), draw(_NESTED))
    members: dict = {"contents": turns}
    app = draw(_APP_TOOLS)
    if app is not None:
        members["tools"] = app
    if draw(st.booleans()):
        members["generationConfig"] = {"temperature": 0.5, "stopSequences": ['"tools"']}
    if draw(st.booleans()):
        members["systemInstruction"] = {"parts": [{"text": draw(_TEXT)}]}
    if draw(st.booleans()):
        members["toolConfig"] = {"functionCallingConfig": {"mode": "AUTO"}}
    order = draw(st.permutations(list(members)))  # "tools" before or after "contents", first or last
    body = {k: members[k] for k in order}
    style = draw(st.sampled_from(["compact", "spaced", "indented", "ascii"]))
    if style == "compact":
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    if style == "indented":
        return json.dumps(body, ensure_ascii=False, indent=2).encode()
    return json.dumps(body, ensure_ascii=style == "ascii").encode()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=_bodies(), tools=st.sampled_from([None, 0, 1, 2]), merge=st.booleans())
def test_the_spliced_body_means_what_the_full_rewrite_sends(loop: asyncio.AbstractEventLoop, raw: bytes,
                                                            tools: int | None, merge: bool) -> None:
    full = loop.run_until_complete(_sent(raw, tools, merge, full=True))
    for _ in range(2):  # worked out, then reused
        quick = loop.run_until_complete(_sent(raw, tools, merge, full=False))
        assert quick == full if quick.startswith(b"refused") else orjson.loads(quick) == orjson.loads(full)
        contents = text_history.members(raw)[1]
        if text_history.untouched(contents, FLASH, DEFAULT_PLACEHOLDER):
            assert contents in quick, "a history of text turns goes out as the app's bytes"


def test_a_flow_that_needs_nothing_keeps_the_apps_bytes_every_time(loop: asyncio.AbstractEventLoop) -> None:
    raw = b'{ "contents" : [{"role": "user", "parts": [{"text": "caf\\u00e9"}]}], "generationConfig": {} }'
    for _ in range(3):
        assert loop.run_until_complete(_sent(raw, None, False, full=False)) == raw


def test_new_session_tools_are_sent_at_once(loop: asyncio.AbstractEventLoop) -> None:
    """The reused members are keyed by the stored tools' text: tools set again go out on the next request."""
    store = MemoryStore()
    raw = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()
    names = []
    for tools in (0, 0, 1, 1, 0):
        sent = orjson.loads(loop.run_until_complete(_sent(raw, tools, False, full=False, store=store)))
        names.append([d["name"] for t in sent["tools"] for d in t["functionDeclarations"]])
    assert names == [["get_weather"], ["get_weather"], ["get_time"], ["get_time"], ["get_weather"]]


def test_the_reused_members_are_bounded() -> None:
    assert sum(size for size, _, _ in rewrite._rewritten_rests.values()) <= rewrite.REWRITTEN_CACHE_BYTES


async def test_lazy_tool_context_is_the_stored_context() -> None:
    store = MemoryStore()
    prepared = SESSION_TOOLS[1]
    await store.set_tools("s", prepared.declarations, {"functionCallingConfig": {"mode": "ANY"}},
                          prepared.names.to_client)
    first, second = await store.get_tool_context("s"), await store.get_tool_context("s")
    assert isinstance(first, LazyToolContext) and first.version is not None
    eager = ToolContext(prepared.declarations, {"functionCallingConfig": {"mode": "ANY"}}, prepared.names.to_client)
    assert first == eager and first.to_dict() == eager.to_dict()
    first.declarations.append({"name": "mutated"})
    first.tool_config = None
    assert second.declarations == prepared.declarations and second.tool_config is not None, "each its own copy"
    assert await store.get_tool_context("nobody") is None
