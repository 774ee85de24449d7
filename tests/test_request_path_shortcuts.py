"""The request path's common case, run with less code (issue 62 item 3: at c=1 a request pays for
the code it touches; scripts/footprint.py counts it). Each shortcut gives what the long way gave:
a native model's request passes the text-calls layer untouched, a client key's credential and a
whole answer's read timeout are made once, a request that refers to no earlier call asks neither
the carriers nor the store, and an answer's text parts skip the streamed-call and server-part
machinery."""

from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from proxy import metrics
from proxy.chat import translator as chat_translator
from proxy.chat.translator import ChatTranslator
from proxy.dialects.tool_modes import ToolModes
from proxy.from_gemini import partial_args, server_tools
from proxy.from_gemini.partial_args import PartialCalls
from proxy.from_gemini.server_tools import PartsBeforeCall
from proxy.server.context import CONTEXT
from proxy.upstream import text_calls
from proxy.upstream.gemini.client import GeminiUpstream
from proxy.upstream.text_calls import TextCallsUpstream
from proxy.wire.responses import FunctionCallItem, FunctionCallOutputItem, MessageItem
from tests.harness import Stack

BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{"name": "f", "description": "d", "parameters": {"type": "object"}}]}]}
ANSWER = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}


class _Inner:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        self.bodies.append(body)
        return ANSWER

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None) -> Any:
        self.bodies.append(body)

        async def chunks() -> Any:
            yield ANSWER
        return chunks()


class _CountedModes(ToolModes):
    """ToolModes that count how often a model's dialect is asked."""

    def dialect(self, model: str) -> Any:
        self.asked.append(model)  # type: ignore[attr-defined]
        return super().dialect(model)


def _modes() -> _CountedModes:
    modes = _CountedModes.parse()
    object.__setattr__(modes, "asked", [])
    return modes


async def test_a_native_model_s_requests_pass_the_text_calls_layer_untouched_and_ask_the_modes_once() -> None:
    inner, modes = _Inner(), _modes()
    up = TextCallsUpstream(inner, modes)  # type: ignore[arg-type]
    for _ in range(3):
        assert await up.generate("gemini-2.5-flash", BODY) == ANSWER
    chunks = await up.stream("gemini-2.5-flash", BODY)
    assert [c async for c in chunks] == [ANSWER]
    assert all(b is BODY for b in inner.bodies) and len(inner.bodies) == 4
    assert modes.asked == ["gemini-2.5-flash"]  # type: ignore[attr-defined]


async def test_a_text_dialect_model_is_rendered_on_every_request() -> None:
    inner, modes = _Inner(), _modes()
    up = TextCallsUpstream(inner, modes)  # type: ignore[arg-type]
    for _ in range(2):
        await up.generate("gemma-3-27b-it", BODY)
    assert all("tools" not in b for b in inner.bodies)  # the tools went into the prompt, as text
    assert modes.asked == ["gemma-3-27b-it"] * 2  # type: ignore[attr-defined]


async def test_the_remembered_models_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_calls, "PASSING_MAX", 3)
    up = TextCallsUpstream(_Inner(), ToolModes.parse())  # type: ignore[arg-type]
    for i in range(10):  # a client chooses the model names: they must not grow the set without bound
        await up.generate(f"gemini-{i}", BODY)
        assert len(up._passing) <= 3


def test_a_client_key_s_credential_is_made_once() -> None:
    up = GeminiUpstream("http://127.0.0.1:9", api_key="server-key")
    first, again = up._credential("client-key-1"), up._credential("client-key-1")
    assert first is again and first.key == "client-key-1" and first.label == metrics.key_label("client-key-1")
    assert up._credential("client-key-2").key == "client-key-2"
    assert up._credential(None).key == "server-key" and not up.pool.owns(first)


def test_a_whole_answer_s_read_timeout_is_made_once_per_value() -> None:
    up = GeminiUpstream("http://127.0.0.1:9", api_key="k", read_timeout=30)
    first = up._idle_limit(up.read_timeout)
    assert up._idle_limit(up.read_timeout) is first and first.sock_read == 30 and first.total is None
    up.read_timeout = 5  # (tests and operators' code set it after the engine is made)
    assert up._idle_limit(up.read_timeout).sock_read == 5


@pytest.fixture(scope="module")
def stack() -> Any:
    s = Stack()
    yield s
    s.close()


def test_a_request_that_refers_to_no_call_asks_neither_carriers_nor_store(stack: Stack,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = stack.app[CONTEXT]
    asked: list[list[str]] = []
    real = ctx.store.get_calls

    async def get_calls(session: str, call_ids: list[str]) -> Any:
        asked.append(call_ids)
        return await real(session, call_ids)

    monkeypatch.setattr(ctx.store, "get_calls", get_calls)
    monkeypatch.setattr(type(ctx), "seal", lambda *_: pytest.fail("the carriers were asked"))
    request = make_mocked_request("POST", "/v1/responses", app=stack.app)
    tools = [{"type": "function", "name": "f", "parameters": {"type": "object"}}]
    model, prepared, calls = stack.lt.run(ctx.prepare(request, "s", "gemini-2.5-flash", tools,
                                                      [MessageItem(role="user", content="hi")]))
    assert (model, calls, asked) == ("gemini-2.5-flash", {}, []) and prepared.names.to_gemini("f") == "f"
    monkeypatch.undo()
    monkeypatch.setattr(ctx.store, "get_calls", get_calls)
    items = [FunctionCallItem({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}),
             FunctionCallOutputItem({"type": "function_call_output", "call_id": "c1", "output": "o"})]
    stack.lt.run(ctx.prepare(request, "s", "gemini-2.5-flash", tools, items))
    assert asked == [["c1", "c1"]]  # a request that refers to calls still looks them up


def test_text_parts_skip_the_machinery_of_streamed_calls_and_server_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("is_end_marker", "is_fragment"):
        monkeypatch.setattr(partial_args, name, lambda _: pytest.fail("a text part was tested as a call fragment"))
    monkeypatch.setattr(server_tools, "is_server_part", lambda _: pytest.fail("a text part was tested as a search's"))
    monkeypatch.setattr(chat_translator, "chat_annotations", lambda *_: pytest.fail("citations without a search"))
    translator = ChatTranslator("gpt")
    translator.feed(ANSWER)
    assert translator.completion()["choices"][0]["message"]["content"] == "ok"


def test_a_text_part_ends_a_streamed_call_as_any_other_part_does() -> None:
    calls = PartialCalls()
    events, part = calls.feed({"functionCall": {"name": "f", "partialArgs": [], "willContinue": True}})
    assert part is None and [e.kind for e in events] == ["start"]
    events, part = calls.feed({"text": "x"})
    assert part == {"text": "x"} and [e.kind for e in events] == ["end"] and calls.current is None
    assert calls.feed({"text": "y"}) == ([], {"text": "y"})
    assert calls.feed({"thought": True, "text": "z"}) == ([], {"thought": True, "text": "z"})


def test_only_a_search_s_parts_are_held_for_the_next_call() -> None:
    held = PartsBeforeCall()
    assert not held.hold({"text": "x"}) and not held.hold({"toolCall": "not an object"})
    assert held.hold({"toolResponse": {"id": "t1", "response": {}}}) and len(held.parts) == 1


def test_a_chat_answer_without_a_search_has_no_annotations() -> None:
    translator = ChatTranslator("gpt")
    translator.feed(ANSWER)
    message = translator.completion()["choices"][0]["message"]
    assert message["content"] == "ok" and "annotations" not in message
