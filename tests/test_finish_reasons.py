"""Gemini's newer finish reasons, each in every protocol's own shape (issue 9, item 6): text that
came before a bad finish never turns the answer into a success."""

import openai
import pytest

from tests.conftest import WEATHER

CHAT_WEATHER = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k not in ("type", "strict")}}
FAILED = [("TOO_MANY_TOOL_CALLS", "server_error"), ("MISSING_THOUGHT_SIGNATURE", "invalid_prompt"),
          ("MALFORMED_RESPONSE", "server_error"), ("UNEXPECTED_TOOL_CALL", "server_error"),
          ("MALFORMED_FUNCTION_CALL", "server_error"), ("NO_IMAGE", "server_error"), ("LANGUAGE", "server_error")]
FILTERED = ["IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "SPII", "BLOCKLIST"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("reason", "code"), FAILED)
def test_responses_failed_with_code(client: openai.OpenAI, reason: str, code: str, stream: bool) -> None:
    text = f"[[mock:finish {reason}]] hello"
    if stream:
        events = list(client.responses.create(model="gemini-3-flash-preview", input=text, tools=[WEATHER],
                                              stream=True))
        assert [e.type for e in events].count("response.output_text.delta") >= 1  # the text did stream
        assert events[-1].type == "response.failed"
        r = events[-1].response
    else:
        r = client.responses.create(model="gemini-3-flash-preview", input=text, tools=[WEATHER])
    assert r.status == "failed" and r.error.code == code and reason in r.error.message


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("reason", FILTERED)
def test_responses_filtered_is_incomplete(client: openai.OpenAI, reason: str, stream: bool) -> None:
    text = f"[[mock:finish {reason}]] hello"
    if stream:
        events = list(client.responses.create(model="gemini-2.5-flash", input=text, stream=True))
        assert events[-1].type == "response.incomplete"
        r = events[-1].response
    else:
        r = client.responses.create(model="gemini-2.5-flash", input=text)
    assert r.status == "incomplete" and r.incomplete_details.reason == "content_filter"


@pytest.mark.parametrize(("reason", "_"), FAILED)
def test_chat_failed_finishes_are_errors(client: openai.OpenAI, reason: str, _: str) -> None:
    messages = [{"role": "user", "content": f"[[mock:finish {reason}]] hi"}]
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="gemini-2.5-flash", tools=[CHAT_WEATHER], messages=messages)
    assert info.value.status_code == 502 and reason in info.value.message
    chunks = []
    with pytest.raises(openai.APIError) as err:
        for c in client.chat.completions.create(model="gemini-2.5-flash", tools=[CHAT_WEATHER], stream=True,
                                                messages=messages):
            chunks.append(c)
    assert reason in str(err.value)
    assert not any(c.choices and c.choices[0].finish_reason for c in chunks), "no finish before the error"


@pytest.mark.parametrize("reason", FILTERED)
def test_chat_filtered_finishes(client: openai.OpenAI, reason: str) -> None:
    r = client.chat.completions.create(model="gemini-2.5-flash",
                                       messages=[{"role": "user", "content": f"[[mock:finish {reason}]]"}])
    assert r.choices[0].finish_reason == "content_filter"
