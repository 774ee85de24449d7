"""The forced-choice policies, on the real upstream client against the mock."""

import pytest

from proxy.errors import UpstreamError
from proxy.upstream.forced_choice import ForcedChoiceUpstream
from proxy.upstream.gemini.client import GeminiUpstream

BODY = {"contents": [{"role": "user", "parts": [{"text": "[[mock:ignore_choice]] hi"}]}],
        "tools": [{"functionDeclarations": [{"name": "f"}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}


async def _collect(up: ForcedChoiceUpstream, stream: bool) -> list:
    if stream:
        return [c async for c in await up.stream("gemini-2.5-flash", BODY)]
    return [await up.generate("gemini-2.5-flash", BODY)]


@pytest.mark.parametrize("stream", [False, True])
def test_policies(stack, stream: bool) -> None:
    def run(policy: str) -> list:
        async def go() -> list:
            up = ForcedChoiceUpstream(GeminiUpstream(stack.mock_url, api_key="k"), policy)  # type: ignore[arg-type]
            try:
                return await _collect(up, stream)
            finally:
                await up.close()
        return stack.lt.run(go())

    assert any("functionCall" in p for c in run("retry") for p in c["candidates"][0]["content"]["parts"])
    allowed = run("allow")
    assert all("functionCall" not in p for c in allowed for p in c["candidates"][0]["content"]["parts"])
    with pytest.raises(UpstreamError) as info:
        run("error")
    assert info.value.code == "tool_choice_ignored" and "also after" not in info.value.message


class Recording:
    """A stand-in upstream that serves scripted streams and records which ones were closed."""

    def __init__(self, *answers: list[dict]) -> None:
        self.answers, self.opened, self.closed = list(answers), 0, 0

    async def close(self) -> None:
        pass

    async def generate(self, model: str, body: dict, api_key: str | None = None) -> dict:
        self.opened += 1
        return self.answers.pop(0)[0]

    async def stream(self, model: str, body: dict, api_key: str | None = None):
        chunks = self.answers.pop(0)
        self.opened += 1

        async def gen():
            try:
                for c in chunks:
                    yield c
            finally:
                self.closed += 1
        return gen()


def text_answer(finish: str = "STOP", text: str = "I'd rather chat") -> list[dict]:
    return [{"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish}]}]


CALL = [{"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
                         "finishReason": "STOP"}]}]


async def test_a_text_answer_is_retried_and_the_abandoned_stream_closed() -> None:
    up = Recording(text_answer(), CALL)
    chunks = [c async for c in await ForcedChoiceUpstream(up).stream("gemini-2.5-flash", BODY)]  # type: ignore[arg-type]
    assert chunks == CALL and up.opened == 2 and up.closed == 2


@pytest.mark.parametrize("answer", [
    text_answer("MAX_TOKENS"), text_answer("SAFETY", ""), text_answer("MALFORMED_FUNCTION_CALL", ""),
    [{"promptFeedback": {"blockReason": "SAFETY"}}], [{"candidates": []}],
    [{"candidates": [{"content": {"role": "model", "parts": [{"text": "cut off"}]}}]}],  # no finishReason
    [{"error": {"code": 500, "message": "boom"}}],
])
@pytest.mark.parametrize("stream", [False, True])
async def test_other_finishes_keep_their_meaning_without_a_retry(answer: list[dict], stream: bool) -> None:
    up = Recording(answer)
    fc = ForcedChoiceUpstream(up)  # type: ignore[arg-type]
    got = [c async for c in await fc.stream("gemini-2.5-flash", BODY)] if stream else [
        await fc.generate("gemini-2.5-flash", BODY)]
    assert got == answer and up.opened == 1, "passed on unchanged, for the translator to report"
