"""Wraps an upstream client so a forced tool choice that Gemini ignored is retried once with a
directive, then reported as an error (policy `retry`), reported at once (`error`), or let through
(`allow`). Streams are held back only until the first functionCall part (or the end) arrives."""

import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

from proxy.errors import UpstreamError
from proxy.translate.forced_choice import forced_names, has_call, with_directive
from proxy.upstream import Upstream

log = logging.getLogger(__name__)
Policy = Literal["retry", "error", "allow"]
POLICIES = ("retry", "error", "allow")
IGNORED = ("Gemini ignored the forced tool choice (functionCallingConfig mode ANY) and answered without a "
           "function call{}.")


def _ignored(retried: bool) -> UpstreamError:
    return UpstreamError(IGNORED.format(", also after a retry with a directive" if retried else ""), status=502,
                         type="server_error", code="tool_choice_ignored")


class ForcedChoiceUpstream:
    def __init__(self, inner: Upstream, policy: Policy = "retry") -> None:
        self.inner, self.policy = inner, policy

    async def close(self) -> None:
        await self.inner.close()

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        names = forced_names(body)
        answer = await self.inner.generate(model, body, api_key)
        if names is None or self.policy == "allow" or has_call(answer) or "error" in answer:
            return answer
        if self.policy == "error":
            raise _ignored(False)
        log.info("forced tool choice ignored by %s; retrying once with a directive", model)
        answer = await self.inner.generate(model, with_directive(body, names), api_key)
        if not has_call(answer):
            raise _ignored(True)
        return answer

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        names = forced_names(body)
        chunks = await self.inner.stream(model, body, api_key)
        if names is None or self.policy == "allow":
            return chunks
        held, called = await _peek(chunks)
        if not called and self.policy == "retry":
            log.info("forced tool choice ignored by %s; retrying once with a directive", model)
            chunks = await self.inner.stream(model, with_directive(body, names), api_key)
            held, called = await _peek(chunks)
            if not called:
                raise _ignored(True)
        elif not called:
            raise _ignored(False)
        return _replay(held, chunks)


async def _peek(chunks: AsyncIterator[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """Read until a functionCall part (or an error, or the end); return what was read."""
    held: list[dict[str, Any]] = []
    async for chunk in chunks:
        held.append(chunk)
        if has_call(chunk) or "error" in chunk:
            return held, True
    return held, False


async def _replay(held: list[dict[str, Any]], rest: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    try:
        for chunk in held:
            yield chunk
        async for chunk in rest:
            yield chunk
    finally:
        aclose = getattr(rest, "aclose", None)
        if aclose is not None:
            await aclose()
