"""Anthropic context editing (beta context-management-2025-06-27) through the real anthropic SDK's beta
client: `clear_tool_uses_20250919` (trigger, keep, exclude_tools, clear_tool_inputs, clear_at_least)
and `clear_thinking_20251015` (keep) applied to what reaches Gemini (the strict mock), with the
`context_management.applied_edits` report on the message (whole and streamed), typed by the SDK's own
BetaContextManagementResponse; `compact_20260112` refused by name.

The loop is real: each round a user question, Gemini's signed tool call (a Gemini 3 model), its
result, Gemini's answer; the client keeps the whole history, as Anthropic's docs tell it to."""

import json
from typing import Any

import anthropic
import pytest

from proxy.anthropic.context_edits import CLEARED
from proxy.signatures.sentinel import SENTINEL
from tests.test_anthropic_sdk import TIME, WEATHER, _blocks, _client

MODEL = "gemini-3-flash-preview"
BETA = ["context-management-2025-06-27"]
BULK = "reading: " + "pressure steady, wind calm. " * 40  # ~250 tokens per result


def _history(client: anthropic.Anthropic) -> list[dict[str, Any]]:
    """Five rounds (get_time first, then get_weather), each ending in Gemini's text answer."""
    messages: list[dict[str, Any]] = []
    for n, tool in enumerate(["get_time", *["get_weather"] * 4]):
        messages.append({"role": "user", "content": f"Round {n}: call {tool} city=Oslo"})
        m = client.messages.create(model=MODEL, max_tokens=500, tools=[WEATHER, TIME], messages=messages)
        [use] = [b for b in m.content if b.type == "tool_use"]
        messages += [{"role": "assistant", "content": _blocks(m)},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                                   "content": f"result {n} {BULK}"}]}]
        m = client.messages.create(model=MODEL, max_tokens=500, tools=[WEATHER, TIME], messages=messages)
        messages.append({"role": "assistant", "content": _blocks(m)})
    messages.append({"role": "user", "content": "Summarize the rounds."})
    return messages


EDITS = {"edits": [
    {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 500},
     "keep": {"type": "tool_uses", "value": 2}, "exclude_tools": ["get_time"], "clear_tool_inputs": True,
     "clear_at_least": {"type": "input_tokens", "value": 100}},
    {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}]}


@pytest.mark.parametrize("stream", [False, True])
def test_edits_are_applied_to_what_gemini_gets_and_reported(stack, stream: bool) -> None:
    client = _client(stack)
    messages = _history(client)
    kw = dict(model=MODEL, max_tokens=500, tools=[WEATHER, TIME], messages=messages, betas=BETA,
              context_management=EDITS)
    if stream:
        with client.beta.messages.stream(**kw) as s:
            m = s.get_final_message()
    else:
        m = client.beta.messages.create(**kw)
    sent = stack.last_body()["contents"]
    results = [p["functionResponse"] for c in sent for p in c["parts"] if "functionResponse" in p]
    calls = [p for c in sent for p in c["parts"] if "functionCall" in p]
    # Uses 0..4: get_time (excluded) kept, 1 and 2 cleared, the 2 most recent kept.
    assert [CLEARED in json.dumps(r["response"]) for r in results] == [False, True, True, False, False]
    assert "result 0" in json.dumps(results[0]) and "result 4" in json.dumps(results[4])
    assert [c["functionCall"]["args"] for c in calls[1:3]] == [{}, {}]  # clear_tool_inputs: their arguments too
    assert calls[0]["functionCall"]["args"] == {"city": "Oslo"}
    # Thinking: Gemini's signatures stay on the last assistant turn only; the older call turns get the sentinel.
    model_turns = [c for c in sent if c["role"] == "model"]
    assert all(p.get("thoughtSignature") in (None, SENTINEL) for c in model_turns[:-1] for p in c["parts"])
    assert [c["thoughtSignature"] for c in calls] == [SENTINEL] * 5
    report = m.context_management
    assert report is not None
    tool_edit, thinking_edit = report.applied_edits
    assert tool_edit.type == "clear_tool_uses_20250919" and tool_edit.cleared_tool_uses == 2
    assert tool_edit.cleared_input_tokens > 400
    assert thinking_edit.type == "clear_thinking_20251015" and thinking_edit.cleared_thinking_turns >= 5
    assert thinking_edit.cleared_input_tokens > 0
    # The client's own history is untouched: it sends its whole conversation again next turn.
    assert "result 1" in json.dumps(messages)


def test_under_the_trigger_or_clear_at_least_nothing_is_cleared(stack) -> None:
    client = _client(stack)
    messages = _history(client)
    m = client.beta.messages.create(model=MODEL, max_tokens=500, tools=[WEATHER, TIME], messages=messages,
                                    betas=BETA, context_management={"edits": [
                                        {"type": "clear_tool_uses_20250919",
                                         "trigger": {"type": "input_tokens", "value": 500},
                                         "clear_at_least": {"type": "input_tokens", "value": 100_000}},
                                        {"type": "clear_thinking_20251015", "keep": "all"}]})
    assert m.context_management.applied_edits == []
    assert CLEARED not in json.dumps(stack.last_body())
    calls = [p for c in stack.last_body()["contents"] for p in c["parts"] if "functionCall" in p]
    assert all(p["thoughtSignature"] != SENTINEL for p in calls)  # keep "all": Gemini's own signatures stay


def test_compaction_edits_are_refused_by_name(stack) -> None:
    client = _client(stack)
    with pytest.raises(anthropic.BadRequestError) as e:
        client.beta.messages.create(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}],
                                    betas=["compact-2026-01-12"],
                                    context_management={"edits": [{"type": "compact_20260112"}]})
    assert "context_management.edits[0]" in e.value.message and "compact-2026-01-12" in e.value.message


def test_a_compaction_request_is_refused_naming_the_parameter(stack) -> None:
    """`compaction` (beta compact-2026-09-04) asks for a signed compaction block instead of a turn: the
    proxy cannot make one, so it says so rather than answering an ordinary turn (a silent no-op)."""
    client = anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0)
    before = stack.accepted
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.beta.messages.create(model="gemini-3-flash-preview", max_tokens=64, compaction={"type": "summarize"},
                                    messages=[{"role": "user", "content": "hello"}])
    assert "compaction" in str(refused.value) and "compact-2026-09-04" in str(refused.value)
    assert stack.accepted == before  # Gemini was never asked
