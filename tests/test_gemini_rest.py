"""google-genai with the proxy as its base_url: the whole REST surface (issue 9, item 4) and the
history repairs its automatic function calling needs (item 5), against the strict mock."""

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from google import genai
from google.genai import errors, types

from proxy.to_gemini.repair_history import fill_response_ids, merge_chunk_turns

REC = Path(__file__).parent / "recorded"


@pytest.fixture
def gclient(stack) -> genai.Client:
    # v1beta, as google-genai 2.x defaulted to (3.x defaults to v1; the proxy serves both)
    return genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=stack.url, api_version="v1beta"))


def test_count_tokens(gclient, stack) -> None:
    r = gclient.models.count_tokens(model="gemini-2.5-flash", contents="how many tokens is this")
    assert r.total_tokens > 0
    assert stack.received[-1]["method"] == "countTokens" and stack.received[-1]["path"].startswith(
        "/v1beta/models/gemini-2.5-flash:countTokens")


def test_count_tokens_through_an_alias(gclient, stack) -> None:
    assert gclient.models.count_tokens(model="gpt-5.5", contents="hi").total_tokens > 0
    assert stack.received[-1]["model"] == "gemini-3-flash-preview"


def test_models_get_and_list_with_aliases(gclient) -> None:
    m = gclient.models.get(model="gemini-2.5-pro")
    assert m.name == "models/gemini-2.5-pro" and "generateContent" in m.supported_actions
    alias = gclient.models.get(model="gpt-5.5")
    assert alias.name == "models/gpt-5.5" and alias.input_token_limit == 1048576
    names = [m.name for m in gclient.models.list()]
    assert "models/gemini-3-flash-preview" in names and "models/gpt-5.5" in names
    with pytest.raises(errors.ClientError) as e:
        gclient.models.get(model="gemini-0-nonexistent")
    assert e.value.code == 404 and e.value.status == "NOT_FOUND"


def test_embed_content(gclient, stack) -> None:
    r = gclient.models.embed_content(model="gemini-embedding-001", contents=["first text", "second text"])
    assert len(r.embeddings) == 2 and len(r.embeddings[0].values) == 8
    assert r.embeddings[0].values != r.embeddings[1].values
    with pytest.raises(errors.ClientError) as e:  # a generation model does not embed: Gemini's own 404
        gclient.models.embed_content(model="gemini-2.5-flash", contents="x")
    assert e.value.code == 404 and "not supported for batchEmbedContents" in e.value.message
    [up] = stack.exchange()["upstream"]  # passed through, and in the journal as Gemini answered it
    assert up["model"] == "gemini-2.5-flash" and up["attempts"][0]["status"] == 404
    assert "not supported" in up["answer"]["error"]["message"]


def test_single_embed_content_and_errors_in_gemini_shape(stack) -> None:
    body = {"content": {"parts": [{"text": "hello"}]}, "outputDimensionality": 4}
    answer = _call(stack, "POST", "/v1beta/models/gemini-embedding-001:embedContent", body)
    assert len(answer["embedding"]["values"]) == 4
    with pytest.raises(urllib.error.HTTPError) as e:
        _call(stack, "POST", "/v1beta/models/gemini-embedding-001:embedContent", {"content": {"parts": []}})
    assert e.value.code == 400 and json.loads(e.value.read())["error"]["status"] == "INVALID_ARGUMENT"
    with pytest.raises(urllib.error.HTTPError) as e:
        _call(stack, "POST", "/v1beta/models/gemini-2.5-flash:noSuchMethod", {})
    assert e.value.code == 404 and json.loads(e.value.read())["error"]["status"] == "NOT_FOUND"


def _call(stack, method: str, path: str, body: dict | None = None, headers: dict | None = None) -> dict:
    req = urllib.request.Request(f"{stack.url}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"content-type": "application/json", "x-goog-api-key": "k",
                                          **(headers or {})})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def test_other_paths_pass_through_untouched(gclient, stack) -> None:
    files = list(gclient.files.list())
    assert [f.name for f in files] == ["files/mockfile1"]
    assert gclient.files.get(name="files/mockfile1").display_name == "notes.txt"
    with pytest.raises(errors.ClientError) as e:
        gclient.files.get(name="files/nothere")
    assert e.value.code == 403 and e.value.status == "PERMISSION_DENIED"  # Gemini's error, as Gemini sent it
    seen = stack.received[-1]
    assert seen["path"] == "/v1beta/files/nothere" and seen["key"] == "test-key"


def test_passthrough_keeps_query_but_not_the_key(stack) -> None:
    _call(stack, "GET", "/v1beta/files?pageSize=3&key=secret-in-query")
    assert stack.received[-1]["path"] == "/v1beta/files?pageSize=3"


@pytest.mark.parametrize("path", ["/v1beta/files/..%2F..%2Fetc", "/v1beta/files/%2e%2e", "/v1beta/a/b%0d%0aX:1"])
def test_passthrough_refuses_odd_segments(stack, path: str) -> None:
    before = list(stack.seen)
    with pytest.raises(urllib.error.HTTPError) as e:
        _call(stack, "GET", path)
    assert e.value.code in (400, 404) and "error" in json.loads(e.value.read())
    assert stack.seen == before


def test_openai_model_list_stays_openai(stack) -> None:
    req = urllib.request.Request(f"{stack.url}/v1/models", headers={"authorization": "Bearer k"})
    with urllib.request.urlopen(req) as r:
        assert json.loads(r.read())["object"] == "list"


def test_client_identity_is_forwarded_with_the_proxy_token(gclient, stack) -> None:
    gclient.models.generate_content(model="gemini-2.5-flash", contents="who am i")
    headers = {k.lower(): v for k, v in stack.received[-1]["headers"].items()}
    assert "google-genai-sdk/" in headers["x-goog-api-client"] and headers["x-goog-api-client"].endswith(
        "gemini-tool-proxy/0.1.0")
    assert headers["user-agent"].endswith("gemini-tool-proxy/0.1.0") and "google-genai-sdk" in headers["user-agent"]
    gclient.models.count_tokens(model="gemini-2.5-flash", contents="x")
    assert stack.received[-1]["headers"]["User-Agent"].endswith("gemini-tool-proxy/0.1.0")


# -- automatic function calling (item 5) ---------------------------------------------------------

def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


def _afc_config(thoughts: bool) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        tools=[get_weather], thinking_config=types.ThinkingConfig(include_thoughts=True) if thoughts else None)


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-flash-preview"])
def test_afc_whole_answers(gclient, model: str) -> None:
    r = gclient.models.generate_content(model=model, contents="[[mock:rounds 2]] call get_weather city=Kyiv",
                                        config=_afc_config(thoughts=False))
    assert "sunny in Kyiv" in r.text
    assert len(r.automatic_function_calling_history) == 5  # user, call, answer, call, answer


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-flash-preview"])
def test_afc_streaming(gclient, stack, model: str) -> None:
    chunks = list(gclient.models.generate_content_stream(
        model=model, contents="[[mock:rounds 2]] call get_weather city=Lima", config=_afc_config(thoughts=True)))
    assert "sunny in Lima" in "".join(c.text or "" for c in chunks)
    sent = stack.last_body()["contents"]
    assert [c["role"] for c in sent] == ["user", "model", "user", "model", "user"]  # chunk turns merged


def test_afc_without_the_proxy_breaks_on_the_mock(stack) -> None:
    """The same loop straight to the mock fails, so the tests above prove the repair. (A streamed loop
    broke only before google-genai 2.18, which stopped sending a call turn twice: measured, 2.17.0 fails
    and 2.18.0 passes. The recorded request below proves that repair whatever SDK is installed.)"""
    direct = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=stack.mock_url))
    r = direct.models.generate_content(model="gemini-3-flash-preview", contents="call get_weather city=Kyiv",
                                       config=_afc_config(thoughts=False))
    assert not r.text  # Gemini 3 answers unmatched response ids with nothing


STREAM = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"


def test_a_recorded_google_genai_2_17_stream_loop_is_repaired(stack) -> None:
    """What google-genai 2.17.0 really sent on its third streamed AFC request (tests/recorded/SOURCES.md):
    Gemini refuses it as sent; through the proxy the chunk turns are merged, the repeated call turn is
    sent once, and the loop goes on."""
    sent = (REC / "genai-2.17-afc-stream-round2.request.json").read_bytes()
    headers = {"content-type": "application/json", "x-goog-api-key": "k"}
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(urllib.request.Request(stack.mock_url + STREAM, data=sent, headers=headers))
    assert e.value.code == 400 and "number of function response parts" in json.loads(e.value.read())["error"][
        "message"]
    with urllib.request.urlopen(urllib.request.Request(stack.url + STREAM, data=sent, headers=headers)) as r:
        events = [json.loads(line[5:]) for line in r.read().decode().splitlines() if line.startswith("data:")]
    text = "".join(p.get("text", "") for e in events for p in e["candidates"][0]["content"]["parts"]
                   if not p.get("thought"))
    assert 'get_weather returned {"result": "sunny in Lima"}' in text
    contents = stack.last_body()["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    for turn in contents[1], contents[3]:  # each round's thoughts and its one call, in one turn
        assert [("thought" if p.get("thought") else next(iter(p))) for p in turn["parts"]] == [
            "thought"] * 4 + ["functionCall"]


def test_merge_keeps_real_repeated_calls() -> None:
    call = {"functionCall": {"name": "f", "args": {}}}
    answer = {"functionResponse": {"name": "f", "response": {}}}
    twice = [{"role": "model", "parts": [call]}, {"role": "model", "parts": [call]},
             {"role": "user", "parts": [answer, answer]}]
    assert merge_chunk_turns(twice)[0]["parts"] == [call, call]
    dup = [{"role": "model", "parts": [{"text": "t"}]}, {"role": "model", "parts": [call]},
           {"role": "model", "parts": [call]}, {"role": "user", "parts": [answer]}]
    assert merge_chunk_turns(dup) == [{"role": "model", "parts": [{"text": "t"}, call]}, dup[-1]]


def test_fill_ids_by_name_in_order() -> None:
    contents = [{"role": "model", "parts": [{"functionCall": {"name": "f", "id": "a"}},
                                            {"functionCall": {"name": "g", "id": "b"}},
                                            {"functionCall": {"name": "f", "id": "c"}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "g", "response": {}}},
                                           {"functionResponse": {"name": "f", "response": {}, "id": "c"}},
                                           {"functionResponse": {"name": "f", "response": {}}}]}]
    fill_response_ids(contents)
    assert [p["functionResponse"]["id"] for p in contents[1]["parts"]] == ["b", "c", "a"]
