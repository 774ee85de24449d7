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

