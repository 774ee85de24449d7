"""Claude on Antigravity's wire pairs calls and results by id only (tools/call_ids.py): every
request the proxy sends it — the front-end's own and the interceptor's — has an id on each call and
the same id on its result; Gemini models get their history as it was."""

import copy

from proxy.to_gemini.repair_history import repair_history
from proxy.tools.call_ids import needs_call_ids


def _history() -> list[dict]:
    return [{"role": "user", "parts": [{"text": "weather in two cities"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "A"}}},
                                        {"functionCall": {"name": "get_weather", "args": {"city": "B"}}},
                                        {"functionCall": {"id": "toolu_kept", "name": "get_clock", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"t": 1}}},
                                       {"functionResponse": {"name": "get_clock", "response": {"t": 3}}},
                                       {"functionResponse": {"name": "get_weather", "response": {"t": 2}}}]}]


def test_claude_models_need_ids_gemini_models_not() -> None:
    assert needs_call_ids("claude-sonnet-4-6") and needs_call_ids("models/claude-opus-4-6-thinking")
    assert not needs_call_ids("gemini-3-flash") and not needs_call_ids("gpt-oss-120b-medium")


def test_every_call_and_its_result_get_one_id_for_claude() -> None:
    contents = repair_history(_history(), "claude-sonnet-4-6")
    calls = [p["functionCall"] for p in contents[1]["parts"]]
    results = [p["functionResponse"] for p in contents[2]["parts"]]
    assert all(c["id"] for c in calls) and len({c["id"] for c in calls}) == 3
    assert calls[2]["id"] == "toolu_kept", "an id the model gave is kept"
    assert [r["id"] for r in results] == [c["id"] for c in calls], "results in call order, id for id"
    assert [r["response"]["t"] for r in results] == [1, 2, 3]
    again = repair_history(_history(), "claude-sonnet-4-6")
    assert [p["functionCall"]["id"] for p in again[1]["parts"]] == [c["id"] for c in calls], "the same every time"


def test_gemini_models_keep_id_less_calls() -> None:
    contents = repair_history(_history(), "gemini-2.5-flash")
    assert "id" not in contents[1]["parts"][0]["functionCall"]
    assert contents[1] == copy.deepcopy(_history()[1])


def test_a_ref_holding_a_list_in_a_result_is_escaped_not_a_crash() -> None:
    """Found by the endpoint fuzzer: a `$ref` whose value is a list made the repair raise TypeError
    (unhashable), a 500 for the client; it is a result like any other with a `$ref` key."""
    contents = [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"$ref": [1, 2]}}}]}]
    out = repair_history(contents, "gemini-3-flash-preview")
    assert out[1]["parts"][0]["functionResponse"]["response"] == {"output": '{"$ref": [1, 2]}'}
