"""Peers' parser test vectors (vLLM's tool parsers, Ollama's model/parsers), ported as data into
tests/peer_vectors/<dialect>.json with their provenance, and run through the same parser the
`parse` command uses: whole, split in two at every point, and one character at a time.

A vector states what the peer's own test asserts: the calls (name and arguments), and the content
or reasoning where the peer asserts them (compared without surrounding whitespace). Where we
deliberately differ, the vector carries `deviation` with our result and the reason; those are listed
in tests/peer_vectors/DEVIATIONS.md and count against the pass rate, which must be >= 98 % per dialect.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from proxy.dialects import DIALECTS, ToolSpec
from proxy.dialects.parse_command import tool_specs
from proxy.dialects.text_parser import summarize

HERE = Path(__file__).parent / "peer_vectors"
FILES = sorted(HERE.glob("*.json"))
MIN_PASS_RATE = 0.98
# Dialects below the goal, each by the number of vectors that agree, and why (DEVIATIONS.md): the
# test pins the count so that neither a regression nor a silent "fix" goes unnoticed.
BELOW_GOAL = {
    "llama3": (23, "the issue's rule that marker-less JSON is a call only as the whole message contradicts "
                   "4 of vLLM's 21 vectors, which take a call out of surrounding prose (Ollama's 6 agree with it)"),
    "hermes": (38, "of vLLM's 13 and Ollama's 26, one sends a JSON string (\"hello\") as the arguments"),
    "harmony": (26, "of vLLM's 5 and Ollama's 22, one passes non-JSON bodies (\"foo\", \"\") on as arguments"),
    "functiongemma": (29, "3 of vLLM's vectors read a value the model quoted (<escape>42<escape>) as a number; "
                          "Ollama's Gemma parsers keep it the string it is"),
    "mistral": (57, "2 of vLLM's vectors drop what the model wrote (an unterminated call sent as arguments that are "
                    "not JSON; a call without arguments reported as a call and then dropped)"),
}


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["dialect"] in DIALECTS, path
    for v in data["vectors"]:
        assert v["src"] in data["sources"], (path.name, v["id"])
    return data


ALL = {p.stem: _load(p) for p in FILES}
CASES = [(name, v) for name, data in ALL.items() for v in data["vectors"]]


def _tools(v: dict[str, Any]) -> dict[str, ToolSpec]:
    tools = v.get("tools")
    if not tools:
        return {}
    return tool_specs([t if isinstance(t, dict) else {"name": t} for t in tools])


def _chunks(v: dict[str, Any]) -> list[str]:
    return v["chunks"] if "chunks" in v else [v["text"]]


def run(dialect: str, v: dict[str, Any], chunks: list[str]) -> dict[str, Any]:
    parser = DIALECTS[dialect].parser(_tools(v), think_open=bool(v.get("think_open")))
    events = [e for c in chunks for e in parser.feed(c)]
    events += parser.close(v.get("finish", "stop"))
    out = summarize(events)
    json.dumps(out["calls"], allow_nan=False)  # arguments are always JSON (never NaN or infinity)
    return out


def _agrees(out: dict[str, Any], want: dict[str, Any]) -> bool:
    if [[c["name"], c["arguments"]] for c in out["calls"]] != [list(c) for c in want["calls"]]:
        return False
    if "content" in want and (out["content"] or "").strip() != (want["content"] or "").strip():
        return False
    return not ("reasoning" in want and (out["reasoning"] or "").strip() != (want["reasoning"] or "").strip())


def expected(v: dict[str, Any]) -> dict[str, Any]:
    """What this project's parser must give: the peer's result, or ours where we deviate."""
    return v.get("deviation", v)


@pytest.mark.parametrize(("dialect_file", "vector"), CASES, ids=[f"{n}:{v['id']}" for n, v in CASES])
def test_vector(dialect_file: str, vector: dict[str, Any]) -> None:
    dialect = ALL[dialect_file]["dialect"]
    whole = "".join(_chunks(vector))
    want = expected(vector)
    as_given = run(dialect, vector, _chunks(vector))
    assert _agrees(as_given, want), as_given
    if vector.get("chunked", True):
        one_shot = run(dialect, vector, [whole])
        assert one_shot == as_given, "the peer's chunking and one read disagree"
        for i in range(1, len(whole)):
            assert run(dialect, vector, [whole[:i], whole[i:]]) == one_shot, f"split at {i}"
        assert run(dialect, vector, list(whole)) == one_shot, "one character at a time"


@pytest.mark.parametrize("dialect_file", sorted(ALL))
def test_pass_rate_and_deviations_are_listed(dialect_file: str) -> None:
    data = ALL[dialect_file]
    vectors = data["vectors"]
    agree = sum(1 for v in vectors if "deviation" not in v)
    if dialect_file in BELOW_GOAL:
        assert agree == BELOW_GOAL[dialect_file][0], f"{agree}/{len(vectors)}: update BELOW_GOAL"
    else:
        assert agree / len(vectors) >= MIN_PASS_RATE, f"{agree}/{len(vectors)}"
    listed = (HERE / "DEVIATIONS.md").read_text(encoding="utf-8")
    for v in vectors:
        if "deviation" in v:
            assert v["deviation"].get("why") and f"`{dialect_file}:{v['id']}`" in listed, v["id"]


def test_vector_ids_are_unique() -> None:
    for name, data in ALL.items():
        ids = [v["id"] for v in data["vectors"]]
        assert len(ids) == len(set(ids)), name
