"""HTTP client for OpenAI-compatible servers (`--openai-upstream PATTERN=BASE_URL`: vLLM, Ollama,
llama.cpp, LM Studio, EXO) over the one HTTP engine (upstream/http.py), speaking the Upstream
protocol: Gemini bodies in, Gemini answers out (request.py and answer.py translate both ways). Its
URL, headers, errors and chunks are its own; retries, time bounds, the pool and metrics are the
engine's, as for Gemini. Two-pass thinking: two_pass.py.
"""

import json
import logging
import math
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

from yarl import URL

from proxy import fast_json
from proxy.errors import UpstreamError
from proxy.journal.exchange import UpstreamCall, upstream_call
from proxy.pattern_rules import matches, rule_for
from proxy.upstream.gemini.client import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
    PROXY_TOKEN,
)
from proxy.upstream.http import DEFAULT_POOL_TIMEOUT, END_OF_STREAM, HttpEngine, RetryPolicy, retry_hint
from proxy.upstream.openai.answer import StreamTranslator, gemini_answer
from proxy.upstream.openai.request import chat_request
from proxy.upstream.openai.two_pass import (
    FirstPass,
    first_pass,
    first_pass_record,
    first_pass_request,
    second_request,
)

log = logging.getLogger(__name__)
KEY_ENV = "GTP_OPENAI_UPSTREAM_KEY"


class OpenAIUpstream(HttpEngine):
    PEER = "The OpenAI-compatible upstream"
    WHAT = "an OpenAI-compatible base URL"
    WIRE = "chat_completions"  # the API spoken, on the journal's record of each attempt

    def __init__(self, base_url: str, api_key: str | None = None, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 read_timeout: float = DEFAULT_READ_TIMEOUT, total_timeout: float = DEFAULT_TOTAL_TIMEOUT,
                 retry: RetryPolicy | None = None, two_pass: list[tuple[str, int]] | None = None,
                 think_open: tuple[str, ...] = (), pool_size: int = 0, pool_timeout: float = DEFAULT_POOL_TIMEOUT
                 ) -> None:
        super().__init__(base_url, connect_timeout, read_timeout, total_timeout, retry, pool_size, pool_timeout)
        self.url = URL(self.base_url).joinpath("chat", "completions")
        self.api_key = api_key if api_key is not None else os.environ.get(KEY_ENV)
        self.two_pass, self.think_open = list(two_pass or []), tuple(think_open)

    async def _headers(self, key: Any) -> dict[str, str]:
        headers = {"content-type": "application/json", "user-agent": PROXY_TOKEN}
        if self.api_key:  # the client's Gemini key is never sent to a local server
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    def _error(self, status: int, text: str, headers: Mapping[str, str]) -> UpstreamError:
        message = text[:500]
        try:
            body = json.loads(text)
            err = body.get("error") if isinstance(body.get("error"), dict) else body
            message = str(err.get("message") or message)
        except (ValueError, AttributeError):
            pass
        error = UpstreamError(f"OpenAI-compatible upstream error: {message}", status=status if 400 <= status < 600
                              else 502, type="invalid_request_error" if 400 <= status < 500 else "server_error")
        hint = retry_hint(None, {k.lower(): v for k, v in headers.items()})
        if hint is not None:
            error.retry_after = hint
            error.headers = {**error.headers, "Retry-After": str(max(1, math.ceil(hint)))}
        return error

    async def _whole(self, req: dict[str, Any], deadline: float, journal: UpstreamCall | None) -> dict[str, Any]:
        resp = await self.send(self.url, req, None, False, deadline, journal)
        answer = await self._read_answer(resp, deadline, journal, parsed=False)
        if not isinstance(answer, dict):
            raise self._unreadable("not a Chat Completions answer")
        return answer

    def _budget(self, model: str) -> int | None:
        """The first pass's token budget for `model` (first matching --two-pass rule), or None."""
        return rule_for(model.removeprefix("models/"), self.two_pass)

    async def _first_pass(self, model: str, req: dict[str, Any], budget_tokens: int, deadline: float) -> FirstPass:
        answer = await self._whole(first_pass_request(req, budget_tokens), deadline, first_pass_record(model))
        choice = (answer.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        opened = matches(model.removeprefix("models/"), self.think_open)
        return first_pass(str(message.get("content") or ""), choice.get("finish_reason"), choice.get("stop_reason"),
                          opened)

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        deadline = self._deadline()
        req = chat_request(model, body, stream=False)
        budget = self._budget(model)
        call = upstream_call()
        if budget is None:
            return gemini_answer(await self._whole(req, deadline, call), model)
        fp = await self._first_pass(model, req, budget, deadline)
        if fp.reasoning is None:
            return gemini_answer({"choices": [{"message": {"content": fp.text}, "finish_reason": "stop"}]}, model)
        answer = gemini_answer(await self._whole(second_request(req, fp), deadline, call), model)
        answer["candidates"][0]["content"]["parts"].insert(0, {"text": fp.reasoning, "thought": True})
        return answer

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        deadline = self._deadline()
        req = chat_request(model, body, stream=True)
        lead: list[dict[str, Any]] = []
        budget = self._budget(model)
        if budget is not None:
            fp = await self._first_pass(model, req, budget, deadline)
            if fp.reasoning is None:
                return _replay([{"candidates": [{"content": {"role": "model", "parts": [{"text": fp.text}]},
                                                 "finishReason": "STOP", "index": 0}], "modelVersion": model}])
            req = second_request(req, fp)
            lead = [{"candidates": [{"content": {"role": "model", "parts": [{"text": fp.reasoning, "thought": True}]},
                                     "index": 0}], "modelVersion": model}]
        call = upstream_call()
        resp = await self.send(self.url, req, None, True, deadline, call)
        return self._chunks(resp, deadline, StreamTranslator(model), lead, call)

    async def _chunks(self, resp: Any, deadline: float, translator: StreamTranslator, lead: list[dict[str, Any]],
                      journal: UpstreamCall | None) -> AsyncIterator[dict[str, Any]]:
        def translate(event: dict[str, Any]) -> list[dict[str, Any]]:
            if event is END_OF_STREAM:
                return translator.close()
            return translator.feed(event)
        events = self._events(resp, deadline, _parse_chunk, journal, translate=translate, finish=translator.close)
        try:
            for chunk in lead:
                yield chunk
            async for chunk in events:
                yield chunk
        finally:
            await events.aclose()  # type: ignore[attr-defined]
            resp.close()  # (a no-op once read to the end: the connection went back to the pool)


def _parse_chunk(payload: str) -> dict[str, Any] | None:
    if payload.strip() == "[DONE]":
        return END_OF_STREAM
    try:
        parsed = fast_json.loads(payload)
    except ValueError:
        raise UpstreamError("The OpenAI-compatible upstream sent an unreadable stream chunk", status=502) from None
    return parsed if isinstance(parsed, dict) else None


async def _replay(chunks: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for chunk in chunks:
        yield chunk

