"""Deferred tools and tool search (issue 59 item 1), on the strict mock: deferred declarations stay
out of Gemini's functionDeclarations until a search finds them; the proxy runs the search for the
Responses API's hosted `tool_search` and Anthropic's tool-search server tools, within one answer;
Codex's client-run `tool_search` round-trips its `tool_search_call` / `tool_search_output` items.
The mock's `find QUERY` directive makes the model search first (proxy/mock/model.py)."""

import json

import openai
import pytest
from openai.types.responses import Response

from tests.conftest import WEATHER

MANY = [{"type": "function", "name": f"crm_tool_{n}", "description": f"CRM operation number {n} on accounts",
         "parameters": {"type": "object", "properties": {"account": {"type": "string"}}}, "defer_loading": True}
        for n in range(40)]
CALENDAR = {"type": "function", "name": "create_event", "description": "Create a calendar event with a title",
            "parameters": {"type": "object", "properties": {"title": {"type": "string", "description": "Event title"}},
                           "required": ["title"]}, "defer_loading": True}


def declared(body: dict) -> list[str]:
    return [d["name"] for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]


@pytest.mark.parametrize("stream", [False, True])
def test_hosted_tool_search_finds_a_deferred_tool_within_one_answer(stack, client: openai.OpenAI, stream: bool
                                                                     ) -> None:
    tools = [WEATHER, *MANY, CALENDAR, {"type": "tool_search"}]
    text = "Please create_event for the launch [[mock:find calendar event]] [[mock:rounds 2]]"
    before = stack.accepted
    if stream:
        with client.responses.stream(model="gemini-3-flash-preview", input=text, tools=tools) as s:
            events = list(s)
            response = s.get_final_response()
        kinds = [e.type for e in events]
        assert kinds[-1] == "response.completed"
    else:
        response = client.responses.create(model="gemini-3-flash-preview", input=text, tools=tools)
    Response.model_validate(response.model_dump())
    assert stack.accepted - before == 2  # the search's hop, then the answer with the tool found
    bodies = [r["body"] for r in stack.received[-2:]]
    assert declared(bodies[0]) == ["get_weather", "tool_search"]  # 41 deferred tools held back
    assert "create_event" in declared(bodies[1]) and not any(n.startswith("crm_tool") for n in declared(bodies[1]))
    types = [o.type for o in response.output]
    assert types[:2] == ["tool_search_call", "tool_search_output"] or types[1:3] == [
        "tool_search_call", "tool_search_output"], types
    search = next(o for o in response.output if o.type == "tool_search_call")
    assert search.execution == "server" and search.arguments == {"query": "calendar event"}
    found = next(o for o in response.output if o.type == "tool_search_output")
    assert [t.name for t in found.tools] == ["create_event"]
    call = next(o for o in response.output if o.type == "function_call")
    assert call.name == "create_event" and json.loads(call.arguments)["title"]
    # the search's call and result reached Gemini as its own call and the user turn answering it
    second = bodies[1]["contents"]
    assert second[-2]["role"] == "model" and second[-2]["parts"][-1]["functionCall"]["name"] == "tool_search"
    assert second[-1]["parts"][0]["functionResponse"]["response"]["tools"][0]["name"] == "create_event"
    assert response.usage.input_tokens > 0


# Codex 0.171.0's own tool_search tool, as it sends it (captured from the real CLI: its deferred MCP
# tools are in no `tools`, and come back in its tool_search_output with defer_loading: true).
CODEX_SEARCH = {"type": "tool_search", "execution": "client",
                "description": "# Tool discovery\n\nSearches over deferred tool metadata with BM25 and exposes "
                               "matching tools for the next model call.",
                "parameters": {"type": "object", "properties": {
                    "limit": {"type": "number", "description": "Maximum number of tools to return. Defaults to 8."},
                    "query": {"type": "string", "description": "Search query for deferred tools."}},
                    "required": ["query"], "additionalProperties": False}}
CODEX_FOUND = {"type": "namespace", "name": "mcp__calendar", "description": "Tools in the mcp__calendar namespace.",
               "tools": [{"type": "function", "name": "create_event", "description": "Create a calendar event.",
                          "strict": False, "defer_loading": True, "parameters": {
                              "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}]}


def test_a_client_run_search_round_trips_and_declares_what_it_found(stack, client: openai.OpenAI) -> None:
    text = "Add mcp__calendar__create_event title=launch [[mock:find calendar]] [[mock:rounds 2]]"
    first = client.responses.create(model="gemini-3-flash-preview", input=text, tools=[WEATHER, CODEX_SEARCH],
                                    store=False, include=["reasoning.encrypted_content"])
    assert declared(stack.last_body()) == ["get_weather", "tool_search"]
    search = next(o for o in first.output if o.type == "tool_search_call")
    assert search.execution == "client" and search.arguments == {"query": "calendar"} and search.call_id
    assert first.status == "completed"
    # Codex's next request: its search's output holds the namespace it found
    replay = [o.model_dump(exclude_none=True) for o in first.output]
    output = {"type": "tool_search_output", "call_id": search.call_id, "status": "completed", "execution": "client",
              "tools": [CODEX_FOUND]}
    second = client.responses.create(model="gemini-3-flash-preview", tools=[WEATHER, CODEX_SEARCH], store=False,
                                     input=[{"role": "user", "content": text}, *replay, output],
                                     include=["reasoning.encrypted_content"])
    body = stack.last_body()
    assert declared(body) == ["get_weather", "tool_search", "mcp__calendar__create_event"]
    answer = body["contents"][-1]["parts"][0]["functionResponse"]
    assert answer["name"] == "tool_search" and answer["response"]["tools"][0]["name"] == "mcp__calendar__create_event"
    assert body["contents"][-2]["parts"][-1]["functionCall"]["name"] == "tool_search"
    assert body["contents"][-2]["parts"][-1].get("thoughtSignature")  # Gemini's own, from the carrier
    call = next(o for o in second.output if o.type == "function_call")
    assert (call.name, call.namespace) == ("create_event", "mcp__calendar")
    # and the turn after: the call in history keeps its tool declared
    third = client.responses.create(model="gemini-3-flash-preview", tools=[WEATHER, CODEX_SEARCH], store=False,
                                    input=[{"role": "user", "content": text}, *replay, output,
                                           *[o.model_dump(exclude_none=True) for o in second.output],
                                           {"type": "function_call_output", "call_id": call.call_id, "output": "ok"}],
                                    include=["reasoning.encrypted_content"])
    assert "mcp__calendar__create_event" in declared(stack.last_body())
    assert third.output[-1].type == "message"


def test_a_stored_chain_keeps_what_its_searches_loaded(stack, client: openai.OpenAI) -> None:
    tools = [WEATHER, *MANY, CALENDAR, {"type": "tool_search"}]
    text = "Please create_event for the launch [[mock:find calendar event]] [[mock:rounds 2]]"
    first = client.responses.create(model="gemini-3-flash-preview", input=text, tools=tools)
    call = next(o for o in first.output if o.type == "function_call")
    client.responses.create(model="gemini-3-flash-preview", tools=tools, previous_response_id=first.id,
                            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "created"}])
    body = stack.last_body()
    assert "create_event" in declared(body) and not any(n.startswith("crm_tool") for n in declared(body))
    roles = [c["role"] for c in body["contents"]]
    assert roles == ["user", "model", "user", "model", "user"]  # the search's turn pair kept in the chain


def test_a_bad_regex_is_the_searchs_error_not_a_crash() -> None:
    from proxy.tools.tool_search import SearchError, entry_of, search_bm25, search_regex
    entries = [entry_of("slack_send", "Send a Slack message", {"properties": {"channel": {}}}),
               entry_of("github__create_issue", "Open an issue", {"properties": {"title": {}}})]
    assert search_regex(entries, "(?i)SLACK") == ["slack_send"]
    assert search_regex(entries, "channel") == ["slack_send"]  # parameter names are searched
    assert search_bm25(entries, "create a github issue") == ["github__create_issue"]
    assert search_bm25(entries, "the of and") == []
    with pytest.raises(SearchError) as bad:
        search_regex(entries, "(unclosed")
    assert bad.value.code == "invalid_pattern"
    with pytest.raises(SearchError) as long:
        search_regex(entries, "a" * 201)
    assert long.value.code == "pattern_too_long"
    assert search_regex(entries, "(a+)+$") == []  # RE2: linear time, no catastrophic backtracking


# -- Anthropic: defer_loading, the tool-search server tools, tool_reference -----------------------

def anthropic_tools(search: str) -> list[dict]:
    many = [{"name": f"crm_tool_{n}", "description": f"CRM operation number {n} on accounts", "defer_loading": True,
             "input_schema": {"type": "object", "properties": {"account": {"type": "string"}}}} for n in range(40)]
    calendar = {"name": "create_event", "description": "Create a calendar event with a title", "defer_loading": True,
                "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}
    weather = {"name": "get_weather", "description": "Weather for a city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    return [weather, *many, calendar, {"type": f"tool_search_tool_{search}_20251119",
                                       "name": f"tool_search_tool_{search}"}]


@pytest.fixture
def claude(stack):
    import anthropic
    return anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0, _strict_response_validation=True)


@pytest.mark.parametrize(("search", "query"), [("regex", "(?i)calendar"), ("bm25", "calendar event")])
@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_tool_search_server_tool_finds_the_deferred_tool(stack, claude, search: str, query: str,
                                                                   stream: bool) -> None:
    tools = anthropic_tools(search)
    text = f"Please create_event for the launch [[mock:find {query}]] [[mock:rounds 2]]"
    before = stack.accepted
    args = {"model": "gemini-3-flash-preview", "max_tokens": 512, "tools": tools,
            "messages": [{"role": "user", "content": text}], "betas": ["advanced-tool-use-2025-11-20"]}
    if stream:
        with claude.beta.messages.stream(**args) as s:
            message = s.get_final_message()
    else:
        message = claude.beta.messages.create(**args)
    assert stack.accepted - before == 2
    first, second = (r["body"] for r in stack.received[-2:])
    assert declared(first) == ["get_weather", f"tool_search_tool_{search}"]
    assert "create_event" in declared(second) and len(declared(second)) == 3
    kinds = [b.type for b in message.content]
    assert "server_tool_use" in kinds and "tool_search_tool_result" in kinds, kinds
    use = next(b for b in message.content if b.type == "server_tool_use")
    assert use.name == f"tool_search_tool_{search}" and use.input == {"query": query}
    result = next(b for b in message.content if b.type == "tool_search_tool_result")
    assert result.tool_use_id == use.id
    assert [r.tool_name for r in result.content.tool_references] == ["create_event"]
    call = next(b for b in message.content if b.type == "tool_use")
    assert call.name == "create_event" and message.stop_reason == "tool_use"
    # Claude Code's way: the whole turn resent, statelessly; the search's pair goes back to Gemini
    claude.beta.messages.create(**{**args, "messages": [
        {"role": "user", "content": text},
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "created"}]}]})
    body = stack.last_body()
    assert "create_event" in declared(body)
    calls = [p["functionCall"]["name"] for c in body["contents"] for p in c["parts"] if "functionCall" in p]
    assert calls == [f"tool_search_tool_{search}", "create_event"]
    signed = [p for c in body["contents"] for p in c["parts"] if "functionCall" in p]
    assert all(p.get("thoughtSignature") for p in signed[:1])  # Gemini's own signature, from the carrier


def test_anthropic_bad_regex_is_a_search_error_block(stack, claude) -> None:
    message = claude.beta.messages.create(
        model="gemini-3-flash-preview", max_tokens=256, tools=anthropic_tools("regex"),
        messages=[{"role": "user", "content": "Please create_event [[mock:find (unclosed]] [[mock:rounds 2]]"}])
    result = next(b for b in message.content if b.type == "tool_search_tool_result")
    assert result.content.type == "tool_search_tool_result_error"
    assert result.content.error_code == "invalid_tool_input" and "RE2" in result.content.error_message


def test_a_tool_reference_in_a_tool_result_declares_the_tool(stack, claude) -> None:
    """Claude Code's own ToolSearch (a client tool) answers with tool_reference blocks."""
    tools = [t for t in anthropic_tools("regex") if "type" not in t]
    tools.append({"name": "ToolSearch", "description": "Search deferred tools",
                  "input_schema": {"type": "object", "properties": {"query": {"type": "string"}},
                                   "required": ["query"]}})
    text = "Please create_event for the launch [[mock:find select:create_event]] [[mock:rounds 2]]"
    first = claude.messages.create(model="gemini-3-flash-preview", max_tokens=256, tools=tools,
                                   messages=[{"role": "user", "content": text}])
    assert declared(stack.last_body()) == ["get_weather", "ToolSearch"]
    use = next(b for b in first.content if b.type == "tool_use")
    assert use.name == "ToolSearch" and use.input == {"query": "select:create_event"}
    history = [{"role": "user", "content": text},
               {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": [
                   {"type": "tool_reference", "tool_name": "create_event"}]}]}]
    second = claude.messages.create(model="gemini-3-flash-preview", max_tokens=256, tools=tools, messages=history)
    body = stack.last_body()
    assert declared(body) == ["get_weather", "create_event", "ToolSearch"] or set(declared(body)) == {
        "get_weather", "create_event", "ToolSearch"}
    assert "crm_tool_0" not in declared(body)
    response = body["contents"][-1]["parts"][0]["functionResponse"]["response"]
    assert response["tools"] == [{"name": "create_event"}] and "create_event is loaded" in response["output"]
    assert next(b for b in second.content if b.type == "tool_use").name == "create_event"


def test_a_thread_keeps_the_tools_its_search_found(stack, claude) -> None:
    """A server-held thread (beta message-threads-2026-08-12): the continue sends only the tool_result
    and no tools; the thread's history holds the search's pair, so the tool it found stays declared."""
    betas = ["message-threads-2026-08-12", "advanced-tool-use-2025-11-20"]
    text = "Please create_event for the launch [[mock:find calendar event]] [[mock:rounds 2]]"
    first = claude.beta.messages.create(model="gemini-3-flash-preview", max_tokens=256, tools=anthropic_tools("bm25"),
                                        messages=[{"role": "user", "content": text}], betas=betas,
                                        extra_body={"thread": {"type": "create"}})
    call = next(b for b in first.content if b.type == "tool_use")
    assert call.name == "create_event"
    second = claude.beta.messages.create(
        model="gemini-3-flash-preview", max_tokens=256, betas=betas,
        messages=[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "made"}]}],
        extra_body={"thread": {"type": "continue", "previous_message_id": first.id}})
    body = stack.last_body()
    assert set(declared(body)) == {"get_weather", "tool_search_tool_bm25", "create_event"}
    roles_calls = [(c["role"], [k for p in c["parts"] for k in p if k in ("functionCall", "functionResponse")])
                   for c in body["contents"]]
    assert roles_calls == [("user", []), ("model", ["functionCall"]), ("user", ["functionResponse"]),
                           ("model", ["functionCall"]), ("user", ["functionResponse"])]
    assert second.stop_reason == "end_turn" and "made" in second.content[-1].text
