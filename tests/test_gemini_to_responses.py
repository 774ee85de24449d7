"""The stream translator: every event it emits is a valid openai-SDK event, in a valid order."""

import pydantic
from openai.types.responses import Response, ResponseStreamEvent

from proxy.responses.translator import ResponsesTranslator
from proxy.tools.prepare_tools import prepare_tools

EVENT = pydantic.TypeAdapter(ResponseStreamEvent)


def skeleton() -> dict:
    return {"id": "resp_1", "object": "response", "created_at": 1, "model": "gemini-2.5-flash",
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def run(chunks: list[dict]) -> tuple[list[dict], ResponsesTranslator]:
    t = ResponsesTranslator(skeleton(), prepare_tools([{"type": "function", "name": "srv/tool", "parameters": None},
                                                       {"type": "function", "name": "other"}]))
    events = t.start()
    for c in chunks:
        events += t.feed(c)
    events += t.finish()
    for e in events:
        EVENT.validate_python(e)
    Response.model_validate(t.response)
    return events, t


def text(t: str, **extra) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": t, **extra}]}, **({})}]}


def test_thoughts_text_and_calls_interleave_as_separate_items() -> None:
    chunks = [
        text("thinking...", thought=True),
        text("Let me "), text("check."),
        {"candidates": [{"content": {"parts": [
            {"functionCall": {"name": "srv_tool", "args": {"q": 1}, "id": "abc"}, "thoughtSignature": "SIG"},
            {"functionCall": {"name": "other", "args": {}}}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "", "thoughtSignature": "END"}]}, "finishReason": "STOP"}],
         "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4, "thoughtsTokenCount": 5,
                           "totalTokenCount": 12}},
    ]
    events, t = run(chunks)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"] == [
        "reasoning", "message", "function_call", "function_call"]
    assert [e["output_index"] for e in events if e["type"] == "response.output_item.done"] == [0, 1, 2, 3]
    out = t.response["output"]
    assert out[1]["content"][0]["text"] == "Let me check."
    assert out[2]["name"] == "srv/tool" and out[2]["call_id"] == "abc" and out[2]["arguments"] == '{"q": 1}'
    assert out[3]["call_id"].startswith("call_") and len(out[3]["call_id"]) <= 40
    assert t.response["usage"]["output_tokens"] == 9
    # History keeps every signature on its own part, the text joined.
    assert t.model_content()[0]["parts"] == [
        {"text": "thinking...", "thought": True}, {"text": "Let me check."},
        {"functionCall": {"name": "srv_tool", "args": {"q": 1}, "id": "abc"}, "thoughtSignature": "SIG"},
        {"functionCall": {"name": "other", "args": {}}}, {"text": "", "thoughtSignature": "END"}]
    assert [(c.gemini_id, c.signature) for c in t.calls] == [("abc", "SIG"), (None, None)]


def test_failure_closes_open_items_then_fails() -> None:
    t = ResponsesTranslator({"id": "resp_1"})
    events = t.start() + t.feed(text("partial")) + t.fail("Gemini error 500 INTERNAL: boom")
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["response.output_item.done", "response.failed"]
    assert t.response["status"] == "failed" and "boom" in t.response["error"]["message"]
    assert t.feed(text("late")) == [] and t.finish() == []
