"""Wraps an upstream client so a forced tool choice that Gemini ignored is retried once with a
directive, then reported as an error (policy `retry`), reported at once (`error`), or let through
(`allow`).

"Ignored" means exactly one thing: a clean text answer without a call (AnswerCheck.answered_in_text).
Every other finish — MAX_TOKENS, a safety block, MALFORMED_FUNCTION_CALL, an empty or cut-off
answer, an error — keeps its own meaning and goes on to the translator unchanged. Streams are held
back only until the first functionCall part (or the end); every stream given up is closed.
"""

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

from proxy.errors import ProxyError, UpstreamError
from proxy.from_gemini.answer_check import AnswerCheck
from proxy.journal import exchange
from proxy.tools.forced_choice import forced_names, with_directive
from proxy.upstream.base import Upstream
from proxy.wire.gemini import checked

log = logging.getLogger(__name__)
Policy = Literal["retry", "error", "allow"]
from proxy.defaults import FORCED_CHOICE_POLICIES as POLICIES  # noqa: E402, F401 (the options' choices)

IGNORED = ("Gemini ignored the forced tool choice (functionCallingConfig mode ANY) and answered without a "
           "function call{}.")


def _ignored(retried: bool) -> UpstreamError:
    return UpstreamError(IGNORED.format(", also after a retry with a directive" if retried else ""), status=502,
                         type="server_error", code="tool_choice_ignored")


def _text_instead_of_call(chunks: list[dict[str, Any]]) -> bool:
    check = AnswerCheck()
    for chunk in chunks:
        try:
            check.feed(checked(chunk))
        except ProxyError:
            return False  # an error or a broken answer: the pipeline reports it as such
    return check.answered_in_text()


async def _close(chunks: AsyncIterator[dict[str, Any]]) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):
            await aclose()


class ForcedChoiceUpstream:
    def __init__(self, inner: Upstream, policy: Policy = "retry") -> None:
        self.inner, self.policy = inner, policy

    async def close(self) -> None:
        await self.inner.close()

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        names = forced_names(body)
        answer = await self.inner.generate(model, body, api_key)
        if names is None or self.policy == "allow" or not _text_instead_of_call([answer]):
            return answer
        if self.policy == "error":
            raise _ignored(False)
        answer = await self.inner.generate(model, _retried(model, body, names, False), api_key)
        if _text_instead_of_call([answer]):
            raise _ignored(True)
        return answer

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        names = forced_names(body)
        chunks = await self.inner.stream(model, body, api_key)
        if names is None or self.policy == "allow":
            return chunks
        held, called = await _peek(chunks)
        if called or not _text_instead_of_call(held):
            return _replay(held, chunks)
        await _close(chunks)
        if self.policy == "error":
            raise _ignored(False)
        chunks = await self.inner.stream(model, _retried(model, body, names, True), api_key)
        held, called = await _peek(chunks)
        if called or not _text_instead_of_call(held):
            return _replay(held, chunks)
        await _close(chunks)
        raise _ignored(True)


def _retried(model: str, body: dict[str, Any], names: Any, stream: bool) -> dict[str, Any]:
    """The retry's body, and the journal's record of it: a call of its own, noted."""
    log.info("forced tool choice ignored by %s; retrying once with a directive", model)
    retry = with_directive(body, names)
    exchange.note("tool_choice", "Gemini answered in text despite the forced tool choice; retried once with a "
                                 "directive in the system instruction")
    exchange.new_upstream_call(model, retry, stream)
    return retry


async def _peek(chunks: AsyncIterator[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """Read until a functionCall part (or an error, or the end); return what was read. On any
    failure while reading, the stream is closed before the failure goes on."""
    held: list[dict[str, Any]] = []
    try:
        async for chunk in chunks:
            held.append(chunk)
            check = AnswerCheck()
            try:
                check.feed(checked(chunk))
            except ProxyError:
                return held, False  # an error or a broken chunk ends the peek; the pipeline reports it
            if check.called:
                return held, True
    except BaseException:
        await _close(chunks)
        raise
    return held, False


async def _replay(held: list[dict[str, Any]], rest: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    try:
        for chunk in held:
            yield chunk
        async for chunk in rest:
            yield chunk
    finally:
        await _close(rest)
