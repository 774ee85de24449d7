"""The pure core behind interception: targets, markers, output pairing, history rewrite."""

import orjson
import pytest

from proxy.errors import ProxyError
from proxy.intercept.session_marker import take_marker
from proxy.intercept.targets import Target, classify
from proxy.session.output_pairing import pair_outputs
from proxy.session.placeholders import DEFAULT_PLACEHOLDER, NO_HISTORY, placeholder_count, rewrite_history
from proxy.session.session_tools import ToolContext, ToolRound
from proxy.session.tool_context import apply_tool_context
from proxy.signatures.call_record import CallRecord
from proxy.wire.gemini_keys import to_camel_request


@pytest.mark.parametrize(("path", "target"), [
    ("/v1beta/models/gemini-2.5-flash:generateContent", Target("generativelanguage", "gemini-2.5-flash",
                                                              "generateContent")),
    ("/v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse", Target("generativelanguage", "gemini-2.5-pro",
                                                                      "streamGenerateContent")),
    ("/v1internal:streamGenerateContent?alt=sse", Target("cloudcode", None, "streamGenerateContent")),
    ("/v1beta1/projects/p/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent",
     Target("vertex", "gemini-3-pro-preview", "generateContent")),
    ("/v1beta/models/gemini-2.5-flash:countTokens", None),
    ("/v1internal:loadCodeAssist", None),
    ("/v1beta/models", None),
])
def test_classify(path: str, target: Target | None) -> None:
    assert classify(path) == target


def test_markers_are_found_and_removed_everywhere() -> None:
    contents = [{"role": "user", "parts": [{"text": "<session:a1> hello"}]},
                {"role": "model", "parts": [{"text": "<session:not-in-model-turns>"}]},
                {"role": "user", "parts": [{"text": "<session:b2>"}, {"inlineData": {"data": "x"}}]}]
    session, out = take_marker(contents)
    assert session == "b2"
    assert out == [{"role": "user", "parts": [{"text": "hello"}]}, contents[1],
                   {"role": "user", "parts": [{"inlineData": {"data": "x"}}]}]
    assert contents[0]["parts"][0]["text"] == "<session:a1> hello", "the input is not modified"


def ctx_with(*rounds: ToolRound) -> ToolContext:
    return ToolContext(rounds=list(rounds))


def call(cid: str, name: str = "f") -> CallRecord:
    return CallRecord(cid, name, name, gemini_id=cid, signature=f"sig-{cid}", args={"n": cid})


def test_outputs_pair_by_id_then_by_position() -> None:
    ctx = ctx_with(ToolRound([call("a"), call("b"), call("c")]))
    paired = pair_outputs(ctx, [(None, {"output": 1}), ("c", {"output": 3}), (None, {"output": 2})])
    assert paired == {"c": {"output": 3}, "a": {"output": 1}, "b": {"output": 2}}
    with pytest.raises(ProxyError, match="call_id zzz"):
        pair_outputs(ctx, [("zzz", {})])
    with pytest.raises(ProxyError, match="without call_id"):
        pair_outputs(ctx, [(None, {})] * 4)


PLACEHOLDER = {"role": "model", "parts": [{"text": "Tool call completed"}]}


def test_rewrite_replays_rounds_in_order_with_signatures() -> None:
    r1 = ToolRound([call("a"), call("b", "g")], {"b": {"output": "B"}, "a": {"output": "A"}})
    r2 = ToolRound([call("c")], {"c": {"output": "C"}})
    contents = [{"role": "user", "parts": [{"text": "go"}]}, PLACEHOLDER, {"role": "user", "parts": [{"text": "."}]},
                PLACEHOLDER, {"role": "user", "parts": [{"text": "and now?"}]}]
    out = rewrite_history(contents, [r1, r2])
    assert [c["role"] for c in out] == ["user", "model", "user", "model", "user", "user"]
    assert out[1]["parts"] == [
        {"functionCall": {"name": "f", "args": {"n": "a"}, "id": "a"}, "thoughtSignature": "sig-a"},
        {"functionCall": {"name": "g", "args": {"n": "b"}, "id": "b"}, "thoughtSignature": "sig-b"}]
    assert [p["functionResponse"]["response"]["output"] for p in out[2]["parts"]] == ["A", "B"]
    assert out[5] == {"role": "user", "parts": [{"text": "and now?"}]}, "real user text is kept"


def test_a_captured_round_replayed_to_another_model_goes_without_its_signature() -> None:
    """Issue 57 item 5, the MITM capture: a round captured from gemini-3-flash-preview's answer and
    replayed into a request for gemini-3-pro-preview goes with the sentinel, not flash's signature
    (Gemini's "Corrupted thought signature"); to the model that made it, with its own."""
    from dataclasses import replace

    from proxy.signatures.sentinel import SENTINEL

    rnd = ToolRound([replace(call("a"), model="gemini-3-flash-preview")], {"a": {"output": "A"}})
    body = {"contents": [{"role": "user", "parts": [{"text": "go"}]}, PLACEHOLDER,
                         {"role": "user", "parts": [{"text": "and now?"}]}]}
    out = apply_tool_context(body, ctx_with(rnd), "gemini-3-pro-preview")  # (an earlier turn: no sentinel needed)
    assert out["contents"][1]["parts"][0].get("thoughtSignature") in (None, SENTINEL)
    current = {"contents": body["contents"][:2]}  # the call in the current turn: the sentinel
    assert apply_tool_context(current, ctx_with(rnd), "gemini-3-pro-preview")["contents"][1]["parts"][0][
        "thoughtSignature"] == SENTINEL
    out = apply_tool_context(body, ctx_with(rnd), "gemini-3-flash-preview")
    assert out["contents"][1]["parts"][0]["thoughtSignature"] == "sig-a"


def test_rewrite_refuses_what_it_cannot_replay() -> None:
    with pytest.raises(ProxyError) as info:
        rewrite_history([PLACEHOLDER], [])
    assert info.value.message == NO_HISTORY
    with pytest.raises(ProxyError, match="No tool output found for function call a"):
        rewrite_history([PLACEHOLDER], [ToolRound([call("a")])])
    with pytest.raises(ProxyError):  # an empty round is no replay (zerogravity#73)
        rewrite_history([PLACEHOLDER], [ToolRound([])])


def test_apply_keeps_other_fields_and_never_touches_arguments() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "x"}]},
                         {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {
                             "type": ["string", "null"], "$ref": "#/x", "additionalProperties": False}}}]},
                         {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"title": 1}}}]}],
            "generationConfig": {"temperature": 0.2}, "tool_config": {"function_calling_config": {"mode": "AUTO"}},
            "tools": [{"function_declarations": [{"name": "f", "parameters": {"type": "object", "properties": {
                "a": {"type": "integer", "exclusiveMinimum": 0}}}}]}]}
    out = apply_tool_context(to_camel_request(body), None, "gemini-2.5-flash")
    assert out["contents"][1]["parts"][0]["functionCall"]["args"] == {
        "type": ["string", "null"], "$ref": "#/x", "additionalProperties": False}
    assert out["generationConfig"] == {"temperature": 0.2}
    assert out["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}} and "tool_config" not in out
    assert out["tools"] == [{"functionDeclarations": [{"name": "f", "parameters": {
        "type": "OBJECT", "properties": {"a": {"type": "INTEGER", "description": "(exclusiveMinimum: 0)"}}}}]}]
    assert "thoughtSignature" not in out["contents"][1]["parts"][0], "2.5 gets no sentinel"



@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3.6-flash"])
def test_every_repair_leaves_the_apps_body_as_it_was(model: str) -> None:
    """The repairs work in place on copies of the turns holding tool parts (text turns are shared):
    the caller compares the result with the app's body and sends the app's own bytes when nothing
    changed, so a repair that reached the body would go out unsent. Between the two models every
    repair happens: 2.5 drops the search parts; 3.6 drops the prefill and signs the current turn."""
    image = {"inlineData": {"mimeType": "image/png", "data": "aGk=", "displayName": "shot"}}
    body = {"contents": [
        {"role": "user", "parts": [{"text": "search, then look"}]},
        {"role": "model", "parts": [{"text": "searching"},
                                    {"toolCall": {"id": "s1", "toolType": "GOOGLE_SEARCH_WEB", "args": {}}}]},
        {"role": "user", "parts": [{"toolResponse": {"id": "s1", "response": {}}}]},
        {"role": "user", "parts": [{"text": "now call"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "a", "id": "c1", "args": {}}}]},  # chunk 1
        {"role": "model", "parts": [{"functionCall": {"name": "b", "id": "c2", "args": {}}}]},  # chunk 2: merged
        {"role": "user", "parts": [  # answered out of order, without ids, one with a $ref, one with media
            {"functionResponse": {"name": "b", "response": {"$ref": "#/x"}}},
            {"functionResponse": {"name": "a", "response": {"ok": True}, "parts": [image]}}]},
        {"role": "user", "parts": [{"text": "go on"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "a", "args": {}}}]},  # unsigned
        {"role": "user", "parts": [{"functionResponse": {"name": "a", "response": {}}}]},
        {"role": "model", "parts": [{"text": "prefill"}]}]}
    before = orjson.dumps(body)
    out = apply_tool_context(body, None, model, result_parts=False)
    assert orjson.dumps(body) == before
    turns = out["contents"]
    servers = any("toolCall" in p or "toolResponse" in p for c in turns for p in c["parts"])
    assert servers is model.startswith("gemini-3")
    merged = next(c for c in turns if c["role"] == "model" and "functionCall" in c["parts"][0])
    assert [p["functionCall"]["name"] for p in merged["parts"]] == ["a", "b"]
    answers = [p["functionResponse"] for p in turns[turns.index(merged) + 1]["parts"] if "functionResponse" in p]
    assert [(a["name"], a["id"]) for a in answers] == [("a", "c1"), ("b", "c2")]
    assert "attachments" in answers[0]["response"] and answers[1]["response"] == {"output": '{"$ref": "#/x"}'}
    last_call = [c for c in turns if c["role"] == "model" and "functionCall" in c["parts"][0]][-1]["parts"][0]
    if model.startswith("gemini-3"):
        assert turns[-1]["role"] == "user", "the prefill is dropped"
        assert last_call["thoughtSignature"] == "skip_thought_signature_validator"
    else:
        assert turns[-1]["parts"] == [{"text": "prefill"}] and "thoughtSignature" not in last_call
    assert out["contents"][0] is body["contents"][0], "a text turn is shared, not copied"


def test_what_counts_as_a_placeholder_turn() -> None:
    P = DEFAULT_PLACEHOLDER  # noqa: N806

    def model(*parts: dict) -> dict:
        return {"role": "model", "parts": list(parts)}

    assert placeholder_count([model({"text": f"  {P}\n"})]) == 1
    assert placeholder_count([model({"text": "thinking", "thought": True}, {"text": P})]) == 1
    assert placeholder_count([model({"text": P[:3]}, {"text": P[3:]})]) == 1  # streamed in pieces
    assert placeholder_count([model({"text": P, "thought": True})]) == 0  # a thought is not the answer
    assert placeholder_count([model({"text": P}, {"functionCall": {"name": "f"}})]) == 0
    assert placeholder_count([{"role": "user", "parts": [{"text": P}]}, model({"text": P + " and more"})]) == 0


def test_app_tools_are_repaired_only_where_they_hold_parameters() -> None:
    """`parameters` (Gemini's OpenAPI subset) is repaired; `parametersJsonSchema` alone (Gemini CLI's)
    needs nothing, and the app's own list comes back as it is."""
    from proxy.session.app_tools import repair_app_tools

    as_json_schema = [{"functionDeclarations": [
        {"name": "read", "parametersJsonSchema": {"type": "object", "$defs": {"P": {"type": "string"}},
                                                  "properties": {"p": {"$ref": "#/$defs/P"}}}}]}]
    assert repair_app_tools(as_json_schema) is as_json_schema and repair_app_tools([]) == []
    openapi = [{"functionDeclarations": [
        {"name": "read", "parametersJsonSchema": {"type": "object"}},
        {"name": "write", "parameters": {"type": "object", "$defs": {"P": {"type": "string"}},
                                         "properties": {"p": {"$ref": "#/$defs/P"}}}}]}]
    sent = orjson.dumps(openapi)
    repaired = repair_app_tools(openapi)
    assert orjson.dumps(openapi) == sent  # the app's body is left as it was
    write = repaired[0]["functionDeclarations"][1]["parameters"]
    assert "$defs" not in write and b"$ref" not in orjson.dumps(write) and write["properties"]["p"]["type"]
    assert repaired[0]["functionDeclarations"][0] == openapi[0]["functionDeclarations"][0]


def test_a_history_no_repair_changes_is_shared_with_the_apps_body() -> None:
    """Gemini CLI's history (calls without ids, text results) on a model that needs no sentinel: no
    repair changes a turn in place, so none is copied (issue 62: the copy cost a 50-turn history
    about 60 us a request) and nothing changes. On Gemini 3 the current turn's unsigned call is
    signed, on a copy."""
    body = {"contents": [
        {"role": "user", "parts": [{"text": "look"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"absolute_path": "/a"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"output": "text"}}}]}]}
    before = orjson.dumps(body)
    out = apply_tool_context(body, None, "gemini-2.5-flash")
    assert out == body and all(a is b for a, b in zip(out["contents"], body["contents"], strict=True))
    out = apply_tool_context(body, None, "gemini-3-pro-preview")
    assert orjson.dumps(body) == before
    assert out["contents"][1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert out["contents"][0] is body["contents"][0]


def test_the_callers_placeholder_count_spares_only_a_search_that_finds_none() -> None:
    """Rewrite counts the placeholder turns for the store and hands the count over: a count of none
    skips rewrite_history, any other still has each placeholder replaced by its round."""
    rnd = ToolRound([call("a")], {"a": {"output": "A"}})
    body = {"contents": [{"role": "user", "parts": [{"text": "go"}]}, PLACEHOLDER,
                         {"role": "user", "parts": [{"text": "and now?"}]}]}
    counted = placeholder_count(body["contents"])
    assert counted == 1
    out = apply_tool_context(body, ctx_with(rnd), "gemini-2.5-flash", placeholders=counted)
    assert out == apply_tool_context(body, ctx_with(rnd), "gemini-2.5-flash")
    assert out["contents"][1]["parts"][0]["functionCall"]["name"] == "f"
    plain = {"contents": [body["contents"][0]]}
    assert apply_tool_context(plain, ctx_with(rnd), "gemini-2.5-flash", placeholders=0) == plain
