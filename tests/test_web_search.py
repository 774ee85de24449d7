"""Web search next to functions (issue 9, item 3): Responses `web_search` and Chat `web_search_options`
become Google Search; on Gemini 3 its toolCall/toolResponse parts come back as `web_search_call`
items and go back into history exactly (the mock binds the next call's signature to the search, so
a history that lost the search fails); groundingMetadata becomes `url_citation` annotations; a model
that cannot combine search with functions gets the `--hosted-tools` policy."""

import json

import aiohttp
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy.from_gemini.server_tools import citations
from proxy.mock.model import SEARCH_FACT
from proxy.mock.validate import (
    COMBINATION_NEEDS_FLAG,
    COMBINATION_UNSUPPORTED,
    GeminiRejection,
    call_signature,
    search_call_id,
    sign,
    validate_request,
)
from proxy.model_rules import ModelRules
from tests.conftest import WEATHER
from tests.harness import Stack

G3, G25 = "gemini-3-flash-preview", "gemini-2.5-flash"
SEARCH = {"type": "web_search"}
PROMPT = "[[mock:search weather in Paris]] call get_weather city=Paris"
CHAT_WEATHER = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k not in ("type", "strict")}}


def _model_turn(body: dict) -> list[dict]:
    return next(c["parts"] for c in body["contents"] if c["role"] == "model")


def _signed_search_turn(model: str = G3) -> list[dict]:
    """The model turn the mock answered PROMPT with, as Gemini sent it."""
    sid = search_call_id("weather in Paris")
    args = {"queries": ["weather in Paris"]}
    return [{"toolCall": {"id": sid, "toolType": "GOOGLE_SEARCH_WEB", "args": args},
             "thoughtSignature": sign(model, "toolCall:" + sid, args)},
            {"toolResponse": {"id": sid, "toolType": "GOOGLE_SEARCH_WEB",
                              "response": {"results": [{"title": "weather.example",
                                                        "url": "https://weather.example/weather-in-paris"}]}}}]


def test_search_next_to_a_function_on_gemini3_and_the_history_replayed_exactly(client, stack) -> None:
    r1 = client.responses.create(model=G3, input=PROMPT, tools=[WEATHER, SEARCH])
    body = stack.last_body()
    assert body["tools"][1] == {"googleSearch": {}} and body["toolConfig"]["includeServerSideToolInvocations"] is True
    assert [o.type for o in r1.output] == ["web_search_call", "function_call"]
    search, call = r1.output
    assert search.status == "completed" and search.action.type == "search"
    assert search.action.query == "weather in Paris"
    r2 = client.responses.create(model=G3, previous_response_id=r1.id, tools=[WEATHER, SEARCH], input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}])
    assert r2.output_text == 'Tool results: get_weather returned {"output": "sunny"}; searched ["weather in Paris"]'
    turn = _model_turn(stack.last_body())
    assert turn[:2] == _signed_search_turn()
    assert turn[2]["thoughtSignature"] == call_signature(G3, "get_weather", {"city": "Paris"},
                                                        search_call_id("weather in Paris"))


@pytest.mark.parametrize("carrier_only", [False, True])
def test_stateless_clients_replay_the_search_items(stack, carrier_only: bool) -> None:
    """Codex-style: store=false, every output item resent. `carrier_only`: another session, so only
    the sealed carrier (the reasoning item) knows the search."""
    def client(session: str) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True,
                             max_retries=0, default_headers={"x-gtp-session": session})
    first = client("ws-stateless-a")
    r1 = first.responses.create(model=G3, input=PROMPT, tools=[WEATHER, SEARCH], store=False,
                                include=["reasoning.encrypted_content"])
    assert [o.type for o in r1.output] == ["web_search_call", "function_call", "reasoning"]
    call = r1.output[1]
    items = [{"role": "user", "content": PROMPT}, *[o.model_dump(exclude_none=True) for o in r1.output],
             {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
    second = client("ws-stateless-b") if carrier_only else first
    r2 = second.responses.create(model=G3, input=items, tools=[WEATHER, SEARCH], store=False,
                                 include=["reasoning.encrypted_content"])
    assert r2.output_text.endswith('searched ["weather in Paris"]')
    assert _model_turn(stack.last_body())[:2] == _signed_search_turn()


def test_a_search_item_the_proxy_never_saw_is_a_400_naming_it(client) -> None:
    items = [{"role": "user", "content": "hi"},
             {"type": "web_search_call", "id": "ws_elsewhere", "status": "completed",
              "action": {"type": "search", "query": "x"}},
             {"role": "assistant", "content": "hello"}, {"role": "user", "content": "again"}]
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=G3, input=items, tools=[WEATHER, SEARCH], store=False)
    assert e.value.body["param"] == "input[1]" and "ws_elsewhere" in e.value.body["message"]


def test_a_search_answered_in_text_cites_its_source_by_characters(client, stack) -> None:
    r1 = client.responses.create(model=G3, input="[[mock:search weather in Paris]] tell me", tools=[WEATHER, SEARCH],
                                 store=False)
    assert [o.type for o in r1.output] == ["web_search_call", "message"]
    text = r1.output[1].content[0]
    [cite] = text.annotations
    assert cite.type == "url_citation" and cite.url == "https://weather.example/weather-in-paris"
    assert text.text[cite.start_index:cite.end_index] == SEARCH_FACT  # "—" and "°" are 2-3 bytes each
    # The stateless replay of a search that ended in text: the search goes back before the answer.
    items = [{"role": "user", "content": "[[mock:search weather in Paris]] tell me"},
             *[o.model_dump(exclude_none=True) for o in r1.output], {"role": "user", "content": "thanks"}]
    client.responses.create(model=G3, input=items, tools=[WEATHER, SEARCH], store=False)
    turn = _model_turn(stack.last_body())
    assert turn[:2] == _signed_search_turn() and turn[2]["text"].startswith("Search results for weather in Paris")


def test_streamed_search_events_and_annotations(client) -> None:
    with client.responses.stream(model=G3, input=PROMPT.replace("call get_weather city=Paris", "tell me"),
                                 tools=[WEATHER, SEARCH]) as s:
        events = list(s)
        final = s.get_final_response()
    kinds = [e.type for e in events]
    for kind in ("response.web_search_call.in_progress", "response.web_search_call.searching",
                 "response.web_search_call.completed", "response.output_text.annotation.added"):
        assert kind in kinds
    assert kinds.index("response.web_search_call.completed") < kinds.index("response.output_text.delta")
    added = next(e for e in events if e.type == "response.output_text.annotation.added")
    assert added.annotation.model_dump() == final.output[1].content[0].annotations[0].model_dump()
    assert [o.type for o in final.output] == ["web_search_call", "message"]


def test_gemini25_searches_alone_and_reports_grounding_only_searches(client, stack) -> None:
    r = client.responses.create(model=G25, input="[[mock:search weather in Paris]] tell me", tools=[SEARCH],
                                store=False)
    body = stack.last_body()
    assert body["tools"] == [{"googleSearch": {}}] and "toolConfig" not in body
    assert [o.type for o in r.output] == ["message", "web_search_call"]
    assert r.output[1].action.query == "weather in Paris"
    assert r.output[0].content[0].annotations[0].url == "https://weather.example/weather-in-paris"
    # Replayed, the grounding-only search adds nothing to Gemini's history (its answer is the text).
    items = [{"role": "user", "content": "q"}, *[o.model_dump(exclude_none=True) for o in r.output],
             {"role": "user", "content": "thanks"}]
    client.responses.create(model=G25, input=items, tools=[SEARCH], store=False)
    assert [c["role"] for c in stack.last_body()["contents"]] == ["user", "model", "user"]


def test_gemini25_cannot_combine_search_with_functions_and_says_so(stack) -> None:
    async def go() -> tuple[int, dict, dict]:
        async with aiohttp.ClientSession() as s, s.post(f"{stack.url}/v1/responses", json={
                "model": G25, "input": PROMPT, "tools": [WEATHER, SEARCH], "metadata": {"mine": "1"}}) as r:
            return r.status, dict(r.headers), await r.json()
    status, headers, body = stack.lt.run(go())
    assert status == 200 and body["status"] == "completed"
    assert "googleSearch" not in json.dumps(stack.last_body()["tools"])
    warning = headers["x-gtp-warning"]
    assert "tools[1] (web_search)" in warning and "cannot use Google Search" in warning
    assert body["metadata"]["mine"] == "1" and body["metadata"]["gtp_warning"] == headers["x-gtp-warning"]


def test_error_policy_refuses_what_cannot_be_served() -> None:
    stack = Stack(rules=ModelRules.parse(hosted_tools=["gemini-2.5*=error"]))
    try:
        client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model=G25, input=PROMPT, tools=[WEATHER, SEARCH])
        assert e.value.body["param"] == "tools[1]" and "cannot use Google Search" in e.value.body["message"]
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model=G25, input="hi", tools=[WEATHER, {"type": "file_search",
                                                                            "vector_store_ids": ["vs_1"]}])
        assert e.value.body["param"] == "tools[1]" and "file_search" in e.value.body["message"]
        # Gemini 3 serves search next to functions whatever the policy; 2.5 serves search alone.
        assert client.responses.create(model=G3, input=PROMPT, tools=[WEATHER, SEARCH]).status == "completed"
        assert client.responses.create(model=G25, input="hi", tools=[SEARCH]).status == "completed"
    finally:
        stack.close()


def test_chat_web_search_options_with_a_tool_loop_and_citations(client, stack) -> None:
    r1 = client.chat.completions.create(model=G3, messages=[{"role": "user", "content": PROMPT}],
                                        tools=[CHAT_WEATHER], web_search_options={})
    assert stack.last_body()["tools"][1] == {"googleSearch": {}}
    [call] = r1.choices[0].message.tool_calls
    r2 = client.chat.completions.create(model=G3, tools=[CHAT_WEATHER], web_search_options={}, messages=[
        {"role": "user", "content": PROMPT}, r1.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"}])
    # Chat has no item for the search: the call's record carries its parts back, before the call.
    assert r2.choices[0].message.content.endswith('searched ["weather in Paris"]')
    assert _model_turn(stack.last_body())[:2] == _signed_search_turn()
    r3 = client.chat.completions.create(model=G3, messages=[{"role": "user", "content": "[[mock:search rain]] hm"}],
                                        web_search_options={"search_context_size": "low"})
    msg = r3.choices[0].message
    [cite] = msg.annotations
    assert msg.content[cite.url_citation.start_index:cite.url_citation.end_index] == SEARCH_FACT


def test_a_search_turn_continued_on_an_older_model_leaves_the_search_out(client, stack) -> None:
    r1 = client.responses.create(model=G3, input="[[mock:search weather in Paris]] tell me", tools=[WEATHER, SEARCH])
    r2 = client.responses.create(model=G25, previous_response_id=r1.id, input="and tomorrow?", tools=[WEATHER])
    assert r2.status == "completed"
    assert "toolCall" not in json.dumps(stack.last_body()["contents"])


def test_other_hosted_tools_are_dropped_with_a_warning(stack) -> None:
    async def go() -> tuple[dict, dict]:
        async with aiohttp.ClientSession() as s, s.post(f"{stack.url}/v1/chat/completions", json={
                "model": G3, "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]}) as r:
            return dict(r.headers), await r.json()
    headers, body = stack.lt.run(go())
    assert body["choices"][0]["message"]["content"].startswith("Mock Gemini")
    assert "tools[0] (code_interpreter)" in headers["x-gtp-warning"]


def test_a_hosted_tool_type_with_control_characters_is_named_safely(stack) -> None:
    """The fuzzer's find: a tool type is the client's text, and it goes into a header."""
    tools = [{"type": "x\r\nset-cookie: a\u00e9\x1f"}]

    async def go(stream: bool) -> tuple[int, str, str]:
        async with aiohttp.ClientSession() as s, s.post(f"{stack.url}/v1/responses", json={
                "model": G3, "input": "hi", "stream": stream, "tools": tools}) as r:
            return r.status, r.headers["x-gtp-warning"], await r.text()
    for stream in (False, True):
        status, warning, text = stack.lt.run(go(stream))
        assert status == 200 and "Mock Gemini" in text
        assert warning.startswith("tools[0] (x??set-cookie: a??)") and all(" " <= c <= "~" for c in warning)


# -- the mock is as strict as Gemini about combining -------------------------------------------

def _combined(model: str, flag: bool) -> dict:
    return {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{"name": "f"}]}, {"googleSearch": {}}],
            **({"toolConfig": {"includeServerSideToolInvocations": True}} if flag else {})}


def test_mock_refuses_search_with_functions_as_gemini_does() -> None:
    with pytest.raises(GeminiRejection) as e:
        validate_request(_combined(G25, False), G25)
    assert e.value.message == COMBINATION_UNSUPPORTED
    with pytest.raises(GeminiRejection) as e:
        validate_request(_combined(G3, False), G3)
    assert e.value.message == COMBINATION_NEEDS_FLAG
    validate_request(_combined(G3, True), G3)


def test_mock_refuses_a_history_that_lost_the_search() -> None:
    signature = call_signature(G3, "get_weather", {"city": "Paris"}, search_call_id("weather in Paris"))
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"},
            "thoughtSignature": signature}
    answer = {"functionResponse": {"name": "get_weather", "id": "c1", "response": {"output": "sunny"}}}
    body = _combined(G3, True)
    body["contents"] += [{"role": "model", "parts": [*_signed_search_turn(), call]},
                         {"role": "user", "parts": [answer]}]
    validate_request(body, G3)
    body["contents"][1]["parts"] = [call]  # the search's parts dropped
    with pytest.raises(GeminiRejection, match="Corrupted thought signature"):
        validate_request(body, G3)


# -- citations: byte offsets to character offsets -------------------------------------------------

@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=4), st.data())
def test_citations_land_on_the_cited_characters(texts: list[str], data: st.DataObject) -> None:
    whole = "".join(texts)
    k = data.draw(st.integers(0, len(texts) - 1))
    start = sum(len(t) for t in texts[:k])
    lo = data.draw(st.integers(0, len(texts[k]) - 1))
    hi = data.draw(st.integers(lo + 1, len(texts[k])))
    seg_text = whole[start + lo:start + hi]
    grounding = {"groundingChunks": [{"web": {"uri": "https://a.example/", "title": "a"}}],
                 "groundingSupports": [{"segment": {"startIndex": len(whole[:start + lo].encode()),
                                                    "endIndex": len(whole[:start + hi].encode()), "text": seg_text},
                                        "groundingChunkIndices": [0, 7]}]}
    found = citations(grounding, texts)
    [cite] = found[k]  # chunk 7 does not exist: no citation for it
    assert texts[k][cite["start_index"]:cite["end_index"]] == seg_text
    assert all(not c for i, c in enumerate(found) if i != k)


def test_citations_without_matching_text_are_left_out() -> None:
    grounding = {"groundingChunks": [{"web": {"uri": "https://a.example/"}}],
                 "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 3, "text": "zzz"},
                                        "groundingChunkIndices": [0]}]}
    assert citations(grounding, ["abc"]) == [[]]


@pytest.mark.parametrize("model", [G3, G25])
def test_include_web_search_sources_lists_the_pages(client, model: str) -> None:
    """include=["web_search_call.action.sources"]: every search item names the pages Gemini grounded on;
    without it, none does."""
    tools = [WEATHER, SEARCH] if model == G3 else [SEARCH]
    asked = client.responses.create(model=model, input="[[mock:search weather in Paris]] tell me", tools=tools,
                                    store=False, include=["web_search_call.action.sources"])
    [search] = [o for o in asked.output if o.type == "web_search_call"]
    assert [s.model_dump() for s in search.action.sources] == [
        {"type": "url", "url": "https://weather.example/weather-in-paris"}]
    plain = client.responses.create(model=model, input="[[mock:search weather in Paris]] tell me", tools=tools,
                                    store=False)
    assert not [o for o in plain.output if o.type == "web_search_call"][0].action.sources
