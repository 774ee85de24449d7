"""The official google-genai SDK against the mock: the mock speaks real Gemini."""

import pytest
from google import genai
from google.genai import errors, types

WEATHER = types.FunctionDeclaration(
    name="get_weather", description="Weather for a city",
    parameters=types.Schema(type=types.Type.OBJECT, properties={"city": types.Schema(type=types.Type.STRING)},
                            required=["city"]))


@pytest.fixture
def gclient(stack) -> genai.Client:
    return genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=stack.mock_url))


def test_text_and_stream(gclient) -> None:
    r = gclient.models.generate_content(model="gemini-2.5-flash", contents="hello mock")
    assert r.text == "Mock Gemini (gemini-2.5-flash) heard: hello mock"
    assert r.usage_metadata.prompt_token_count > 0
    chunks = list(gclient.models.generate_content_stream(model="gemini-2.5-flash",
                                                         contents="a longer sentence to stream in pieces"))
    assert len(chunks) >= 3
    assert "".join(c.text or "" for c in chunks) == "Mock Gemini (gemini-2.5-flash) heard: a longer sentence " \
                                                    "to stream in pieces"
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro-preview"])
def test_function_calling_round_trip(gclient, model) -> None:
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[WEATHER])],
                                         automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    history = [types.Content(role="user", parts=[types.Part(text="call get_weather city=Paris")])]
    r1 = gclient.models.generate_content(model=model, contents=history, config=config)
    [fc] = r1.function_calls
    assert fc.name == "get_weather" and fc.args == {"city": "Paris"}
    if model.startswith("gemini-3"):
        assert fc.id and r1.candidates[0].content.parts[0].thought_signature
    history.append(r1.candidates[0].content)
    history.append(types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
        name="get_weather", id=fc.id, response={"output": "sunny"}))]))
    r2 = gclient.models.generate_content(model=model, contents=history, config=config)
    assert r2.text == 'Tool results: get_weather returned {"output": "sunny"}'


def test_gemini3_rejects_a_dropped_signature(gclient) -> None:
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[WEATHER])],
                                         automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    r1 = gclient.models.generate_content(model="gemini-3-pro-preview", contents="call get_weather city=Oslo",
                                         config=config)
    [fc] = r1.function_calls
    history = [types.Content(role="user", parts=[types.Part(text="call get_weather city=Oslo")]),
               types.Content(role="model", parts=[types.Part(function_call=fc)]),
               types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                   name="get_weather", id=fc.id, response={"output": "x"}))])]
    with pytest.raises(errors.ClientError) as info:
        gclient.models.generate_content(model="gemini-3-pro-preview", contents=history, config=config)
    assert info.value.code == 400 and "missing a thought_signature" in info.value.message


def test_sdk_sees_geminis_errors(gclient) -> None:
    with pytest.raises(errors.ClientError) as info:
        gclient.models.generate_content(model="gemini-2.5-flash", contents="[[mock:error 429]]")
    assert info.value.code == 429 and info.value.status == "RESOURCE_EXHAUSTED"
