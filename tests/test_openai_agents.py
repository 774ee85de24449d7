"""The openai-agents SDK runs an agent whose function tools take Pydantic models ($defs / anyOf schemas,
strict mode) to completion against the front-end + mock, through Responses and Chat Completions,
whole and streamed (issue 23: an external client drives both APIs through tool calls)."""

import asyncio
from enum import StrEnum
from typing import Literal

import pytest
from pydantic import BaseModel


class Units(StrEnum):
    celsius = "celsius"
    fahrenheit = "fahrenheit"


class Location(BaseModel):
    city: str
    country: str | None = None


class Window(BaseModel):
    start: int
    end: int | None = None


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro-preview"])
def test_agent_with_pydantic_tools_runs_to_completion(stack, model: str, api: str, stream: bool) -> None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    seen: list = []

    @function_tool
    def get_weather(location: Location, units: Units) -> str:
        """Current weather for a location."""
        seen.append(("weather", location, units))
        return f"sunny in {location.city}"

    @function_tool
    def get_forecast(location: Location, window: Window, detail: Literal["short", "long"]) -> str:
        """Forecast for a window of days."""
        seen.append(("forecast", location, window, detail))
        return "rain later"

    @function_tool
    def get_time(zone: str) -> str:
        """Local time in a zone."""
        return "noon"

    async def run() -> str:
        client = AsyncOpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True)
        kind = OpenAIResponsesModel if api == "responses" else OpenAIChatCompletionsModel
        agent = Agent(name="weather", instructions="Use the tools.", tools=[get_weather, get_forecast, get_time],
                      model=kind(model=model, openai_client=client))
        prompt = "call get_weather and get_forecast city=Paris start=1"
        if not stream:
            return (await Runner.run(agent, prompt)).final_output
        result = Runner.run_streamed(agent, prompt)
        async for _ in result.stream_events():
            pass
        return result.final_output

    final = asyncio.run(run())
    assert final.startswith("Tool results: get_weather returned") and "get_forecast returned" in final
    assert "sunny in Paris" in final and "rain later" in final
    weather = next(s for s in seen if s[0] == "weather")
    assert weather[1].city == "Paris" and isinstance(weather[2], Units)
    forecast = next(s for s in seen if s[0] == "forecast")
    assert forecast[2].start == 1 and forecast[3] in ("short", "long")
    decls = stack.last_body()["tools"][0]["functionDeclarations"]
    assert {d["name"] for d in decls} == {"get_weather", "get_forecast", "get_time"}
