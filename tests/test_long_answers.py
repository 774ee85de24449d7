"""Long answers in hops on generateContent (google-genai 3.6): Gemini stops a long decode at its
per-request limit with finishReason CONTINUATION and a continuationToken, and goes on when the same
request is sent again with the token. google-genai continues so by default; through the proxy every
client gets the whole answer (whole or streamed, on every front-end), never its first hop.

The mock stops answers so with `[[mock:hops N]]` (proxy/mock/hops.py). No live recording of a
continuation is public: its shapes are google-genai's types, and the first test has the SDK's own
automatic continuation drive the mock, so the mock speaks the protocol the SDK expects.
"""

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors, types

from proxy.from_gemini.merge_hops import merge_hops
from tests.harness import Stack

G3 = "gemini-3-flash-preview"
HOPS = "[[mock:hops 3]] tell me about Bern"
WHOLE = f"Mock Gemini ({G3}) heard: tell me about Bern"


def _gemini(url: str, **options) -> genai.Client:
    return genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url, **options))


def _hops(stack: Stack, n: int) -> list[dict]:
    return [r["body"] for r in stack.received[-n:]]


def test_google_genai_continues_the_mock_s_hops(stack: Stack) -> None:
    """The reference client against the mock alone: its automatic continuation (whole and streamed)
    assembles the answer, and it sends the request again with the token, as the proxy does."""
    g = _gemini(stack.mock_url)
    r = g.models.generate_content(model=G3, contents=HOPS)
    assert r.text == WHOLE and r.candidates[0].finish_reason == "STOP"
    sent = _hops(stack, 3)
    assert "continuationToken" not in sent[0] and sent[1]["continuationToken"] and sent[2]["continuationToken"]
    assert sent[1]["contents"] == sent[0]["contents"] == sent[2]["contents"]
    streamed = list(g.models.generate_content_stream(model=G3, contents=HOPS))
    assert "".join(c.text or "" for c in streamed) == WHOLE
    first = g.models.generate_content(model=G3, contents=HOPS, config=types.GenerateContentConfig(
        automatic_continuation=False))
    assert first.candidates[0].finish_reason == "CONTINUATION" and first.candidates[0].continuation_token
    with pytest.raises(errors.ClientError) as e:  # a token continues the request it was issued for
        g.models.generate_content(model=G3, contents="something else", config=types.GenerateContentConfig(
            continuation_token=first.candidates[0].continuation_token))
    assert e.value.code == 400 and "continuation_token" in e.value.message


@pytest.mark.parametrize("stream", [False, True])
def test_chat_gets_the_whole_answer(stack: Stack, stream: bool) -> None:
    c = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0, _strict_response_validation=True)
    msgs = [{"role": "user", "content": HOPS}]
    if stream:
        chunks = list(c.chat.completions.create(model=G3, messages=msgs, stream=True,
                                                stream_options={"include_usage": True}))
        text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
        finishes = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
        [usage] = [ch.usage for ch in chunks if ch.usage]
    else:
        answer = c.chat.completions.create(model=G3, messages=msgs)
        text, finishes, usage = answer.choices[0].message.content, [answer.choices[0].finish_reason], answer.usage
    assert text == WHOLE and finishes == ["stop"]
    sent = _hops(stack, 3)
    assert "continuationToken" not in sent[0]
    assert [{k: v for k, v in s.items() if k != "continuationToken"} for s in sent[1:]] == [sent[0]] * 2, \
        "the same request again, with the token"
    doc = stack.exchange()
    assert [u["request"] for u in doc["upstream"]] == sent, "each hop is a call of its own in the journal"
    assert [n["kind"] for n in doc["decisions"]].count("continuation") == 2
    answers = [u["answer"] if u["answer"] is not None else u["chunks"][-1] for u in doc["upstream"]]
    tokens = [a["candidates"][0].get("continuationToken") for a in answers]
    assert tokens[:2] == [s["continuationToken"] for s in sent[1:]] and tokens[2] is None
    hop_usage = [a["usageMetadata"] for a in answers]
    assert usage.prompt_tokens == sum(u["promptTokenCount"] for u in hop_usage) > hop_usage[0]["promptTokenCount"]
    assert usage.completion_tokens == sum(u["candidatesTokenCount"] for u in hop_usage)


@pytest.mark.parametrize("stream", [False, True])
def test_responses_and_messages_get_the_whole_answer(stack: Stack, stream: bool) -> None:
    c = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0, _strict_response_validation=True)
    if stream:
        events = list(c.responses.create(model=G3, input=HOPS, stream=True))
        assert events[-1].type == "response.completed"
        r = events[-1].response
    else:
        r = c.responses.create(model=G3, input=HOPS)
    assert r.status == "completed" and r.output_text == WHOLE
    claude = anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0, _strict_response_validation=True)
    msgs = [{"role": "user", "content": HOPS}]
    if stream:
        with claude.messages.stream(model=G3, max_tokens=200, messages=msgs) as s:
            m = s.get_final_message()
    else:
        m = claude.messages.create(model=G3, max_tokens=200, messages=msgs)
    assert m.stop_reason == "end_turn" and "".join(b.text for b in m.content if b.type == "text") == WHOLE


@pytest.mark.parametrize("stream", [False, True])
def test_a_gemini_sdk_through_the_proxy_gets_the_whole_answer(stack: Stack, stream: bool) -> None:
    """google-genai with the proxy as base_url: the proxy has continued already, so the client sees
    one finished answer (its own continuation never starts)."""
    g = _gemini(stack.url, api_version="v1beta")
    if stream:
        chunks = list(g.models.generate_content_stream(model=G3, contents=HOPS))
        assert "".join(c.text or "" for c in chunks) == WHOLE
        assert [c.candidates[0].finish_reason for c in chunks if c.candidates[0].finish_reason] == ["STOP"]
    else:
        r = g.models.generate_content(model=G3, contents=HOPS)
        assert r.text == WHOLE and r.candidates[0].finish_reason == "STOP"
    assert len(stack.exchange()["upstream"]) == 3


@pytest.mark.parametrize("stream", [False, True])
def test_a_hop_without_progress_is_refused(stack: Stack, stream: bool) -> None:
    """Gemini handing back the token it was continued with would be asked again forever (google-genai's
    own loop would): the proxy refuses with a 502 that says so, never the first hop as the answer."""
    c = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0)
    if stream:
        events = list(c.responses.create(model=G3, input="[[mock:hops 3 stuck]] tell me about Rome", stream=True))
        assert events[-1].type == "response.failed" and "no progress" in events[-1].response.error.message
    else:
        with pytest.raises(openai.APIStatusError) as e:
            c.chat.completions.create(model=G3, messages=[{"role": "user", "content": "[[mock:hops 3 stuck]] Rome"}])
        assert e.value.status_code == 502 and "no progress" in e.value.message
    assert len(stack.exchange()["upstream"]) == 2


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("mode, calls", [("alternate", 3), ("empty", 2)])
def test_a_continuation_going_round_or_adding_nothing_is_refused(stack: Stack, stream: bool, mode: str,
                                                                 calls: int) -> None:
    """Issue 57 item 7: tokens that alternate (A, B, A: the mock's `alternate`) or a hop that adds no
    part (`empty`, a new token each time) would be continued to MAX_HOPS billed hops: the proxy stops
    at the first token seen before in this answer, or at the hop that added nothing, with a 502."""
    text = f"[[mock:hops 2 {mode}]] tell me about Rome"
    if stream:
        c = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0)
        events = list(c.responses.create(model=G3, input=text, stream=True))
        assert events[-1].type == "response.failed" and "no progress" in events[-1].response.error.message
    else:
        g = _gemini(stack.url, api_version="v1beta")
        with pytest.raises(errors.ServerError) as e:
            g.models.generate_content(model=G3, contents=text)
        assert e.value.code == 502 and "no progress" in e.value.message
    assert len(stack.exchange()["upstream"]) == calls


@pytest.mark.parametrize("stream", [False, True])
def test_a_hop_gemini_refuses_fails_the_answer(stack: Stack, stream: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini refusing the hop that continues an answer (here: a token sent with another request) fails
    the answer in the client's protocol, streamed or not, after the first hop's text was passed on."""
    from proxy.upstream.gemini import client as gemini
    monkeypatch.setattr(gemini, "continued_body", lambda body, token: {**body, "continuationToken": token,
                                                                        "contents": [*body["contents"], body[
                                                                            "contents"][-1]]})
    c = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0)
    if stream:
        events = list(c.responses.create(model=G3, input=HOPS, stream=True))
        assert any(e.type == "response.output_text.delta" for e in events), "the first hop's text was passed on"
        assert events[-1].type == "response.failed"
        assert "continues another request" in events[-1].response.error.message
    else:
        with pytest.raises(openai.APIStatusError) as e:
            c.chat.completions.create(model=G3, messages=[{"role": "user", "content": HOPS}])
        assert e.value.status_code == 400 and "continues another request" in e.value.message


def test_an_answer_past_the_hop_limit_is_refused(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    from proxy.from_gemini import merge_hops
    monkeypatch.setattr(merge_hops, "MAX_HOPS", 2)
    c = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as e:
        c.chat.completions.create(model=G3, messages=[{"role": "user", "content": HOPS}])
    assert e.value.status_code == 502 and "after 2 continuation hops" in e.value.message
    events = list(c.responses.create(model=G3, input=HOPS, stream=True))
    assert events[-1].type == "response.failed" and "after 2 continuation hops" in events[-1].response.error.message


def test_hops_merge_as_google_genai_merges_them() -> None:
    """merge_continuation_responses' rules: parts appended as they are, the last hop's finish and no
    token, counts summed (per modality too), a later hop's grounding shifted onto the chunks before."""
    hop1 = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Part A "}]}, "index": 0,
                            "finishReason": "CONTINUATION", "continuationToken": "dG9r",
                            "groundingMetadata": {"groundingChunks": [{"web": {"uri": "a"}}], "groundingSupports": [
                                {"segment": {"startIndex": 0, "endIndex": 4}, "groundingChunkIndices": [0]}]}}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 40, "totalTokenCount": 50,
                              "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 10}]},
            "modelVersion": G3, "responseId": "r1"}
    hop2 = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Part B"}]}, "index": 0,
                            "finishReason": "STOP",
                            "groundingMetadata": {"groundingChunks": [{"web": {"uri": "b"}}], "groundingSupports": [
                                {"segment": {"startIndex": 0, "endIndex": 4}, "groundingChunkIndices": [0]}]}}],
            "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 30, "totalTokenCount": 80,
                              "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 50}]},
            "modelVersion": G3, "responseId": "r2"}
    both = merge_hops([hop1, hop2])
    [cand] = both["candidates"]
    assert cand["content"]["parts"] == [{"text": "Part A "}, {"text": "Part B"}]
    assert cand["finishReason"] == "STOP" and "continuationToken" not in cand
    assert both["usageMetadata"] == {"promptTokenCount": 60, "candidatesTokenCount": 70, "totalTokenCount": 130,
                                     "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 60}]}
    grounding = cand["groundingMetadata"]
    assert [c["web"]["uri"] for c in grounding["groundingChunks"]] == ["a", "b"]
    assert [(s["groundingChunkIndices"], s["segment"].get("partIndex")) for s in grounding["groundingSupports"]] == [
        ([0], None), ([1], 1)]
    assert both["responseId"] == "r2"
    types.GenerateContentResponse.model_validate(both)  # the SDK's own type reads it
