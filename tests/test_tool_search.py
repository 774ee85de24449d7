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
