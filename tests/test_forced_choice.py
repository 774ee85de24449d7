"""The forced-choice policies, on the real upstream client against the mock."""

import pytest

from proxy.errors import UpstreamError
from proxy.upstream.forced_choice import ForcedChoiceUpstream
from proxy.upstream.gemini import GeminiUpstream

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
