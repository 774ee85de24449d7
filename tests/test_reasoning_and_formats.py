"""Reasoning settings, thought summaries, structured output (openai SDK strict, Responses and Chat)."""

import json

import jsonschema
import openai
import pytest

from tests.conftest import WEATHER


@pytest.mark.parametrize(("model", "effort", "thinking"), [
    ("gemini-2.5-flash", "low", {"thinkingBudget": 1024}),
    ("gemini-2.5-flash", "none", {"thinkingBudget": 0}),
    ("gemini-2.5-pro", "none", {"thinkingBudget": 128}),  # 2.5 Pro cannot switch thinking off
    ("gemini-2.5-flash", "xhigh", {"thinkingBudget": 24576}),  # clamped to Flash's maximum
    ("gemini-2.5-pro", "max", {"thinkingBudget": -1}),
    ("gemini-3-pro-preview", "high", {"thinkingLevel": "HIGH"}),
    ("gemini-3-flash-preview", "minimal", {"thinkingLevel": "MINIMAL"}),
])
def test_effort_maps_to_one_thinking_setting(client: openai.OpenAI, stack, model, effort, thinking) -> None:
    r = client.responses.create(model=model, input="hi", reasoning={"effort": effort})
    assert stack.last_body()["generationConfig"]["thinkingConfig"] == thinking
    assert r.reasoning.effort == effort
    client.chat.completions.create(model=model, reasoning_effort=effort, messages=[{"role": "user", "content": "x"}])
    assert stack.last_body()["generationConfig"]["thinkingConfig"] == thinking


def test_summary_streams_reasoning_items(client: openai.OpenAI, stack) -> None:
    with client.responses.stream(model="gemini-2.5-flash", input="call get_weather city=Bonn", tools=[WEATHER],
                                 reasoning={"effort": "medium", "summary": "auto"}) as s:
        kinds = [e.type for e in s]
        final = s.get_final_response()
    assert stack.last_body()["generationConfig"]["thinkingConfig"] == {"includeThoughts": True,
                                                                       "thinkingBudget": 8192}
    assert "response.reasoning_summary_text.delta" in kinds and "response.reasoning_summary_part.done" in kinds
    assert [o.type for o in final.output] == ["reasoning", "function_call"]
    assert final.output[0].summary[0].text.startswith("**Considering the request**")
    assert final.usage.output_tokens_details.reasoning_tokens > 0


def test_chat_reasoning_content(client: openai.OpenAI) -> None:
    r = client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": "hi"}],
                                       extra_body={"reasoning_effort": "low"})
    assert r.usage.completion_tokens_details.reasoning_tokens == 0  # no summary asked: no thought parts


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "temp": {"type": "integer", "minimum": -50},
                                           "tags": {"type": "array", "items": {"type": "string"}}},
          "required": ["city", "temp", "tags"], "additionalProperties": False,
          "$schema": "https://json-schema.org/draft/2020-12/schema"}


def test_responses_json_schema_output(client: openai.OpenAI, stack) -> None:
    r = client.responses.create(model="gemini-2.5-flash", input="weather as JSON city=Pisa",
                                text={"format": {"type": "json_schema", "name": "weather", "schema": SCHEMA,
                                                 "strict": True}})
    gen = stack.last_body()["generationConfig"]
    assert gen["responseMimeType"] == "application/json"
    assert "$schema" not in gen["responseJsonSchema"] and gen["responseJsonSchema"]["additionalProperties"] is False
    data = json.loads(r.output_text)
    jsonschema.validate(data, SCHEMA)
    assert data["city"] == "Pisa" and r.text.format.type == "json_schema"


def test_chat_response_format(client: openai.OpenAI, stack) -> None:
    r = client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": "city=Bari"}],
                                       response_format={"type": "json_schema",
                                                        "json_schema": {"name": "w", "schema": SCHEMA}})
    jsonschema.validate(json.loads(r.choices[0].message.content), SCHEMA)
    client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": "x"}],
                                   response_format={"type": "json_object"})
    assert stack.last_body()["generationConfig"] == {"responseMimeType": "application/json"}


def test_bad_effort_is_a_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="gemini-2.5-flash", input="x", reasoning={"effort": "extreme"})
    assert info.value.body["param"] == "reasoning.effort"
