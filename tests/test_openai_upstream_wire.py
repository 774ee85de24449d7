"""Gemini bodies to Chat Completions requests and Chat answers back (proxy/upstream/openai/): what maps,
what is refused by name, and no input that is not a ProxyError breaks it (hypothesis)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.errors import ProxyError, UpstreamError
from proxy.upstream.openai.answer import StreamTranslator, gemini_answer
from proxy.upstream.openai.request import chat_request

BODY = {"systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [{"role": "user", "parts": [{"text": "hi"}, {"inlineData": {"mimeType": "image/png",
                                                                                 "data": "AAAA"}}]},
                     {"role": "model", "parts": [{"text": "t", "thought": True},
                                                 {"functionCall": {"name": "f", "args": {"a": 1}}}]},
                     {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"output": "ok"}}}]}],
        "tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT", "properties": {
            "a": {"type": "INTEGER"}}}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}},
        "generationConfig": {"maxOutputTokens": 9, "stopSequences": ["x"], "temperature": 0.2,
                             "thinkingConfig": {"thinkingBudget": 0}}}


def test_a_body_maps_to_chat():
    req = chat_request("models/qwen3-8b", BODY, stream=True)
    assert req["model"] == "qwen3-8b" and req["stream"] and req["stream_options"] == {"include_usage": True}
    assert req["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]},
        {"role": "tool", "tool_call_id": "call_1_1", "content": "ok"}]
    assert req["tools"][0]["function"]["parameters"] == {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert req["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert (req["max_tokens"], req["stop"], req["temperature"]) == (9, ["x"], 0.2)


@pytest.mark.parametrize(("patch", "field"), [
    ({"tools": [{"googleSearch": {}}]}, "tools[0].googleSearch"),
    ({"generationConfig": {"speechConfig": {}}}, "generationConfig.speechConfig"),
    ({"contents": [{"role": "user", "parts": [{"fileData": {"fileUri": "gs://x"}}]}]}, "contents[0].parts[0]"),
    ({"contents": [{"role": "user", "parts": [{"inlineData": {"mimeType": "audio/wav", "data": "AA"}}]}]},
     "contents[0].parts[0].inlineData")])
def test_what_chat_cannot_carry_is_refused_by_name(patch, field):
    with pytest.raises(ProxyError) as e:
        chat_request("m", {**BODY, **patch}, stream=False)
    assert e.value.status == 400 and e.value.param == field


def test_answers_map_back_and_bad_arguments_are_a_502():
    answer = gemini_answer({"choices": [{"message": {"reasoning_content": "r", "content": "c", "tool_calls": [
        {"id": "i", "function": {"name": "f", "arguments": '{"a": 1}'}}]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2}}, "m")
    assert answer["candidates"][0]["content"]["parts"] == [
        {"text": "r", "thought": True}, {"text": "c"}, {"functionCall": {"name": "f", "args": {"a": 1}, "id": "i"}}]
    assert answer["candidates"][0]["finishReason"] == "STOP" and answer["usageMetadata"]["totalTokenCount"] == 5
    with pytest.raises(UpstreamError) as e:
        gemini_answer({"choices": [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": "{"}}]}}]}, "m")
    assert e.value.status == 502 and "not JSON" in e.value.message


def test_a_stream_without_a_finish_reason_stays_unfinished():
    t = StreamTranslator("m")
    out = t.feed({"choices": [{"index": 0, "delta": {"content": "partial"}}]}) + t.close()
    assert out and all("finishReason" not in c["candidates"][0] for c in out)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(
                        st.sampled_from(["role", "parts", "text", "functionCall", "functionResponse", "name", "args",
                                         "id", "inlineData", "mimeType", "thought", "response", "parts"]), c,
                        max_size=3), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(contents=st.lists(JSON, max_size=4), tools=JSON, config=JSON)
def test_odd_bodies_are_refused_cleanly_or_mapped(contents, tools, config):
    body = {"contents": contents, "tools": tools if isinstance(tools, list) else [], "generationConfig": config}
    try:
        chat_request("m", body, stream=False)
    except ProxyError as e:
        assert e.status == 400
