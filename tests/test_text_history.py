"""The addon keeps a history of text turns as the app's bytes (proxy/intercept/text_history.py): which
histories qualify, and that the body it sends is the one the full path (parse everything, rewrite,
dump) sends, for any history, session and model."""

import asyncio
import json
from collections.abc import Iterator

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mitmproxy import http
from mitmproxy.proxy.layers.http import HttpRequestHook
from mitmproxy.test import taddons, tflow, tutils

from proxy.intercept import flow_selection, text_history
from proxy.intercept.addon import GeminiTools
from proxy.session.placeholders import DEFAULT_PLACEHOLDER
from proxy.store import MemoryStore
from proxy.tools.prepare_tools import prepare_tools
from proxy.wire.gemini_keys import to_camel_request

FLASH = "gemini-2.5-flash"
NO_PREFILL = "gemini-3.5-flash"  # refuses a trailing model turn (repair_history.PREFILL_REJECTED)
TOOLS = prepare_tools([{"type": "function", "name": "get_weather",
                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}])


def turn(role: str | None, *texts: str, **extra: object) -> dict:
    out: dict = {"parts": [{"text": t, **extra} for t in texts]}
    if role is not None:
        out["role"] = role
    return out


def body(contents: list, **rest: object) -> bytes:
    return json.dumps({"contents": contents, **rest}).encode()


def split(raw: bytes, model: str, placeholder: str) -> tuple[bytes, bytes] | None:
    """(rest, contents) when the contents may go out as the app's bytes, else None."""
    members = text_history.members(raw)
    return members if members is not None and text_history.untouched(members[1], model, placeholder) else None


def test_text_turns_are_split_off_as_the_apps_bytes() -> None:
    raw = (b'{"generationConfig": {"temperature": 0.5},\n "contents" : [ {"parts": [{"text": "caf\\u00e9"}], '
           b'"role": "user"},{"role":"model","parts":[{"text":"ok","thoughtSignature":"c2ln"}]}, '
           b'{"role":"user","parts":[{"text":"again"},{"text":"thinking","thought":true}]}],"tools":[]}')
    rest, contents = split(raw, FLASH, DEFAULT_PLACEHOLDER)
    assert contents == raw[raw.index(b"[ {"):raw.index(b'],"tools"') + 1], "exactly the bytes the app wrote"
    assert orjson.loads(rest) == {"generationConfig": {"temperature": 0.5}, "tools": []}
    joined = orjson.loads(text_history.join(rest, contents))
    assert joined == orjson.loads(raw)


@pytest.mark.parametrize("contents,model", [
    ([turn("user", "hi"), {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}], FLASH),
    ([{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}], FLASH),
    ([{"role": "user", "parts": [{"text": "look", "inlineData": {"mimeType": "image/png", "data": "AA=="}}]}], FLASH),
    ([{"role": "user", "parts": [{"text": "x", "thought_signature": "c2ln"}]}], FLASH),  # snake_case: camelized
    ([turn("user", "hi"), turn("model", "a"), turn("model", "b")], FLASH),  # chunks of one answer: merged
    ([turn("user", "hi"), turn("model", "prefill")], NO_PREFILL),  # dropped for this model
    ([turn("user", "hi"), turn("model", DEFAULT_PLACEHOLDER)], FLASH),  # a captured round replaces it
    ([turn("user", "hi"), turn("model", " ", DEFAULT_PLACEHOLDER + " ")], FLASH),
    ([turn("user", "hello <session:abc>")], FLASH),  # the marker binds and is removed
    ([{"role": "user", "parts": []}], FLASH),  # given a "." part
    ([turn("user", None)], FLASH),
    ([{"role": "user", "parts": [{"text": "a"}], "extra": 1}], FLASH),
    ("not a list", FLASH),
])
def test_what_the_proxy_may_change_takes_the_full_path(contents: object, model: str) -> None:
    assert split(body(contents), model, DEFAULT_PLACEHOLDER) is None


@pytest.mark.parametrize("raw", [
    b'{"tools": []}',  # no contents
    b'{"contents": [{"role": "user", "parts": [{"text": "\\ud800"}]}]}',  # a lone surrogate
    b'{"contents": [{"role": "user", "parts": [{"text": "a\xed\xa0\x80"}]}]}',
    b'{"contents": [{"role": "user", "parts": [{"text": "a"}]}], "x": NaN}',
    b'{"contents": [{"role": "user", "parts": [{"text": "a"}]}]',
    b'{"contents": [' + b'[' * 5000 + b']' * 5000 + b']}',
    b'[1, 2]',
])
def test_bodies_it_cannot_read_take_the_full_path(raw: bytes) -> None:
    assert split(raw, FLASH, DEFAULT_PLACEHOLDER) is None


def test_a_trailing_model_turn_stays_for_a_model_that_takes_one() -> None:
    assert split(body([turn("user", "hi"), turn("model", "prefill")]), FLASH, DEFAULT_PLACEHOLDER)


def test_join_puts_the_contents_first() -> None:
    assert text_history.join(b"{}", b"[]") == b'{"contents":[]}'
    assert text_history.join(b' {"a":1}', b"[1]") == b'{"contents":[1],"a":1}'  # fast_json's standard-library mark


# Histories of text turns, and of what is near them: tool parts, markers, placeholders, prefills.
_TEXTS = st.sampled_from(["hi", "", ".", " ", DEFAULT_PLACEHOLDER, DEFAULT_PLACEHOLDER, f" {DEFAULT_PLACEHOLDER}\n",
                          "café", "😀", "see <session:s1> now", "<session:other>", 'quote " and \\ slash',
                          "line\nbreak"])
_TEXT_PART = st.one_of(
    st.builds(lambda t: {"text": t}, _TEXTS),
    st.builds(lambda t: {"text": t, "thought": True}, _TEXTS),
    st.builds(lambda t: {"text": t, "thoughtSignature": "c2ln"}, _TEXTS),
)
_TEXT_TURN = st.builds(lambda role, parts: {**({"role": role} if role else {}), "parts": parts},
                       st.sampled_from(["user", "model", None]), st.lists(_TEXT_PART, min_size=1, max_size=2))
_TOOL_TURNS = st.sampled_from([
    {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"t": 20}}}]},
])


@st.composite
def _histories(draw: st.DrawFn) -> list:
    """Text turns; in about half the histories, a tool turn among them (the full path's)."""
    turns = draw(st.lists(_TEXT_TURN, min_size=1, max_size=5))
    if draw(st.booleans()):
        turns.insert(draw(st.integers(0, len(turns))), draw(_TOOL_TURNS))
    return turns


async def _sent(raw: bytes, model: str, session: bool, merge: bool, cloudcode: bool, full: bool) -> bytes:
    """The body the addon sends for `raw`, through its real hooks; `full`: with the body parsed whole,
    as it is when it cannot be split (the reference: no text path, no shared members)."""
    addon = GeminiTools(MemoryStore())
    await addon.store.set_tools("s1", TOOLS.declarations, None, TOOLS.names.to_client)
    headers = {"x-gtp-session": "s1"} if session else {}
    host, path = (("cloudcode-pa.googleapis.com", "/v1internal:generateContent") if cloudcode else
                  ("generativelanguage.googleapis.com", f"/v1beta/models/{model}:generateContent"))
    req = tutils.treq(host=host, port=443, scheme=b"https", method=b"POST", path=path.encode(),
                      headers=http.Headers(content_type="application/json", **headers), content=raw)
    return await through_addon(addon, req, host, merge, full)


async def through_addon(addon: GeminiTools, req: object, host: str, merge: bool, full: bool) -> bytes:
    """`req` through the addon's real request hook (`full`: with the body parsed whole, as when it
    cannot be split): the body it sends on, or what it answered itself."""
    flow = tflow.tflow(req=req)
    flow.client_conn.sni, flow.server_conn.sni = host, None  # the app's TLS names the host (tflow's: "address")
    with taddons.context(addon) as tctx:
        tctx.configure(addon, gtp_tools="merge" if merge else "replace")
        members = text_history.members
        if full:
            text_history.members = lambda raw, key="contents": None
        try:
            await tctx.master.addons.handle_lifecycle(HttpRequestHook(flow))
        finally:
            text_history.members = members
    return flow.request.content if flow.response is None else b"refused: " + flow.response.content


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One loop for every example: mitmproxy's log handler keeps the loop of the context that made it."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contents=_histories(), model=st.sampled_from([FLASH, NO_PREFILL]),
       session=st.booleans(), merge=st.booleans(), app_tools=st.booleans(), cloudcode=st.booleans())
def test_a_split_body_is_sent_as_the_whole_body_would_be(loop: asyncio.AbstractEventLoop, contents: list, model: str,
                                                      session: bool, merge: bool, app_tools: bool,
                                                      cloudcode: bool) -> None:
    tools = [{"functionDeclarations": [{"name": "own", "parameters": {"type": "object", "additionalProperties":
                                                                       False, "properties": {}}}]}]
    request = {"contents": contents, **({"tools": tools} if app_tools else {})}
    if cloudcode:  # Gemini CLI's Code Assist body: the request wrapped, the model in the body
        request = {"model": model, "project": "p", "request": request, "user_prompt_id": "u1"}
    raw = json.dumps(request, ensure_ascii=False, indent=1).encode()  # not how the proxy writes JSON: kept bytes show
    inner = text_history.members(raw, "request")[1] if cloudcode else raw
    kept = split(inner, model, DEFAULT_PLACEHOLDER)
    event(("cloudcode " if cloudcode else "") + ("text path" if kept else "full path"))
    quick = loop.run_until_complete(_sent(raw, model, session, merge, cloudcode, full=False))
    full = loop.run_until_complete(_sent(raw, model, session, merge, cloudcode, full=True))
    assert quick == full if quick.startswith(b"refused") else orjson.loads(quick) == orjson.loads(full)
    if kept is not None:
        assert kept[1] in quick, "the contents went out as the app's bytes"
        assert quick == raw or (session or app_tools), "nothing to change: the app's own body"
    _assert_rests_unchanged()


def _assert_rests_unchanged() -> None:
    """The parsed members shared by flows that send the same text were never changed by one of them."""
    for rest, (size, parsed, inner) in flow_selection._rests.items():
        fresh = orjson.loads(rest)
        assert size == len(rest) and (parsed is None or parsed == fresh), "a flow changed what others share"
        assert inner is None or inner == to_camel_request(fresh)


def _flow(raw: bytes, model: str = FLASH) -> http.HTTPFlow:
    req = tutils.treq(host="generativelanguage.googleapis.com", port=443, scheme=b"https", method=b"POST",
                      path=f"/v1beta/models/{model}:generateContent".encode(),
                      headers=http.Headers(content_type="application/json"), content=raw)
    flow = tflow.tflow(req=req)
    flow.client_conn.sni, flow.server_conn.sni = "generativelanguage.googleapis.com", None  # as a real app's TLS
    return flow


def test_the_members_around_the_contents_are_parsed_once_per_text() -> None:
    tools = [{"functionDeclarations": [{"name": "f", "parameters": {"type": "object", "properties": {}}}]}]
    hosts = ("generativelanguage.googleapis.com",)
    first = flow_selection.select(_flow(body([turn("user", "one")], tools=tools)), hosts, "x-gtp-session", None)
    second = flow_selection.select(_flow(body([turn("user", "two"), turn("model", "ok"), turn("user", "three")],
                                              tools=tools)), hosts, "x-gtp-session", None)
    assert first is not None and second is not None
    assert first.inner is second.inner, "the same tools' text: parsed and checked once"
    assert b'"three"' in second.contents_raw and b'"three"' not in first.contents_raw
    refused = body([turn("user", "x")], generationConfig={"temperature": "hot"})  # Gemini's 400, not ours
    assert flow_selection.select(_flow(refused), hosts, "x-gtp-session", None) is None
    assert flow_selection.select(_flow(refused), hosts, "x-gtp-session", None) is None, "the verdict is kept too"
    assert sum(size for size, _, _ in flow_selection._rests.values()) <= flow_selection.REST_CACHE_BYTES


def test_a_rest_larger_than_the_cache_is_parsed_every_time() -> None:
    huge = {"systemInstruction": {"parts": [{"text": "x" * (flow_selection.REST_CACHE_BYTES + 1)}]}}
    found = flow_selection.select(_flow(body([turn("user", "hi")], **huge)), ("generativelanguage.googleapis.com",),
                                  "x-gtp-session", None)
    assert found is not None and found.contents_raw is not None
    assert len(found.inner["systemInstruction"]["parts"][0]["text"]) == flow_selection.REST_CACHE_BYTES + 1


def test_contents_with_tool_parts_are_parsed_and_the_rest_is_still_shared() -> None:
    tools = [{"functionDeclarations": [{"name": "get_weather"}]}]
    call = {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]}
    hosts = ("generativelanguage.googleapis.com",)
    first = flow_selection.select(_flow(body([turn("user", "hi <session:s9>"), call], tools=tools)), hosts,
                                  "x-gtp-session", None)
    second = flow_selection.select(_flow(body([turn("user", "hi"), call], tools=tools)), hosts, "x-gtp-session", None)
    assert first is not None and second is not None and first.contents_raw is None
    assert first.inner["tools"] is second.inner["tools"], "parsed once"
    assert first.session == "s9" and first.marked and first.inner["contents"][0]["parts"] == [{"text": "hi"}]
    rest, _ = text_history.members(body([turn("user", "hi"), call], tools=tools))
    assert "contents" not in flow_selection._rests[rest][2], "the shared members never hold a flow's contents"
    bad = body([{"role": "user", "parts": {"text": "not a list"}}, call], tools=tools)
    assert flow_selection.select(_flow(bad), hosts, "x-gtp-session", None) is None, "Gemini's 400 to give"
