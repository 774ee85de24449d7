"""repair_history skips the passes that would change nothing (a history without function responses,
results that all have ids, text results, no media): the result is exactly what running every pass
gives, on arbitrary histories (hypothesis)."""

import copy

from hypothesis import given
from hypothesis import strategies as st

from proxy.to_gemini import repair_history as rh

TEXT = st.builds(lambda t: {"text": t}, st.text(max_size=5))
CALL = st.builds(lambda n, i: {"functionCall": {"name": n, "args": {}, **({"id": i} if i else {})}},
                 st.sampled_from(["a", "b"]), st.sampled_from([None, "1", "2"]))
MEDIA = [{"inlineData": {"mimeType": "image/png", "data": "AA=="}, "displayName": "i"}]
RESPONSES = [{"output": "t"}, {"error": "e"}, {"$ref": "x"}, {"a": {"$ref": "y"}}, {"output": "t", "n": 1}]


def _answer(name: str, gid: str | None, response: dict, media: bool) -> dict:
    fr = {"name": name, "response": copy.deepcopy(response), **({"id": gid} if gid else {}),
          **({"parts": copy.deepcopy(MEDIA)} if media else {})}
    return {"functionResponse": fr}


# Answers with and without ids, media and `$ref` keys: the survey skips a pass only when none of
# the answers holds what it acts on (the front-ends' own histories: ids, text results, no media).
ANSWER = st.builds(_answer, st.sampled_from(["a", "b"]), st.sampled_from([None, "1", "2"]),
                   st.sampled_from(RESPONSES), st.booleans())
SERVER = st.builds(lambda i: {"toolCall": {"id": i, "toolType": "GOOGLE_SEARCH_WEB"}}, st.sampled_from(["1", "2"]))
CONTENT = st.builds(lambda role, parts: {"role": role, "parts": parts}, st.sampled_from(["user", "model"]),
                    st.lists(st.one_of(TEXT, CALL, ANSWER, SERVER), min_size=1, max_size=3))


def every_pass(contents: list, model: str) -> list:
    contents = rh.drop_trailing_prefill(rh.merge_chunk_turns(contents), model)
    if not rh.combines_search(model):
        contents = rh.drop_server_parts(contents)
    if rh.needs_call_ids(model):
        rh.fill_call_ids(contents)
    rh.fill_response_ids(contents)
    rh.order_function_responses(contents)
    rh.escape_response_refs(contents)
    if not rh.parts_in_results(model):
        rh.media_as_siblings(contents)
    return contents


@given(st.lists(CONTENT, max_size=6), st.sampled_from(["gemini-2.5-flash", "gemini-3-pro-preview", "gemini-3.6-flash",
                                                  "claude-sonnet-4-6"]))
def test_skipping_passes_changes_nothing(contents: list, model: str) -> None:
    assert rh.repair_history(copy.deepcopy(contents), model) == every_pass(copy.deepcopy(contents), model)



SIGNED_CALL = st.builds(lambda n, i: {"functionCall": {"name": n, "args": {}, **({"id": i} if i else {})},
                                      "thoughtSignature": "sig"},
                        st.sampled_from(["a", "b"]), st.sampled_from([None, "1"]))
ANY_CONTENT = st.builds(lambda role, parts: {"role": role, "parts": parts}, st.sampled_from(["user", "model"]),
                        st.lists(st.one_of(TEXT, CALL, SIGNED_CALL, ANSWER, SERVER), min_size=1, max_size=3))
MODELS = st.sampled_from(["gemini-2.5-flash", "gemini-3-pro-preview", "gemini-3.6-flash", "claude-sonnet-4-6"])


@given(st.lists(ANY_CONTENT, max_size=6), MODELS, st.sampled_from([None, True, False]))
def test_a_survey_that_says_nothing_changes_in_place_is_right(contents: list, model: str,
                                                              result_parts: bool | None) -> None:
    """apply_tool_context shares the app's turns with the repairs when Survey.in_place says none of
    them (nor the sentinel) changes a turn or a part in place: then they must not, on any history."""
    from proxy.signatures.sentinel import requires_signatures, sign_current_turn

    before = copy.deepcopy(contents)
    survey = rh.Survey(contents)
    repaired = rh.repair_history(list(contents), model, result_parts=result_parts, survey=survey)
    sign_current_turn(repaired, model)
    if not survey.in_place(model, result_parts, signs=requires_signatures(model)):
        assert contents == before
    again = rh.repair_history(copy.deepcopy(before), model, result_parts=result_parts)  # no survey handed over
    sign_current_turn(again, model)
    assert repaired == again


def test_responses_take_the_ids_of_calls_that_have_them() -> None:
    """fill_response_ids runs when a call carries an id (Gemini 3's own) or was given one (Claude)."""
    def history(ids: bool) -> list:
        def call(name: str, gid: str) -> dict:
            return {"functionCall": {"name": name, "args": {}, **({"id": gid} if ids else {})}}
        return [{"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [call("a", "c1"), call("b", "c2")]},
                {"role": "user", "parts": [{"functionResponse": {"name": "b", "response": {"output": "B"}}},
                                           {"functionResponse": {"name": "a", "response": {"output": "A"}}}]}]

    out = rh.repair_history(history(True), "gemini-3-pro-preview")
    assert [(p["functionResponse"]["name"], p["functionResponse"]["id"]) for p in out[2]["parts"]] == [
        ("a", "c1"), ("b", "c2")]
    out = rh.repair_history(history(False), "claude-sonnet-4-6")  # ids given to the calls, then to the answers
    calls = [p["functionCall"]["id"] for p in out[1]["parts"]]
    assert all(calls) and [p["functionResponse"]["id"] for p in out[2]["parts"]] == calls
    out = rh.repair_history(history(False), "gemini-2.5-flash")  # Gemini CLI's: no ids anywhere, none made up
    assert not any("id" in p["functionResponse"] for p in out[2]["parts"])
    assert [p["functionResponse"]["name"] for p in out[2]["parts"]] == ["a", "b"], "still in call order"
