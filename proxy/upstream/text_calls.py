"""Wraps an upstream so models that speak tools only as text get ordinary tools and give ordinary
calls: the request's tools are rendered into the prompt in the model's dialect, its answer (whole or
streamed) parsed back into functionCall parts. For native models with rescue on, complete text
calls in the answer are turned into calls; everything else passes through untouched.
"""

import logging
from collections.abc import AsyncIterator
from typing import Any

from proxy.dialects.parse_answer import AnswerParser, held_back
from proxy.dialects.render_request import render_request, tool_specs
from proxy.dialects.tool_modes import ToolModes
from proxy.upstream.base import Upstream

log = logging.getLogger(__name__)


# Models whose requests and answers pass through untouched, remembered (the modes are fixed at start);
# the model names are the clients', so the set is emptied when it holds this many.
PASSING_MAX = 256


class TextCallsUpstream:
    def __init__(self, inner: Upstream, modes: ToolModes) -> None:
        self.inner, self.modes = inner, modes
        self._passing: set[str] = set()  # (every native model's request asked the modes twice otherwise)

    async def close(self) -> None:
        await self.inner.close()

    def _prepare(self, model: str, body: dict[str, Any]) -> tuple[dict[str, Any], AnswerParser | None]:
        d = self.modes.dialect(model)
        if d is not None:
            specs = tool_specs(body)
            return (render_request(body, d, single_call=self.modes.single(model)),
                    AnswerParser(d, specs, think_open=self.modes.thinks_open(model)))
        rescue = self.modes.rescue_dialect(model)
        if rescue is not None:
            return body, AnswerParser(rescue, tool_specs(body), rescue=True)
        if len(self._passing) >= PASSING_MAX:
            self._passing.clear()
        self._passing.add(model)
        return body, None

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        if model in self._passing:
            return await self.inner.generate(model, body, api_key)
        body, parser = self._prepare(model, body)
        answer = await self.inner.generate(model, body, api_key)
        return answer if parser is None else parser.chunk(answer)

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        if model in self._passing:
            return await self.inner.stream(model, body, api_key)
        body, parser = self._prepare(model, body)
        chunks = await self.inner.stream(model, body, api_key)
        return chunks if parser is None else _rewritten(chunks, parser)


async def _rewritten(chunks: AsyncIterator[dict[str, Any]], parser: AnswerParser) -> AsyncIterator[dict[str, Any]]:
    try:
        async for chunk in chunks:
            rewritten = parser.chunk(chunk)
            if not held_back(rewritten):
                yield rewritten
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
