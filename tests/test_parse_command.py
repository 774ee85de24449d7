"""`gemini-tool-proxy parse`: the real command, fed JSON lines on stdin (every dialect vector of
test_dialects in one run per dialect, chunked input, per-line tools, bad lines)."""

import json
import subprocess
import sys
from collections import defaultdict

from tests.test_dialects import NAMES, VECTORS


def _run(args: list[str], lines: list[str]) -> tuple[int, list[dict], str]:
    done = subprocess.run([sys.executable, "-m", "proxy", "parse", *args], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=60)
    return done.returncode, [json.loads(ln) for ln in done.stdout.splitlines()], done.stderr


def test_every_vector_through_the_command(tmp_path):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
                                 for n in NAMES] + [
        {"name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}},
        {"name": "zip", "parameters": {"type": "object", "properties": {"code": {"type": "string"}}}}]))
    by_dialect = defaultdict(list)
    for name, text, calls, content, reasoning in VECTORS:
        by_dialect[name].append(({"text": text}, {"calls": [{"name": n, "arguments": a} for n, a in calls],
                                                  "content": content, "reasoning": reasoning}))
    for name, cases in by_dialect.items():
        code, out, _ = _run(["--dialect", name, "--tools", str(tools)], [json.dumps(i) for i, _ in cases])
        assert code == 0 and out == [want for _, want in cases], name


def test_chunks_tools_per_line_errors_and_warnings():
    lines = [json.dumps({"chunks": ["<tool_", "call>{\"name\": \"f\", \"argu", "ments\": {\"a\": [1]}}</tool_call>"]}),
             json.dumps({"text": '<tool_call>{"name": "g", "arguments": {}}</tool_call>', "tools": [{"name": "f"}]}),
             "not json", json.dumps({"txt": "x"}),
             json.dumps({"text": "<think>cut short", "finish": "length"})]
    code, out, err = _run(["--dialect", "hermes"], lines)
    assert code == 0
    assert out[0] == {"calls": [{"name": "f", "arguments": {"a": [1]}}], "content": "", "reasoning": None}
    assert out[1]["calls"] == [] and out[1]["content"].startswith("<tool_call>")  # g is not a declared tool
    assert "not a declared tool" in err
    assert "error" in out[2] and "error" in out[3]
    assert out[4] == {"calls": [], "content": "", "reasoning": "cut short"}


def test_unknown_dialect_and_missing_tools_file_fail_clearly(tmp_path):
    code, _, err = _run(["--dialect", "klingon"], [])
    assert code == 2 and "invalid choice" in err
    code, _, err = _run(["--dialect", "hermes", "--tools", str(tmp_path / "missing.json")], [])
    assert code == 2 and "error:" in err


def test_the_command_survives_what_vllm_found_in_pythonic_lists():
    """Issue 23: a bytes literal crashed `parse` (bytes is not JSON serializable) and 1e999 came out as
    Infinity; each now stays text with a warning while its sibling call goes out, as JSON."""
    lines = [json.dumps({"text": "[bad(x=b'z'), get_weather(city='Oslo')]"}),
             json.dumps({"text": "[calc(x=1e999), get_weather(city='Oslo')]"}),
             json.dumps({"text": "<|python_start|>[get_weather(city='Oslo')]<|python_end|>"})]
    done = subprocess.run([sys.executable, "-m", "proxy", "parse", "--dialect", "pythonic"], input="\n".join(lines),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Infinity" not in done.stdout and "NaN" not in done.stdout
    out = [json.loads(ln) for ln in done.stdout.splitlines()]
    assert [o["calls"] for o in out] == [[{"name": "get_weather", "arguments": {"city": "Oslo"}}]] * 3
    assert out[0]["content"] == "bad(x=b'z')" and out[1]["content"] == "calc(x=1e999)" and out[2]["content"] == ""
    assert done.stderr.count("kept as text") == 2
