"""Issue 57 item 5: a conversation started on one Gemini 3 model and continued on another never
replays the first model's thought signatures (Gemini answers "Corrupted thought signature": its
signatures are bound to the model that made them, CLIProxyAPI #1538, Roo-Code #10554; the strict
mock binds its own so, proxy/mock/validate.py `sign`). Calls made by another model go with the
documented sentinel, as a carrier from another model already did; calls made by this model keep
their own signature. Through the official openai SDK: by previous_response_id, a same-session
resend of the whole history (store false), and Chat."""

import openai
import pytest

from proxy.mock.validate import sign
from proxy.signatures.sentinel import SENTINEL
from tests.conftest import WEATHER
from tests.harness import Stack

FLASH, PRO = "gemini-3-flash-preview", "gemini-3-pro-preview"
CHAT_WEATHER = {"type": "function", "function": {"name": "get_weather", "description": WEATHER["description"],
                                                 "parameters": WEATHER["parameters"]}}


def _calls(stack: Stack) -> list[dict]:
    """The functionCall parts of the last request the mock got, in order."""
    return [p for c in stack.last_body()["contents"] if c["role"] == "model" for p in c["parts"]
            if "functionCall" in p]


def test_previous_response_id_on_another_model(client: openai.OpenAI, stack: Stack) -> None:
    r1 = client.responses.create(model=FLASH, input="call get_weather city=Kyiv", tools=[WEATHER])
    [call] = r1.output
    r2 = client.responses.create(model=PRO, tools=[WEATHER], previous_response_id=r1.id, input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": "cold"},
        {"role": "user", "content": "thanks, now call get_weather city=Rome"}])
    assert r2.status == "completed" and r2.output[0].type == "function_call"
    [flash_call] = _calls(stack)
    assert flash_call["thoughtSignature"] == SENTINEL, "the flash model's signature never goes to pro"
    # Back and forth: pro's own call keeps pro's signature, flash's call keeps the sentinel.
    r3 = client.responses.create(model=PRO, tools=[WEATHER], previous_response_id=r2.id, input=[
        {"type": "function_call_output", "call_id": r2.output[0].call_id, "output": "warm"}])
    assert r3.status == "completed"
    first, second = _calls(stack)
    assert first["thoughtSignature"] == SENTINEL
    assert second["thoughtSignature"] == sign(PRO, "get_weather", {"city": "Rome"})
    # And back to flash: its own call is signed by it again, pro's goes with the sentinel.
    r4 = client.responses.create(model=FLASH, tools=[WEATHER], previous_response_id=r3.id, input="and Oslo?")
    assert r4.status == "completed"
    first, second = _calls(stack)
    assert first["thoughtSignature"] == sign(FLASH, "get_weather", {"city": "Kyiv"})
    assert second["thoughtSignature"] == SENTINEL


def test_a_same_session_resend_on_another_model(client: openai.OpenAI, stack: Stack) -> None:
    r1 = client.responses.create(model=FLASH, input="call get_weather city=Kyiv", tools=[WEATHER], store=False)
    [call] = r1.output
    history = [{"role": "user", "content": "call get_weather city=Kyiv"},
               {"type": "function_call", "call_id": call.call_id, "name": "get_weather", "arguments": call.arguments},
               {"type": "function_call_output", "call_id": call.call_id, "output": "cold"}]
    r2 = client.responses.create(model=PRO, store=False, tools=[WEATHER], input=history)
    assert r2.status == "completed"
    [sent] = _calls(stack)
    assert sent["thoughtSignature"] == SENTINEL
    r3 = client.responses.create(model=FLASH, store=False, tools=[WEATHER], input=history)  # its own model again
    assert r3.status == "completed"
    [sent] = _calls(stack)
    assert sent["thoughtSignature"] == sign(FLASH, "get_weather", {"city": "Kyiv"})


@pytest.mark.parametrize("stream", [False, True])
def test_chat_on_another_model(stack: Stack, stream: bool) -> None:
    c = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0, _strict_response_validation=True)
    msgs: list = [{"role": "user", "content": "call get_weather city=Kyiv"}]
    first = c.chat.completions.create(model=FLASH, messages=msgs, tools=[CHAT_WEATHER])
    [tc] = first.choices[0].message.tool_calls
    msgs += [first.choices[0].message.model_dump(exclude_none=True),
             {"role": "tool", "tool_call_id": tc.id, "content": "cold"}]
    if stream:
        chunks = list(c.chat.completions.create(model=PRO, messages=msgs, tools=[CHAT_WEATHER], stream=True))
        assert [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason] == [
            "stop"]
    else:
        assert c.chat.completions.create(model=PRO, messages=msgs, tools=[CHAT_WEATHER]).choices[0].finish_reason \
            == "stop"
    [sent] = _calls(stack)
    assert sent["thoughtSignature"] == SENTINEL


def test_a_websocket_s_unstored_continuation_on_another_model(stack: Stack) -> None:
    """The socket's own cache of its last history (store false, by previous_response_id) is made
    ready for the model asked for too."""
    from tests.test_responses_websocket import BETA, _client, _until_end

    with _client(stack).responses.connect(extra_headers=BETA) as conn:
        conn.send({"type": "response.create", "model": FLASH, "store": False, "tools": [WEATHER],
                   "input": "call get_weather city=Kyiv"})
        first = _until_end(conn)[-1]["response"]
        [call] = [o for o in first["output"] if o["type"] == "function_call"]
        conn.send({"type": "response.create", "model": PRO, "store": False, "tools": [WEATHER],
                   "previous_response_id": first["id"],
                   "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "cold"}]})
        assert _until_end(conn)[-1]["type"] == "response.completed"
    [sent] = _calls(stack)
    assert sent["thoughtSignature"] == SENTINEL


def test_a_v1_gemini_conversation_on_another_model(stack: Stack) -> None:
    """The proxy's own `/v1/gemini` conversation (the history it keeps): each kept turn names its
    model. (Gemini's own REST shapes, sent as a Gemini-native client sends them; urllib, since the
    route is the proxy's own.)"""
    import json

    from tests.test_bad_input import post
    from tests.test_gemini_native_route import TOOLS

    url = f"{stack.url}/v1/gemini"
    status, r1 = post(url, json.dumps({"model": FLASH, "tools": TOOLS, "conversation": "switch",
                                       "input": "call get_weather city=Lyon"}).encode())
    assert status == 200, r1
    fc = r1["candidates"][0]["content"]["parts"][0]["functionCall"]
    answer = [{"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "id": fc["id"],
                                                               "response": {"output": "mild"}}}]}]
    status, r2 = post(url, json.dumps({"model": PRO, "tools": TOOLS, "conversation": "switch",
                                       "input": answer}).encode())
    assert status == 200, r2
    [sent] = _calls(stack)
    assert sent["thoughtSignature"] == SENTINEL
    status, r3 = post(url, json.dumps({"model": FLASH, "tools": TOOLS, "conversation": "switch",
                                       "input": "and now?"}).encode())
    assert status == 200, r3
    [sent] = _calls(stack)
    assert sent["thoughtSignature"] == sign(FLASH, "get_weather", {"city": "Lyon"}), "its own model: its own"
