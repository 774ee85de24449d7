"""Agent frameworks on the Anthropic Messages front-end: pydantic-ai's AnthropicModel and LangChain's
ChatAnthropic run a tool loop against Gemini (2.5 and 3) through the proxy and the strict mock: the
model calls the tool, the framework runs it, and the answer quotes what it returned."""

import pydantic_ai
import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

MODELS = ["gemini-2.5-flash", "gemini-3-flash-preview"]


@pytest.mark.parametrize("model", MODELS)
def test_pydantic_ai_anthropic_model_runs_a_tool_loop(stack, model: str) -> None:
    agent = pydantic_ai.Agent(AnthropicModel(model, provider=AnthropicProvider(base_url=stack.url, api_key="k")))
    ran: list[str] = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"Sunny in {city}, 21 C"

    result = agent.run_sync("What's the weather in Oslo? (get_weather)")
    assert ran and "21 C" in result.output
    calls = [p for c in stack.last_body()["contents"] if c["role"] == "model" for p in c["parts"]
             if "functionCall" in p]
    assert calls and calls[0]["functionCall"]["name"] == "get_weather"


@pytest.mark.parametrize("model", MODELS)
def test_langchain_chat_anthropic_runs_a_tool_loop(stack, model: str) -> None:
    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"Rainy in {city}, 12 C"

    llm = ChatAnthropic(model=model, base_url=stack.url, api_key="k", max_retries=0,
                                            max_tokens=1024).bind_tools([get_weather])
    question = HumanMessage("What's the weather in Bergen? (get_weather)")
    asked = llm.invoke([question])
    assert asked.tool_calls and asked.tool_calls[0]["name"] == "get_weather"
    answered = llm.invoke([question, asked, get_weather.invoke(asked.tool_calls[0])])
    text = answered.content if isinstance(answered.content, str) else "".join(
        b.get("text", "") for b in answered.content if isinstance(b, dict))
    assert "12 C" in text
