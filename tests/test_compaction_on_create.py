"""Server-side compaction on create: `context_management: [{"type": "compaction", "compact_threshold": N}]`
on POST /v1/responses (developers.openai.com/api/docs/guides/compaction: "When the rendered token
count crosses the configured threshold, the server runs server-side compaction ... The response
stream includes the encrypted compaction item"). The real openai SDK (strict) runs a stateless tool
loop on a Gemini 3 model past the threshold: the compaction item arrives (whole and streamed), the
next turn continues from the output appended to the input as usual, and the kept call's thought
signature reaches Gemini intact."""

import json
from typing import Any

import openai
import pytest

from tests.conftest import WEATHER

MODEL = "gemini-3-flash-preview"
THRESHOLD = 850  # tokens: the loop below passes it on its third turn (~680 on its second, ~1,030 then)
COMPACT = [{"type": "compaction", "compact_threshold": THRESHOLD}]
FILLER = "The station log says: " + "wind calm, sky clear, pressure steady. " * 30  # ~300 tokens


def dump(output: list[Any]) -> list[dict[str, Any]]:
    return [o.model_dump(exclude_none=True) for o in output]


def signed_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for c in body["contents"] for p in c["parts"] if "functionCall" in p]


@pytest.mark.parametrize("stream", [False, True])
def test_a_stateless_loop_compacts_on_create_and_continues(client: openai.OpenAI, stack, stream: bool) -> None:
    kw: dict[str, Any] = dict(model=MODEL, tools=[WEATHER], store=False, include=["reasoning.encrypted_content"])

    def create(inp: list[dict[str, Any]], threshold: int = THRESHOLD) -> Any:
        kw["context_management"] = [{"type": "compaction", "compact_threshold": threshold}]
        if not stream:
            return client.responses.create(input=inp, **kw)
        with client.responses.stream(input=inp, **kw) as s:
            events = list(s)
            final = s.get_final_response()
        added = [e.item.type for e in events if e.type == "response.output_item.added"]
        done = [e.item.type for e in events if e.type == "response.output_item.done"]
        if "compaction" in added:  # streamed as OpenAI's items are: added then done, first in the output
            assert added[0] == done[0] == "compaction"
        return final

    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Oslo? (get_weather) " + FILLER}]
    first = create(history)
    call = next(o for o in first.output if o.type == "function_call")
    history += [*dump(first.output), {"type": "function_call_output", "call_id": call.call_id,
                                      "output": "Oslo: sunny, 21 C. " + FILLER}]
    second = create(history)
    assert all(o.type != "compaction" for o in [*first.output, *second.output])  # under the threshold
    history += dump(second.output)
    history.append({"role": "user", "content": "And in Bergen? (get_weather)"})

    before = stack.accepted
    third = create(history)  # past the threshold: compacted in the request
    sent = stack.received[before - stack.accepted:]
    assert len(sent) == 2, "one request for the summary, one for the turn"
    assert "Oslo: sunny, 21 C" in json.dumps(sent[0]["body"])  # Gemini summarised the dropped turns
    turn = sent[1]["body"]
    assert "Summary of the earlier part" in json.dumps(turn["contents"][0])
    assert "Oslo: sunny" not in json.dumps(turn["contents"][1:])  # replaced by the summary, not repeated
    assert third.output[0].type == "compaction" and third.output[0].encrypted_content.startswith("gtp.c1.")
    assert "Oslo" not in third.output[0].encrypted_content  # sealed
    call2 = next(o for o in third.output if o.type == "function_call")
    assert third.status == "completed"
    # The summary was billed too: its tokens are in the usage (the mock counts a quarter of the contents).
    assert third.usage.input_tokens == sum(max(1, len(json.dumps(r["body"]["contents"])) // 4) for r in sent)

    # The next turn: the output appended to the input, as OpenAI's guide says; the items before the
    # compaction item are what it stands for, so they are not sent again.
    history += [*dump(third.output), {"type": "function_call_output", "call_id": call2.call_id,
                                      "output": "Bergen: rain, 9 C"}]
    before = stack.accepted
    # (A higher threshold from here on: the mock's "summary" echoes its whole prompt, so it is no
    # shorter than the turns it replaced, and would compact again.)
    fourth = create(history, 10_000)
    [body] = [r["body"] for r in stack.received[before - stack.accepted:]]
    assert fourth.status == "completed" and all(o.type != "compaction" for o in fourth.output)
    text = json.dumps(body["contents"])
    assert "Summary of the earlier part" in json.dumps(body["contents"][0])
    assert "Oslo: sunny" not in json.dumps(body["contents"][1:])  # (the mock's summary quotes it)
    [kept] = signed_calls(body)  # the call made after the compaction, with Gemini's own signature
    assert kept["functionCall"]["id"] == call2.call_id
    assert kept.get("thoughtSignature") and kept["thoughtSignature"] != "skip_thought_signature_validator"
    assert "Bergen: rain, 9 C" in text
    # The client may also drop what came before the compaction item (the guide's latency tip).
    k = next(i for i, item in enumerate(history) if item.get("type") == "compaction")
    create(history[k:], 10_000)
    assert stack.received[-1]["body"]["contents"] == body["contents"]
    # /v1/responses/compact reads the item the same way: what it stands for is summarised once -- the
    # turns it replaced are not sent again, so all /compact drops is the earlier summary, folded in
    # without asking Gemini.
    before = stack.accepted
    compacted = client.responses.with_raw_response.compact(model=MODEL, input=history).http_response.json()
    assert compacted["output"][-1]["type"] == "compaction"
    assert stack.accepted == before


def test_stateful_compaction_starts_a_compacted_chain(client: openai.OpenAI, stack) -> None:
    """With previous_response_id the stored chain is compacted; the next turn continues from the
    compacted response, its history short."""
    first = client.responses.create(model=MODEL, input="My name is Alice. " + FILLER)
    second = client.responses.create(model=MODEL, previous_response_id=first.id, input="I like tea. " + FILLER,
                                     context_management=COMPACT)
    assert second.output[0].type == "compaction" and second.previous_response_id == first.id
    third = client.responses.create(model=MODEL, previous_response_id=second.id, input="What do I like?")
    contents = stack.last_body()["contents"]
    assert third.status == "completed" and "Summary of the earlier part" in json.dumps(contents[0])
    assert "My name is Alice" not in json.dumps(contents[1:]) and "I like tea" in json.dumps(contents)


def test_an_unknown_context_management_type_is_refused_by_name(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input="hi", context_management=[{"type": "clear_tool_uses"}])
    assert e.value.body["param"] == "context_management[0].type"



@pytest.mark.parametrize("stream", [False, True])
def test_a_compaction_trigger_is_answered_with_the_compaction_alone(client: openai.OpenAI, stack, stream: bool
                                                                     ) -> None:
    """Codex's remote compaction (v2): the input ends with `{"type": "compaction_trigger"}`; the answer is
    one `compaction` item standing for everything before it, and Gemini is asked only for the summary."""
    history = [{"role": "user", "content": "Weather in Oslo? (get_weather) " + FILLER}]
    first = client.responses.create(model=MODEL, tools=[WEATHER], store=False, input=history)
    call = next(o for o in first.output if o.type == "function_call")
    history += [*dump(first.output), {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
    before = stack.accepted
    trigger = [*history, {"type": "compaction_trigger"}]
    if stream:
        with client.responses.stream(model=MODEL, tools=[WEATHER], store=False, input=trigger) as s:
            kinds = [e.type for e in s]
            answer = s.get_final_response()
        assert kinds[-1] == "response.completed" and "response.output_item.added" in kinds
    else:
        answer = client.responses.create(model=MODEL, tools=[WEATHER], store=False, input=trigger)
    assert [o.type for o in answer.output] == ["compaction"] and answer.status == "completed"
    assert stack.accepted - before == 1  # the summary only: no turn was asked for
    assert "sunny" in json.dumps(stack.received[-1]["body"])  # what it summarised
    assert answer.usage.input_tokens > 0  # the summary's tokens, billed
    # Codex continues from its messages and the item: the summary goes first
    client.responses.create(model=MODEL, tools=[WEATHER], store=False,
                            input=[history[0], answer.output[0].model_dump(exclude_none=True),
                                   {"role": "user", "content": "thanks"}])
    assert "Summary of the earlier part" in json.dumps(stack.last_body()["contents"][0])


def test_a_compaction_trigger_anywhere_but_last_is_refused(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model=MODEL, input=[{"type": "compaction_trigger"}, {"role": "user", "content": "hi"}])
    assert "input[0]" in str(refused.value) and "last input item" in str(refused.value)
