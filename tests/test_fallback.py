"""Fallback chains (--fallback, proxy/upstream/fallback.py) with the official SDKs over the strict mock:
the pro model's 429 falls to the next model, the client keeps its model name and sees the served one
in x-gtp-served-model; every model refusing is the client's 429; a failure after the first byte is
never retried; signatures never cross models."""

import json
import subprocess
import sys
from typing import Any

import anthropic
import openai
import pytest

from proxy.errors import UpstreamError
from proxy.model_rules import ModelRules
from proxy.signatures.sentinel import SENTINEL
from proxy.upstream.fallback import parse_fallback, thinking_for
from proxy.upstream.gemini.key_pool import KeyPool
from tests.conftest import WEATHER
from tests.harness import Stack

PRO, FLASH3, FLASH25 = "gemini-3.1-pro-preview", "gemini-3-flash-preview", "gemini-2.5-flash"
CHAIN = ModelRules.parse(fallback=[f"gemini-3.1-pro*={FLASH3},{FLASH25}", f"gemini-3-pro*={FLASH25}"])
FAIL_PRO = f"[[mock:error_on {PRO} 429]]"
ANTHROPIC_WEATHER = {"name": "get_weather", "description": "Current weather for a city",
                     "input_schema": WEATHER["parameters"]}


@pytest.fixture(scope="module")
def stack():
    s = Stack(rules=CHAIN)
    yield s
    s.close()


@pytest.fixture(scope="module")
def oai(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.url}/v1", api_key="test-key", _strict_response_validation=True,
                         max_retries=0)


@pytest.fixture(scope="module")
def ant(stack: Stack) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=stack.url, api_key="test-key", max_retries=0)


def models_since(stack: Stack, before: int) -> list[str]:
    return [r["model"] for r in stack.received[before:]]


def fallback_notes(stack: Stack) -> list[str]:
    return [n["message"] for n in stack.exchange()["decisions"] if n["kind"] == "fallback"]


def test_responses_plain_and_streamed_fall_to_flash(stack: Stack, oai: openai.OpenAI) -> None:
    before = len(stack.received)
    raw = oai.responses.with_raw_response.create(model=PRO, input=f"hello {FAIL_PRO}")
    r = raw.parse()
    assert r.status == "completed" and r.model == PRO and f"({FLASH3})" in r.output_text
    assert raw.headers["x-gtp-served-model"] == FLASH3
    assert models_since(stack, before) == [PRO, FLASH3]  # the 429 not waited out: the next model at once
    notes = fallback_notes(stack)
    assert any(PRO in n and "429" in n and f"asking {FLASH3}" in n for n in notes)
    assert any(n.startswith(f"{FLASH3} answered for {PRO}") for n in notes)

    before = len(stack.received)
    raw = oai.responses.with_raw_response.create(model=PRO, input=f"streamed {FAIL_PRO}", stream=True)
    assert raw.headers["x-gtp-served-model"] == FLASH3
    events = list(raw.parse())
    assert events[-1].type == "response.completed" and events[-1].response.model == PRO
    assert f"({FLASH3})" in events[-1].response.output_text
    assert models_since(stack, before) == [PRO, FLASH3]


def test_no_header_without_a_chain(stack: Stack, oai: openai.OpenAI) -> None:
    raw = oai.responses.with_raw_response.create(model=FLASH25, input="plain")
    assert "x-gtp-served-model" not in raw.headers
    raw = oai.responses.with_raw_response.create(model=PRO, input="no failure")  # a chain, its first model
    assert raw.headers["x-gtp-served-model"] == PRO


def test_chat_plain_and_streamed(stack: Stack, oai: openai.OpenAI) -> None:
    raw = oai.chat.completions.with_raw_response.create(model=PRO, messages=[{"role": "user", "content": FAIL_PRO}])
    c = raw.parse()
    assert c.model == PRO and f"({FLASH3})" in c.choices[0].message.content
    assert raw.headers["x-gtp-served-model"] == FLASH3
    raw = oai.chat.completions.with_raw_response.create(
        model=PRO, messages=[{"role": "user", "content": f"s {FAIL_PRO}"}], stream=True)
    assert raw.headers["x-gtp-served-model"] == FLASH3
    chunks = list(raw.parse())
    assert all(ch.model == PRO for ch in chunks)
    assert f"({FLASH3})" in "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)


def test_anthropic_plain_and_streamed(stack: Stack, ant: anthropic.Anthropic) -> None:
    raw = ant.messages.with_raw_response.create(model=PRO, max_tokens=100,
                                                messages=[{"role": "user", "content": FAIL_PRO}])
    m = raw.parse()
    assert m.model == PRO and f"({FLASH3})" in m.content[0].text
    assert raw.headers["x-gtp-served-model"] == FLASH3
    with ant.messages.with_streaming_response.create(model=PRO, max_tokens=100, stream=True,
                                                     messages=[{"role": "user", "content": f"s {FAIL_PRO}"}]) as r:
        assert r.headers["x-gtp-served-model"] == FLASH3
        text = "".join(line for line in r.iter_lines())
    assert f"({FLASH3})" in text and "message_stop" in text


def test_every_model_refusing_is_the_clients_429(stack: Stack, oai: openai.OpenAI, ant: anthropic.Anthropic
                                                 ) -> None:
    everywhere = "[[mock:error_on gemini-* 429 0.05s]]"
    before = len(stack.received)
    with pytest.raises(openai.RateLimitError):
        oai.responses.create(model=PRO, input=f"a {everywhere}")
    # Three models, then the last one's retry: 1 + --max-retries (3) tries across the chain.
    assert models_since(stack, before) == [PRO, FLASH3, FLASH25, FLASH25]
    assert any("no model of the chain" in n for n in fallback_notes(stack))
    with pytest.raises(openai.RateLimitError):  # a stream: the 429 before any event, never a cut stream
        list(oai.responses.create(model=PRO, input=f"b {everywhere}", stream=True))
    with pytest.raises(anthropic.RateLimitError), ant.messages.stream(
            model=PRO, max_tokens=50, messages=[{"role": "user", "content": everywhere}]) as s:
        list(s)


def test_a_failure_after_the_first_byte_is_not_retried(stack: Stack, oai: openai.OpenAI) -> None:
    before = len(stack.received)
    events = list(oai.responses.create(model=PRO, input="[[mock:stream_error 503]]", stream=True))
    assert events[-1].type in ("response.failed", "error")
    assert models_since(stack, before) == [PRO]


class FailsProOnReplay:
    """Gemini answering 429 for the pro models once a conversation replays a call (the mock makes the
    first turn, with its signatures, as the pro model)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def _check(self, model: str, body: dict[str, Any]) -> None:
        if "-pro" in model and "functionResponse" in json.dumps(body.get("contents")):
            raise UpstreamError("Resource has been exhausted (e.g. check quota).", status=429,
                                type="rate_limit_error", gemini_error={"code": 429, "status": "RESOURCE_EXHAUSTED"})

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        self._check(model, body)
        return await self.inner.generate(model, body, api_key)

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None) -> Any:
        self._check(model, body)
        return await self.inner.stream(model, body, api_key)

    async def close(self) -> None:
        await self.inner.close()


@pytest.mark.parametrize(("asked", "served"), [(PRO, FLASH3), ("gemini-3-pro-preview", FLASH25)])
def test_signatures_never_cross_models(asked: str, served: str) -> None:
    s = Stack(rules=CHAIN, wrap=FailsProOnReplay)
    try:
        oai = openai.OpenAI(base_url=f"{s.url}/v1", api_key="test-key", max_retries=0)
        r1 = oai.responses.create(model=asked, input="call get_weather city=Paris", tools=[WEATHER])
        [call] = [o for o in r1.output if o.type == "function_call"]
        assert s.received[-1]["model"] == asked
        r2 = oai.responses.create(model=asked, previous_response_id=r1.id, tools=[WEATHER],
                                  input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}])
        assert r2.status == "completed" and r2.model == asked  # the strict mock took the replay
        assert s.received[-1]["model"] == served
        sent = s.last_body()["contents"]
        parts = [p for c in sent for p in c["parts"] if "functionCall" in p]
        assert parts and not any(p.get("thoughtSignature") not in (None, SENTINEL) for p in parts)
        if served.startswith("gemini-3"):
            assert parts[0]["thoughtSignature"] == SENTINEL
        else:
            assert all("thoughtSignature" not in p for c in sent for p in c["parts"])
        # The calls kept from the fallback's answer name the model that made them.
        assert s.exchange()["decisions"] and any(n["kind"] == "fallback" for n in s.exchange()["decisions"])
    finally:
        s.close()


def test_thinking_config_suits_the_fallback_model() -> None:
    assert thinking_for({"thinkingLevel": "HIGH", "includeThoughts": True}, FLASH25) == {
        "thinkingBudget": 24576, "includeThoughts": True}
    assert thinking_for({"thinkingLevel": "HIGH"}, "gemini-2.5-pro") == {"thinkingBudget": 24576}
    assert thinking_for({"thinkingBudget": 8192}, FLASH3) == {"thinkingLevel": "MEDIUM"}
    assert thinking_for({"thinkingBudget": -1}, FLASH3) == {}
    assert thinking_for({"thinkingLevel": "MINIMAL"}, PRO) == {"thinkingLevel": "LOW"}


def test_reasoning_effort_survives_the_fallback(stack: Stack, oai: openai.OpenAI) -> None:
    r = oai.responses.create(model="gemini-3-pro-preview", input="think [[mock:error_on gemini-3-pro* 503]]",
                             reasoning={"effort": "high"})
    assert r.status == "completed"
    assert stack.received[-1]["model"] == FLASH25
    assert stack.last_body()["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 24576


def test_keys_rest_per_model() -> None:
    now = [0.0]
    pool = KeyPool(["k1"], clock=lambda: now[0])
    key = pool.pick(PRO)
    pool.cool(key, 30, model=PRO)
    assert pool.pick(PRO) is None and pool.pick(FLASH3) is key and pool.soonest(PRO) == 30
    pool.cool(key, 10, "refused")  # a refused credential rests for every model (this rest replaces theirs)
    assert pool.pick(FLASH3) is None
    now[0] = 11
    assert pool.pick(FLASH3) is key and pool.pick(PRO) is key


@pytest.mark.parametrize("spec", ["bad", "=gemini-2.5-flash", "gemini-3*=", "gemini-3*=a,,b", "gemini-3*=no such"])
def test_malformed_rules_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="--fallback"):
        parse_fallback([spec])


def test_malformed_fallback_exits_2_before_listening() -> None:
    done = subprocess.run([sys.executable, "-m", "proxy", "serve", "--upstream", "mock", "--port", "0",
                           "--fallback", "gemini-3*"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--fallback must be PATTERN=MODEL" in done.stderr
    assert "ready" not in done.stdout
