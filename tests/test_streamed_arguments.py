"""Streamed call arguments (issue 9, item 2): with `--stream-arguments`, Gemini's partialArgs reach
Responses and Chat clients as argument deltas, JSON-correct at every step, their concatenation the
final arguments, the sync answer the same, history replayed whole."""

import json

import openai
import pytest

from proxy.from_gemini.model_turn import ModelTurn
from proxy.from_gemini.partial_args import ArgumentText, PartialArgsError, PartialCalls
from proxy.intercept.capture_calls import CallCapture
from proxy.mock.model import fragment_calls
from proxy.model_rules import ModelRules
from tests.harness import Stack

WRITE = {"type": "function", "name": "write_file", "description": "Write a file",
         "parameters": {"type": "object", "required": ["path", "content"], "properties": {
             "path": {"type": "string"}, "content": {"type": "string"},
             "mode": {"type": "integer"}}}}
CHAT_WRITE = {"type": "function", "function": {k: v for k, v in WRITE.items() if k != "type"}}
BIG = "".join(f"line{i:05d}" for i in range(2000))  # 20,000 characters
PROMPT = f"call write_file path=notes.txt mode=420 content={BIG}"


@pytest.fixture(scope="module")
def streaming():
    s = Stack(rules=ModelRules.parse(stream_arguments=["gemini-3*"]))
    yield s
    s.close()


@pytest.fixture
def sclient(streaming: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{streaming.url}/v1", api_key="k", _strict_response_validation=True,
                         max_retries=0)


def test_responses_stream_arguments_in_deltas(sclient: openai.OpenAI, streaming: Stack) -> None:
    events = list(sclient.responses.create(model="gemini-3-flash-preview", input=PROMPT, tools=[WRITE], stream=True))
    assert streaming.last_body()["toolConfig"]["functionCallingConfig"]["streamFunctionCallArguments"] is True
    deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(deltas) >= 10, "the arguments arrive in pieces"
    [done] = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert "".join(deltas) == done.arguments
    assert json.loads(done.arguments) == {"path": "notes.txt", "mode": 420, "content": BIG}
    added = [e for e in events if e.type == "response.output_item.added" and e.item.type == "function_call"]
    assert added and added[0].item.name == "write_file"
    assert events.index(added[0]) < events.index(next(e for e in events if e.type.endswith("arguments.delta")))
    final = events[-1].response
    assert final.status == "completed" and final.output[-1].arguments == done.arguments
    sync = sclient.responses.create(model="gemini-3-flash-preview", input=PROMPT, tools=[WRITE])
    assert [o.arguments for o in sync.output if o.type == "function_call"] == [done.arguments]
    # the next turn replays the call whole, with its signature (the mock checks both)
    call = final.output[-1]
    r2 = sclient.responses.create(model="gemini-3-flash-preview", previous_response_id=final.id, tools=[WRITE],
                                  input=[{"type": "function_call_output", "call_id": call.call_id, "output": "ok"}])
    assert r2.status == "completed"
    replayed = [p for c in streaming.last_body()["contents"] for p in c["parts"] if "functionCall" in p]
    assert replayed[0]["functionCall"]["args"]["content"] == BIG and replayed[0]["thoughtSignature"]
    assert "partialArgs" not in replayed[0]["functionCall"]


def test_chat_stream_arguments_in_deltas(sclient: openai.OpenAI) -> None:
    chunks = list(sclient.chat.completions.create(model="gemini-3-pro-preview", stream=True, tools=[CHAT_WRITE],
                                                  messages=[{"role": "user", "content": PROMPT}]))
    deltas = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert deltas[0].id and deltas[0].function.name == "write_file" and deltas[0].function.arguments == ""
    assert len(deltas) >= 10 and {d.index for d in deltas} == {0}
    text = "".join(d.function.arguments or "" for d in deltas)
    assert json.loads(text) == {"path": "notes.txt", "mode": 420, "content": BIG}
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]
    sync = sclient.chat.completions.create(model="gemini-3-pro-preview", tools=[CHAT_WRITE],
                                           messages=[{"role": "user", "content": PROMPT}])
    assert sync.choices[0].message.tool_calls[0].function.arguments == text


def test_parallel_streamed_calls_keep_their_indexes(sclient: openai.OpenAI) -> None:
    tools = [WRITE, {"type": "function", "name": "get_time", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
    events = list(sclient.responses.create(model="gemini-3-flash-preview", tools=tools, stream=True,
                                           input="call write_file path=a content=b and get_time city=Oslo"))
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert [json.loads(d.arguments) for d in done] == [{"path": "a", "content": "b"}, {"city": "Oslo"}]
    for d in done:
        assert "".join(e.delta for e in events if e.type.endswith("arguments.delta") and e.item_id == d.item_id) \
            == d.arguments


def test_not_asked_on_models_that_refuse_it(sclient: openai.OpenAI, streaming: Stack) -> None:
    events = list(sclient.responses.create(model="gemini-2.5-flash", input="call write_file path=a content=b",
                                           tools=[WRITE], stream=True))
    assert events[-1].type == "response.completed"
    assert "toolConfig" not in streaming.last_body()  # 2.5 (the mock, like Google) refuses the flag
    deltas = [e for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(deltas) == 1, "a call sent whole still goes out whole"


def test_off_by_default(client: openai.OpenAI, stack) -> None:
    list(client.responses.create(model="gemini-3-flash-preview", input="call write_file path=a content=b",
                                 tools=[WRITE], stream=True))
    assert "streamFunctionCallArguments" not in json.dumps(stack.last_body())


def _fragments(args: dict) -> list[dict]:
    chunk = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "f", "id": "x1", "args": args}, "thoughtSignature": "c2ln"}]},
        "finishReason": "STOP"}]}
    return [p for c in fragment_calls([chunk]) for p in c["candidates"][0]["content"]["parts"]]


@pytest.mark.parametrize("args", [
    {"a": "x"}, {"a": 1, "b": True, "c": None, "d": 2.5}, {"nested": {"deep": {"list": [1, "two", {"k": "v"}]}}},
    {"quote\"d key": "va\"lue\n\t\u2603", "s p a c e": "x" * 3000}, {},
])
def test_pieces_join_to_the_arguments(args: dict) -> None:
    calls, text = PartialCalls(), ""
    for part in _fragments(args):
        events, whole = calls.feed(part)
        assert whole is None
        for ev in events:
            text += ev.text
            if ev.kind == "end":
                assert ev.call.whole_part() == {"functionCall": {"name": "f", "id": "x1", "args": args},
                                                "thoughtSignature": "c2ln"}
    assert json.loads(text) == args


def test_history_and_capture_join_the_pieces() -> None:
    args = {"path": "p", "content": "y" * 5000}
    turn, capture = ModelTurn(), CallCapture()
    for part in _fragments(args):
        turn.add(part)
    assert turn.parts == [{"functionCall": {"name": "f", "id": "x1", "args": args}, "thoughtSignature": "c2ln"}]
    for part in _fragments(args):
        capture.feed({"candidates": [{"content": {"role": "model", "parts": [part]}}]})
    capture.feed({"candidates": [{"content": {"role": "model", "parts": [{"text": "."}]}, "finishReason": "STOP"}]})
    [record] = capture.calls
    assert record.gemini_id == "x1" and record.signature == "c2ln" and record.args == args


@pytest.mark.parametrize("bad", [{"jsonPath": "a.b", "stringValue": "x"}, {"jsonPath": "$.a"},
                                 {"jsonPath": "$..a", "boolValue": True}, {"jsonPath": "$.a", "numberValue": "1"}])
def test_unplaceable_fragments_are_502s(bad: dict) -> None:
    with pytest.raises(PartialArgsError) as e:
        ArgumentText().feed(bad)
    assert e.value.status == 502
