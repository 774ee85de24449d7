"""The addon's hooks, driven with mitmproxy's own test helpers (taddons, tflow)."""

import json

import pytest
from mitmproxy import exceptions, http
from mitmproxy.proxy import server_hooks
from mitmproxy.proxy.layers.http import HttpRequestHook, HttpResponseHeadersHook, HttpResponseHook
from mitmproxy.test import taddons, tflow, tutils

from proxy.intercept.addon import GeminiTools
from proxy.intercept.capture_calls import SSETap
from proxy.store import MemoryStore
from proxy.tools.prepare_tools import prepare_tools

TOOLS = prepare_tools([{"type": "function", "name": "get_weather",
                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}])


def gemini_flow(path: str, body: dict, host: str = "generativelanguage.googleapis.com", **headers) -> http.HTTPFlow:
    req = tutils.treq(host=host, port=443, scheme=b"https", method=b"POST", path=path.encode(),
                      headers=http.Headers(content_type="application/json", **headers),
                      content=json.dumps(body).encode())
    return _named(tflow.tflow(req=req), host)


def _named(flow: http.HTTPFlow, host: str) -> http.HTTPFlow:
    """The app's TLS names the host, as a real flow's does (tflow's connections name "address")."""
    flow.client_conn.sni, flow.server_conn.sni = host, None
    return flow


def user(text: str) -> dict:
    return {"role": "user", "parts": [{"text": text}]}


@pytest.fixture
def addon() -> GeminiTools:
    return GeminiTools(MemoryStore())


# The addon is several small addons (GeminiTools.parts); hooks go through mitmproxy's own manager,
# in order, exactly as mitmdump runs them.
async def request(tctx: taddons.context, flow: http.HTTPFlow) -> None:
    await tctx.master.addons.handle_lifecycle(HttpRequestHook(flow))


async def responseheaders(tctx: taddons.context, flow: http.HTTPFlow) -> None:
    await tctx.master.addons.handle_lifecycle(HttpResponseHeadersHook(flow))


async def response(tctx: taddons.context, flow: http.HTTPFlow) -> None:
    await tctx.master.addons.handle_lifecycle(HttpResponseHook(flow))


async def test_options_are_validated(addon: GeminiTools) -> None:
    with taddons.context(addon) as tctx:
        with pytest.raises(exceptions.OptionsError, match="replace' or 'merge"):
            tctx.configure(addon, gtp_tools="sometimes")
        with pytest.raises(exceptions.OptionsError, match="host:port"):
            tctx.configure(addon, gtp_route="nowhere")
        with pytest.raises(exceptions.OptionsError, match="http"):
            tctx.configure(addon, gtp_upstream="ftp://x")
        tctx.configure(addon, gtp_tools="merge", gtp_route="127.0.0.1:9", gtp_upstream="mock")


async def test_request_hook_binds_by_header_and_rewrites(addon: GeminiTools) -> None:
    await addon.store.set_tools("s1", TOOLS.declarations, None, TOOLS.names.to_client)
    with taddons.context(addon) as tctx:
        flow = gemini_flow("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                           {"contents": [user("hello")], "tools": [{"functionDeclarations": [{"name": "own"}]}]},
                           x_gtp_session="s1", accept_encoding="gzip")
        await request(tctx, flow)
    sent = json.loads(flow.request.content)
    assert [d["name"] for d in sent["tools"][0]["functionDeclarations"]] == ["get_weather"]
    assert "x-gtp-session" not in flow.request.headers
    assert flow.request.headers["accept-encoding"] == "identity"


async def test_request_hook_default_session_and_cloudcode(addon: GeminiTools) -> None:
    await addon.store.set_tools("work", TOOLS.declarations, None, TOOLS.names.to_client)
    with taddons.context(addon) as tctx:
        tctx.configure(addon, gtp_default_session="work")
        flow = gemini_flow("/v1internal:generateContent", {"model": "gemini-2.5-pro", "project": "p",
                                                          "request": {"contents": [user("hi")]}},
                           host="cloudcode-pa.googleapis.com")
        await request(tctx, flow)
    sent = json.loads(flow.request.content)
    assert sent["model"] == "gemini-2.5-pro" and sent["project"] == "p"
    assert sent["request"]["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"


async def test_flows_it_does_not_own_are_untouched(addon: GeminiTools) -> None:
    with taddons.context(addon) as tctx:
        for flow in (gemini_flow("/v1beta/models", {"contents": [user("<session:x> a")]}),
                     gemini_flow("/v1beta/models/gemini-2.5-flash:generateContent", {"contents": [user("<session:x>")]},
                                 host="example.com"),
                     gemini_flow("/v1beta/models/gemini-2.5-flash:countTokens", {"contents": []})):
            before = flow.request.content
            await request(tctx, flow)
            assert flow.request.content == before and "gemini_tool_proxy" not in flow.metadata
        broken = gemini_flow("/v1beta/models/gemini-2.5-flash:generateContent", {})
        broken.request.content = b"{not json"
        await request(tctx, broken)
        assert broken.request.content == b"{not json"


async def test_sse_tap_captures_across_arbitrary_chunks_and_never_alters(addon: GeminiTools) -> None:
    await addon.store.set_tools("s1", TOOLS.declarations, None, TOOLS.names.to_client)
    stream = (b'data: {"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}\r\n\r\n'
              b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"P"},'
              b'"id":"abc"},"thoughtSignature":"U0lH"}]},"finishReason":"STOP"}]}\r\n\r\n')
    with taddons.context(addon) as tctx:
        flow = gemini_flow("/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse",
                           {"contents": [user("<session:s1> go")]})
        await request(tctx, flow)
        flow.response = http.Response.make(200, b"", {"content-type": "text/event-stream"})
        await responseheaders(tctx, flow)
        tap = flow.response.stream
        assert isinstance(tap, SSETap)
        out = b"".join(tap(stream[i:i + 7]) for i in range(0, len(stream), 7)) + tap(b"")
        assert out == stream
        await response(tctx, flow)
    [rnd] = (await addon.store.get_tool_context("s1")).rounds
    assert [(c.call_id, c.name, c.args, c.signature) for c in rnd.calls] == [("abc", "get_weather", {"city": "P"},
                                                                            "U0lH")]
    assert rnd.calls[0].model == "gemini-3-pro-preview", "the model that made it (its signature is bound to it)"


async def test_json_answers_are_captured_too(addon: GeminiTools) -> None:
    with taddons.context(addon) as tctx:
        flow = gemini_flow("/v1beta/models/gemini-2.5-flash:generateContent", {"contents": [user("<session:j> go")]})
        await request(tctx, flow)
        answer = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}}]}
        flow.response = http.Response.make(200, json.dumps(answer).encode(), {"content-type": "application/json"})
        await responseheaders(tctx, flow)
        await response(tctx, flow)
    [rnd] = (await addon.store.get_tool_context("j")).rounds
    assert rnd.calls[0].name == "f" and rnd.calls[0].call_id.startswith("call_")


async def test_server_connect_routes_when_configured(addon: GeminiTools) -> None:
    with taddons.context(addon) as tctx:
        data = server_hooks.ServerConnectionHookData(server=tflow.tserver_conn(), client=tflow.tclient_conn())
        data.server.address = ("generativelanguage.googleapis.com", 443)
        data.server.sni = None
        await tctx.master.addons.handle_lifecycle(server_hooks.ServerConnectHook(data))
        assert data.server.address == ("generativelanguage.googleapis.com", 443)
        tctx.configure(addon, gtp_route="127.0.0.1:4443")
        await tctx.master.addons.handle_lifecycle(server_hooks.ServerConnectHook(data))
        assert data.server.address == ("127.0.0.1", 4443)
        assert data.server.sni == "generativelanguage.googleapis.com"


async def test_each_request_is_routed_after_the_others_saw_it(addon: GeminiTools) -> None:
    """Routed per request (so mitmproxy finds its connection to the route again), the Host header and
    TLS still naming the app's host; the app's host is what every other addon saw."""
    with taddons.context(addon) as tctx:
        tctx.configure(addon, gtp_route="127.0.0.1:4443")
        flow = gemini_flow("/v1beta/models/gemini-2.5-flash:generateContent", {},
                           **{"Host": "generativelanguage.googleapis.com"})  # as HTTP/1 apps send it
        await tctx.cycle(addon, flow)
        assert (flow.request.host, flow.request.port) == ("127.0.0.1", 4443)
        assert flow.request.host_header == "generativelanguage.googleapis.com"
        assert type(addon.parts[-1]).__name__ == "Route", "last, after every addon that reads the host"
        data = server_hooks.ServerConnectionHookData(server=tflow.tserver_conn(), client=tflow.tclient_conn())
        data.server.address, data.server.sni = ("127.0.0.1", 4443), "127.0.0.1"
        data.client.sni = "generativelanguage.googleapis.com"
        await tctx.master.addons.handle_lifecycle(server_hooks.ServerConnectHook(data))
        assert data.server.sni == "generativelanguage.googleapis.com", "TLS names the host the app asked for"


async def test_nothing_to_change_keeps_the_apps_bytes(addon: GeminiTools) -> None:
    with taddons.context(addon) as tctx:
        flow = gemini_flow("/v1beta/models/gemini-2.5-flash:generateContent", {})
        flow.request.content = b'{"contents":  [{"role": "user", "parts": [{"text": "plain"}]}]}'
        await request(tctx, flow)
    assert flow.request.content == b'{"contents":  [{"role": "user", "parts": [{"text": "plain"}]}]}'
    assert "gemini_tool_proxy" in flow.metadata, "its answer is still tapped"


def test_the_addon_forwards_every_hook_its_parts_implement() -> None:
    """mitmproxy sees one addon; a hook a part implements but GeminiTools does not forward would
    never run."""
    from mitmproxy.hooks import all_hooks

    from proxy.intercept.addon import HOOKS
    implemented = {name for part in GeminiTools().parts for name in all_hooks if callable(getattr(part, name, None))}
    assert implemented <= set(HOOKS), implemented - set(HOOKS)
    assert all(callable(getattr(GeminiTools, name)) for name in HOOKS)
    assert not hasattr(GeminiTools(), "addons"), "the parts are not registered one by one (see addon.py)"
