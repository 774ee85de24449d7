"""Gemini answers rewritten for a text dialect (dialects/parse_answer.py): chunks in, chunks out."""

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.dialects import ToolSpec, dialect
from proxy.dialects.parse_answer import AnswerParser, held_back

TEXT = 'Sure. <tool_call>{"name": "f", "arguments": {"a": "x}"}}</tool_call> Done.'


def _chunk(text, finish=None, **part):
    cand = {"content": {"role": "model", "parts": [{"text": text, **part}]}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand]}


def _parts(chunks):
    return [p for c in chunks for cand in c["candidates"] for p in (cand.get("content") or {}).get("parts", [])]


@settings(max_examples=150, deadline=None)
@given(cuts=st.sets(st.integers(1, len(TEXT) - 1), max_size=10))
def test_any_split_into_chunks_gives_the_same_parts(cuts):
    pieces = [TEXT[i:j] for i, j in zip([0, *sorted(cuts)], [*sorted(cuts), len(TEXT)], strict=True)]
    parser = AnswerParser(dialect("hermes"), [ToolSpec("f")])
    out = [parser.chunk(_chunk(p, "STOP" if n == len(pieces) - 1 else None)) for n, p in enumerate(pieces)]
    shown = [c for c in out if not held_back(c)]
    parts = _parts(shown)
    assert [p.get("functionCall") for p in parts if "functionCall" in p] == [{"name": "f", "args": {"a": "x}"}}]
    assert "".join(p.get("text", "") for p in parts) == "Sure.Done."
    assert shown[-1]["candidates"][0]["finishReason"] == "STOP" and parser.calls == 1


def test_a_text_signature_is_kept_and_a_native_call_passes():
    parser = AnswerParser(dialect("hermes"), [ToolSpec("f")], rescue=True)
    out = parser.chunk({"candidates": [{"content": {"role": "model", "parts": [
        {"text": "hello", "thoughtSignature": "sig"}, {"functionCall": {"name": "f", "args": {}}}]},
        "finishReason": "STOP"}]})
    assert _parts([out]) == [{"text": "hello"}, {"text": "", "thoughtSignature": "sig"},
                             {"functionCall": {"name": "f", "args": {}}}]
