"""HTTP client for OpenAI-compatible servers (`--openai-upstream PATTERN=BASE_URL`: vLLM, Ollama,
llama.cpp, LM Studio, EXO), speaking the Upstream protocol: Gemini bodies in, Gemini answers out
(openai_upstream/ translates both ways). Bounded in time like the Gemini client: connecting,
between stream events, the whole exchange; 429/500/503 and failed connections are retried while
nothing reached the client.

Two-pass thinking (`--two-pass PATTERN=BUDGET`, docs/dialects.md#two-pass-thinking, Qwen's documented
method): a first pass stops at `</think>` or after BUDGET tokens; its reasoning is closed — with
Qwen's "limited time" sentence when it was cut — and the answer comes from a second pass that
continues that closed block (`continue_final_message`). The first pass is held until it ends (it
is at most BUDGET tokens); the second streams as it comes.
"""

import asyncio
import json
import logging
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from proxy import fast_json
from proxy.errors import UpstreamError
from proxy.journal.exchange import CURRENT, UpstreamCall, upstream_call
from proxy.openai_upstream.answer import StreamTranslator, gemini_answer
from proxy.openai_upstream.request import chat_request
from proxy.pattern_rules import matches, rule_for
from proxy.upstream.gemini import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, DEFAULT_TOTAL_TIMEOUT, PROXY_TOKEN
from proxy.upstream.http_session import (
    DEFAULT_POOL_TIMEOUT,
    POOL_WAIT,
    HttpSession,
    PoolWait,
    Trickled,
    checked_base_url,
    read_whole,
)
from proxy.upstream.retry import RETRYABLE_STATUS, RetryPolicy
from proxy.wire.sse import SSEDecoder

log = logging.getLogger(__name__)
KEY_ENV = "GTP_OPENAI_UPSTREAM_KEY"
WIRE = "chat_completions"  # the API spoken, on the journal's record of each attempt
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# Qwen's budget sentence (QwenLM/Qwen3 PR #1481), written before the forced close of a cut block.
CUT_THINKING = "\n\nConsidering the limited time by the user, I have to give the solution based on the thinking " \
               "directly now."


@dataclass(frozen=True)
class FirstPass:
    reasoning: str | None   # None: the model answered without thinking; the answer is `text`
    text: str
    closed: bool


def first_pass(text: str, finish: str | None, stop_reason: Any, opened: bool) -> FirstPass:
    """What the first pass was: reasoning (closed at `</think>` or cut by the budget), or a plain
    answer from a model that did not think (finished by itself, never having opened the tag)."""
    stripped = text.lstrip()
    if stripped.startswith(THINK_OPEN):
        opened, text = True, stripped[len(THINK_OPEN):]
    closed = stop_reason == THINK_CLOSE or THINK_CLOSE in text
    text = text.split(THINK_CLOSE, 1)[0]
    if not opened and not closed and finish == "stop":
        return FirstPass(None, text, False)
    return FirstPass(text.strip(), text, closed)


def prefill(fp: FirstPass) -> str:
    """The assistant turn the second pass continues: the reasoning, closed."""
    return f"{THINK_OPEN}\n{fp.reasoning}{'' if fp.closed else CUT_THINKING}\n{THINK_CLOSE}\n\n"


class OpenAIUpstream(HttpSession):
    def __init__(self, base_url: str, api_key: str | None = None, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 read_timeout: float = DEFAULT_READ_TIMEOUT, total_timeout: float = DEFAULT_TOTAL_TIMEOUT,
                 retry: RetryPolicy | None = None, two_pass: list[tuple[str, int]] | None = None,
                 think_open: tuple[str, ...] = (), pool_size: int = 0, pool_timeout: float = DEFAULT_POOL_TIMEOUT
                 ) -> None:
        base = checked_base_url(base_url, "an OpenAI-compatible base URL")
        self.base_url = str(base)
        self.url = base.joinpath("chat", "completions")
        self.api_key = api_key if api_key is not None else os.environ.get(KEY_ENV)
        self.read_timeout, self.total_timeout = read_timeout, total_timeout
        self.retry = retry or RetryPolicy()
        self.two_pass, self.think_open = list(two_pass or []), tuple(think_open)
        super().__init__(connect_timeout, pool_size, pool_timeout)

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "user-agent": PROXY_TOKEN}
        if self.api_key:  # the client's Gemini key is never sent to a local server
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    def _error(self, status: int, text: str) -> UpstreamError:
        message = text[:500]
        try:
            body = json.loads(text)
            err = body.get("error") if isinstance(body.get("error"), dict) else body
            message = str(err.get("message") or message)
        except (ValueError, AttributeError):
            pass
        return UpstreamError(f"OpenAI-compatible upstream error: {message}", status=status if 400 <= status < 600
                             else 502, type="invalid_request_error" if 400 <= status < 500 else "server_error")

    async def _post(self, req: dict[str, Any], deadline: float, journal: UpstreamCall | None
                    ) -> aiohttp.ClientResponse:
        """POST a Chat Completions request, retried while retryable; `journal`: the journal's record of
        the call, which keeps the bytes sent and each attempt (this is what the server got)."""
        loop = asyncio.get_running_loop()
        data = json.dumps(req, ensure_ascii=False).encode()
        if journal is not None:
            journal.raw, journal.body = True, data
        for attempt in range(self.retry.max_retries + 1):
            limit = min(loop.time() + self.read_timeout, deadline) if req.get("stream") else deadline
            tried = None
            if journal is not None:
                tried = {"start": time.perf_counter(), "key": None, "wire": WIRE}
                journal.attempts.append(tried)
            wait = None
            try:
                async with asyncio.timeout_at(limit) as scope:
                    wait = PoolWait(scope, self.pool_timeout)
                    token = POOL_WAIT.set(wait)  # read by the connector if the pool is full
                    try:
                        resp = await self._http().post(self.url, data=data, headers=self._headers(),
                                                       **({} if req.get("stream") else
                                                          {"timeout": self._idle_limit(self.read_timeout)}))
                    finally:
                        POOL_WAIT.reset(token)
                    if tried is not None:
                        tried["status"], tried["end"] = resp.status, time.perf_counter()
                    if resp.status == 200:
                        return resp
                    text = await resp.text(errors="replace")
                    resp.release()
                    if tried is not None:
                        tried["error"] = text[:2000]
                error = self._error(resp.status, text)
                if resp.status not in RETRYABLE_STATUS:
                    raise error
            except TimeoutError as e:
                if wait is not None and wait.queued:  # no pooled connection came free in time
                    raise UpstreamError(f"The proxy's {self.pool_size} connections to {self.base_url} are all in use "
                                        f"and none came free within {self.pool_timeout:g}s; retry shortly.",
                                        status=503, type="server_error", code="upstream_connections_busy",
                                        headers={"Retry-After": "1"}) from e
                raise UpstreamError(f"The OpenAI-compatible upstream at {self.base_url} did not answer in time.",
                                    status=504, type="server_error") from e
            except aiohttp.ClientError as e:
                if tried is not None:
                    tried.update(error=f"could not connect: {e}", end=time.perf_counter())
                error = UpstreamError(f"Could not reach the OpenAI-compatible upstream at {self.base_url}: {e}",
                                      status=502, type="server_error")
            wait = self.retry.wait(attempt, None)
            if wait is None or loop.time() + wait >= deadline:
                raise error
            await asyncio.sleep(wait)
        raise AssertionError("unreachable: the last attempt raises")

    async def _whole(self, req: dict[str, Any], deadline: float, journal: UpstreamCall | None) -> dict[str, Any]:
        resp = await self._post(req, deadline, journal)
        try:
            raw = await read_whole(resp, self.read_timeout, deadline)
            if journal is not None:
                journal.answer, journal.first_byte = raw, journal.first_byte or time.perf_counter()
                journal.last_byte = time.perf_counter()
            answer = await fast_json.loads_cooperatively(raw)
        except Trickled as e:
            resp.close()
            raise UpstreamError(f"The OpenAI-compatible upstream {e.what()}.", status=504, type="server_error") from e
        except (TimeoutError, ValueError, aiohttp.ClientError) as e:
            resp.close()
            raise UpstreamError(f"The OpenAI-compatible upstream sent an unreadable answer: {e}", status=502,
                                type="server_error") from e
        resp.release()
        return answer

    def _deadline(self) -> float:
        return asyncio.get_running_loop().time() + self.total_timeout

    def _budget(self, model: str) -> int | None:
        """The first pass's token budget for `model` (first matching --two-pass rule), or None."""
        return rule_for(model.removeprefix("models/"), self.two_pass)

    async def _first_pass(self, model: str, req: dict[str, Any], budget_tokens: int, deadline: float) -> FirstPass:
        budget = {**req, "max_tokens": budget_tokens, "stop": [THINK_CLOSE]}
        budget.pop("stream", None)
        budget.pop("stream_options", None)
        answer = await self._whole(budget, deadline, _first_pass_record(model))
        choice = (answer.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        opened = matches(model.removeprefix("models/"), self.think_open)
        return first_pass(str(message.get("content") or ""), choice.get("finish_reason"), choice.get("stop_reason"),
                          opened)

    @staticmethod
    def _second(req: dict[str, Any], fp: FirstPass) -> dict[str, Any]:
        return {**req, "messages": [*req["messages"], {"role": "assistant", "content": prefill(fp)}],
                "continue_final_message": True, "add_generation_prompt": False}

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
        answer = gemini_answer(await self._whole(self._second(req, fp), deadline, call), model)
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
            req = self._second(req, fp)
            lead = [{"candidates": [{"content": {"role": "model", "parts": [{"text": fp.reasoning, "thought": True}]},
                                     "index": 0}], "modelVersion": model}]
        call = upstream_call()
        resp = await self._post(req, deadline, call)
        return self._chunks(resp, deadline, StreamTranslator(model), lead, call)

    async def _chunks(self, resp: aiohttp.ClientResponse, deadline: float, translator: StreamTranslator,
                      lead: list[dict[str, Any]], journal: UpstreamCall | None) -> AsyncIterator[dict[str, Any]]:
        loop = asyncio.get_running_loop()
        decoder = SSEDecoder()
        ended = False
        for chunk in lead:
            yield chunk
        try:
            while True:
                try:
                    async with asyncio.timeout_at(min(loop.time() + self.read_timeout, deadline)):
                        data = await resp.content.readany()
                except TimeoutError:
                    yield {"error": {"code": 504, "status": "DEADLINE_EXCEEDED",
                                     "message": "The OpenAI-compatible upstream stopped sending."}}
                    return
                if not data:
                    ended = True
                    break
                for payload in decoder.feed(data):
                    if payload.strip() == "[DONE]":
                        for chunk in translator.close():
                            yield chunk
                        continue
                    try:
                        parsed = json.loads(payload)
                    except ValueError:
                        yield {"error": {"code": 502, "status": "INTERNAL",
                                         "message": "The OpenAI-compatible upstream sent an unreadable stream chunk"}}
                        return
                    if journal is not None:
                        journal.came(parsed, len(payload))  # as the server sent it
                    try:
                        out = translator.feed(parsed) if isinstance(parsed, dict) else []
                    except UpstreamError as e:
                        yield {"error": {"code": 502, "status": "INTERNAL", "message": e.message}}
                        return
                    for chunk in out:
                        yield chunk
            for chunk in translator.close():
                yield chunk
        except aiohttp.ClientError as e:
            yield {"error": {"code": 502, "status": "UNAVAILABLE", "message": f"The stream broke off: {e}"}}
        finally:
            resp.release() if ended else resp.close()


def _first_pass_record(model: str) -> UpstreamCall | None:
    """The journal's record of a two-pass first pass: a call of its own, before the one it prepares
    (the current call stays the exchange's last: the second pass)."""
    ex = CURRENT.get()
    if ex is None:
        return None
    call = UpstreamCall(model, None, False)
    ex.upstreams.insert(max(0, len(ex.upstreams) - 1), call)
    return call


async def _replay(chunks: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for chunk in chunks:
        yield chunk

