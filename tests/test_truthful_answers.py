"""The proxy never lies: empty answers, cut streams and failures mid-stream reach every client as
failures in its own protocol, asserted with the official SDKs (openai with strict validation,
google-genai), on every route. Nothing half-built is stored."""

import json
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from tests.conftest import WEATHER
from tests.harness import Stack

EMPTY = ["body", "candidates", "parts", "thoughts"]


def oai(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.url}/v1", api_key="test-key", _strict_response_validation=True,
                         max_retries=0)


def genai_client(stack: Stack) -> genai.Client:
    return genai.Client(api_key="test-key", http_options=genai_types.HttpOptions(
        base_url=stack.url, retry_options=genai_types.HttpRetryOptions(attempts=1)))


def raw(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def sse_lines(data: bytes) -> list[str]:
    """SSE lines end at CR, LF or CRLF only (str.splitlines would also split at U+0085, U+2028...)."""
    return data.decode().replace("\r\n", "\n").replace("\r", "\n").split("\n")


def sse_data(body: bytes) -> list[Any]:
    return [json.loads(line[5:]) for line in sse_lines(body)
            if line.startswith("data:") and line[5:].strip() != "[DONE]"]


# -- Responses ------------------------------------------------------------------------------------

def assert_responses_fail(stack: Stack, prompt: str, reason: str) -> None:
    client = oai(stack)
    r = client.responses.create(model="gemini-2.5-flash", input=prompt)
    assert r.status == "failed" and r.error is not None and reason in r.error.message, r
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)  # nothing half-built is stored
    with client.responses.stream(model="gemini-2.5-flash", input=prompt) as s:
        events = list(s)
        with pytest.raises(RuntimeError, match=r"response\.completed"):
            s.get_final_response()
    assert events[-1].type == "response.failed" and reason in events[-1].response.error.message
    with pytest.raises(openai.BadRequestError, match="not found"):
        client.responses.create(model="gemini-2.5-flash", input="go on", previous_response_id=events[-1].response.id)


@pytest.mark.parametrize("kind", EMPTY)
def test_empty_answers_fail_on_responses(stack: Stack, kind: str) -> None:
    assert_responses_fail(stack, f"hello [[mock:empty {kind}]]", "Gemini")


def test_cut_stream_fails_on_responses(stack: Stack) -> None:
    assert_responses_fail(stack, "a long answer [[mock:cut]]", "without a finish reason")


# -- Chat -----------------------------------------------------------------------------------------

def assert_chat_fails(stack: Stack, prompt: str, reason: str) -> None:
    client = oai(stack)
    messages = [{"role": "user", "content": prompt}]
    with pytest.raises(openai.InternalServerError, match=reason):
        client.chat.completions.create(model="gemini-2.5-flash", messages=messages)
    stream = client.chat.completions.create(model="gemini-2.5-flash", messages=messages, stream=True)
    with pytest.raises(openai.APIError, match=reason):
        for _ in stream:
            pass


@pytest.mark.parametrize("kind", EMPTY)
def test_empty_answers_fail_on_chat(stack: Stack, kind: str) -> None:
    assert_chat_fails(stack, f"hello [[mock:empty {kind}]]", "Gemini")


def test_cut_stream_fails_on_chat(stack: Stack) -> None:
    assert_chat_fails(stack, "a long answer [[mock:cut]]", "without a finish reason")


# -- Gemini-native ------------------------------------------------------------------------------------

def assert_native_fails(stack: Stack, prompt: str, reason: str) -> None:
    client = genai_client(stack)
    with pytest.raises(genai_errors.ServerError, match=reason):
        client.models.generate_content(model="gemini-2.5-flash", contents=prompt)
    with pytest.raises(genai_errors.ServerError, match=reason):
        for _ in client.models.generate_content_stream(model="gemini-2.5-flash", contents=prompt):
            pass
    body = {"contents": [{"role": "user", "parts": [{"text": prompt}]}]}
    status, data = raw(f"{stack.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent", body)  # JSON array
    assert status == 200 and reason in json.loads(data)[-1]["error"]["message"]
    native = {"model": "gemini-2.5-flash", "input": prompt, "conversation": "truth"}
    status, data = raw(f"{stack.url}/v1/gemini", native)
    assert status == 502 and reason in json.loads(data)["error"]["message"]
    status, data = raw(f"{stack.url}/v1/gemini", {**native, "stream": True})
    assert status == 200 and reason in sse_data(data)[-1]["error"]["message"]
    assert stack.lt.run(stack.store.get_conversation("default", "truth")) == [], "failed turns are not kept"


@pytest.mark.parametrize("kind", EMPTY)
def test_empty_answers_fail_on_native_routes(stack: Stack, kind: str) -> None:
    assert_native_fails(stack, f"hello [[mock:empty {kind}]]", "Gemini")


def test_cut_stream_fails_on_native_routes(stack: Stack) -> None:
    assert_native_fails(stack, "a long answer [[mock:cut]]", "without a finish reason")


def test_honest_non_successes_keep_their_meaning(stack: Stack) -> None:
    """MAX_TOKENS and a blocked prompt are real answers: incomplete, never failed or completed."""
    client = oai(stack)
    r = client.responses.create(model="gemini-2.5-flash", input="[[mock:max_tokens]]")
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    r = client.responses.create(model="gemini-2.5-flash", input="[[mock:block]]")
    assert r.status == "incomplete" and r.incomplete_details.reason == "content_filter"


# -- exceptions injected mid-stream -------------------------------------------------------------------

class Injected(Exception):
    pass


class FailAfterFirstChunk:
    """Stands between the front-end and the mock; raises a plain exception after the first chunk."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.closed = inner, 0

    async def close(self) -> None:
        await self.inner.close()

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        raise Injected("injected before any answer")

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        chunks = await self.inner.stream(model, body, api_key)

        async def gen() -> AsyncIterator[dict[str, Any]]:
            try:
                async for chunk in chunks:
                    yield chunk
                    raise Injected("injected mid-stream")
            finally:
                self.closed += 1
                await chunks.aclose()
        return gen()


@pytest.fixture(scope="module")
def faulty():
    wrapper: list[FailAfterFirstChunk] = []
    s = Stack(wrap=lambda up: wrapper.append(FailAfterFirstChunk(up)) or wrapper[0])
    yield s, wrapper[0]
    s.close()


def test_exceptions_mid_stream_end_every_stream_with_its_failure(faulty) -> None:
    stack, wrapper = faulty
    prompt = "tell me a long story about the sea and the wind"
    client = oai(stack)
    with client.responses.stream(model="gemini-2.5-flash", input=prompt) as s:
        events = list(s)
    assert events[0].type == "response.created" and events[-1].type == "response.failed"
    assert any(e.type == "response.output_text.delta" for e in events), "the failure came after the start"
    stream = client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": prompt}],
                                            stream=True)
    with pytest.raises(openai.APIError, match="proxy failed"):
        for _ in stream:
            pass
    gclient = genai_client(stack)
    with pytest.raises(genai_errors.ServerError, match="proxy failed"):
        for _ in gclient.models.generate_content_stream(model="gemini-2.5-flash", contents=prompt):
            pass
    status, data = raw(f"{stack.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                       {"contents": [{"role": "user", "parts": [{"text": prompt}]}]})
    assert status == 200 and json.loads(data)[-1]["error"]["code"] == 500
    status, data = raw(f"{stack.url}/v1/gemini", {"model": "gemini-2.5-flash", "input": prompt, "stream": True})
    assert status == 200 and sse_data(data)[-1]["error"]["status"] == "INTERNAL"
    assert wrapper.closed == 5, "every upstream stream was closed"
    # The sync twins: an error object, never a bare 500 page.
    with pytest.raises(openai.InternalServerError, match="proxy failed"):
        client.responses.create(model="gemini-2.5-flash", input=prompt)


def test_a_js_style_pattern_never_breaks_a_call(stack: Stack) -> None:
    """Gemini's RE2 accepts `\\p{L}`, Python's re does not: the normalizer skips that check."""
    tool = {"type": "function", "name": "greet", "parameters": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "pattern": r"^[\p{L} ]+$"}}}}
    client = oai(stack)
    with client.responses.stream(model="gemini-2.5-flash", input="call greet name=Ana", tools=[tool]) as s:
        final = s.get_final_response()
    assert final.status == "completed" and final.output[0].type == "function_call"
    chat = client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": "greet"}],
                                          tools=[{"type": "function", "function": {
                                              "name": "greet", "parameters": tool["parameters"]}}],
                                          tool_choice="required")
    assert chat.choices[0].finish_reason == "tool_calls"


def test_forced_choice_keeps_other_finishes(stack: Stack) -> None:
    """Under a forced tool_choice, MAX_TOKENS stays incomplete and a malformed call stays failed:
    neither is 'ignored the forced tool choice', and no retry is made."""
    client = oai(stack)
    before = stack.accepted
    r = client.responses.create(model="gemini-2.5-flash", input="[[mock:max_tokens]]", tools=[WEATHER],
                                tool_choice="required")
    assert r.status == "incomplete" and stack.accepted - before == 1
    r = client.responses.create(model="gemini-2.5-flash", input="[[mock:malformed]]", tools=[WEATHER],
                                tool_choice="required")
    assert r.status == "failed" and "MALFORMED_FUNCTION_CALL" in r.error.message
    with client.responses.stream(model="gemini-2.5-flash", input="[[mock:safety]]", tools=[WEATHER],
                                 tool_choice="required") as s:
        events = list(s)
    assert events[-1].type == "response.incomplete"
    assert stack.accepted - before == 3, "no retries for finishes that were not text"


class CountCloses:
    def __init__(self, inner: Any) -> None:
        self.inner, self.closed = inner, 0

    async def close(self) -> None:
        await self.inner.close()

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        return await self.inner.generate(model, body, api_key)

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        chunks = await self.inner.stream(model, body, api_key)

        async def gen() -> AsyncIterator[dict[str, Any]]:
            try:
                async for chunk in chunks:
                    yield chunk
            finally:
                self.closed += 1
                await chunks.aclose()
        return gen()


def test_a_client_that_goes_away_closes_the_upstream_and_stores_nothing() -> None:
    import http.client
    import time
    wrapper: list[CountCloses] = []
    stack = Stack(wrap=lambda up: wrapper.append(CountCloses(up)) or wrapper[0])
    try:
        conn = http.client.HTTPConnection(stack.url.removeprefix("http://"), timeout=10)
        conn.request("POST", "/v1/responses", body=json.dumps({
            "model": "gemini-2.5-flash", "stream": True,
            "input": "a long story about the sea and the wind and the stars [[mock:slow 0.3]]"}),
            headers={"content-type": "application/json", "x-gtp-session": "gone"})
        resp = conn.getresponse()
        assert b"response.created" in resp.read1(4096)
        conn.sock.close()  # the client goes away mid-stream
        conn.close()
        deadline = time.monotonic() + 10
        while wrapper[0].closed == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert wrapper[0].closed == 1, "the upstream stream was closed"
        assert stack.store.entries.session_size("gone") == 0, "a turn the client never received is not stored"
    finally:
        stack.close()
