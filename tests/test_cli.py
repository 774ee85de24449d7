"""The command line: `serve` as a real process, port conflicts, and the scripts' Python finder."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import openai
import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "proxy", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_serve_with_builtin_mock() -> None:
    port = free_port()
    proc = start(["serve", "--port", str(port), "--upstream", "mock"])
    try:
        assert "ready on http://127.0.0.1:" in proc.stdout.readline()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz") as r:
            assert json.load(r) == {"status": "ok"}
        c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="demo", _strict_response_validation=True)
        assert c.responses.create(model="gemini-2.5-flash", input="hi").output_text.endswith("heard: hi")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    assert "demo" not in proc.stderr.read(), "API keys never reach the log"


@pytest.mark.parametrize("choice", ["auto", "asyncio", "uvloop"])
def test_event_loop_choice(choice: str) -> None:
    """uvloop by default where installed (it is a dependency on Linux); asyncio's loop on request.
    The refusal of connections over the cap (site.py) must work on both: see test_client_limits."""
    port = free_port()
    proc = start(["--event-loop", choice, "serve", "--port", str(port), "--upstream", "mock"])
    try:
        assert "ready on http://127.0.0.1:" in proc.stdout.readline()
        c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="demo", _strict_response_validation=True)
        assert c.responses.create(model="gemini-2.5-flash", input="hi").output_text.endswith("heard: hi")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    expected = "asyncio" if choice == "asyncio" else "uvloop"
    assert f"event loop {expected})" in proc.stderr.read()


def test_busy_port_fails_fast_with_a_message() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = start(["serve", "--port", str(port), "--upstream", "mock"])
        _, err = proc.communicate(timeout=20)
    assert proc.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in err


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_env_script_explains_a_missing_python(tmp_path: Path) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for tool in ("dirname", "cat", "sha256sum", "cut", "ls", "sort", "rm", "mkdir"):
        if shutil.which(tool):
            os.symlink(shutil.which(tool), fake_bin / tool)
    old = fake_bin / "python3"
    old.write_text("#!/bin/sh\nexit 1\n")  # a Python that is too old answers the version check with 1
    old.chmod(0o755)
    env = {"PATH": str(fake_bin), "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "none"),
           "GTP_VENV": str(tmp_path / "venv")}
    proc = subprocess.run([shutil.which("bash"), "-c", f". {ROOT}/scripts/env.sh"], env=env,
                          capture_output=True, text=True, timeout=60)
    if any(Path(p).exists() for p in ("/usr/bin/python3.12", "/usr/bin/python3.13", "/usr/local/bin/python3.12",
                                      "/usr/local/bin/python3.13")):
        pytest.skip("this machine has a system Python >= 3.12 the script would find")
    assert proc.returncode == 1
    assert "needs Python >= 3.12" in proc.stderr and "GTP_PYTHON" in proc.stderr


def test_model_rule_options_are_checked_at_start() -> None:
    """`--tool-result-media`, `--stream-arguments` and `--hosted-tools` (issue 9's option names) refuse bad
    values by name."""
    for args, expect in ((["--tool-result-media", "gemini*=inline"], "'parts' or 'siblings'"),
                         (["--stream-arguments", " "], "--stream-arguments pattern"),
                         (["--hosted-tools", "gemini-2.5*=ignore"], "'drop' or 'error'")):
        proc = subprocess.run([sys.executable, "-m", "proxy", "serve", "--upstream", "mock", "--port", "0", *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=30)
        assert proc.returncode != 0 and expect in proc.stderr
    from proxy.model_rules import ModelRules
    rules = ModelRules.parse(["gemini-2.5-pro=parts"], ["gemini-3*"])
    assert rules.result_parts("gemini-2.5-pro") and not rules.result_parts("gemini-2.5-flash")
    assert rules.streams_arguments("gemini-3-pro-preview") and not rules.streams_arguments("gemini-2.5-pro")
    assert ModelRules.parse(hosted_tools=["gemini-2.5*=error", "drop"]).hosted_tools == [("gemini-2.5*", "error"),
                                                                                          ("*", "drop")]


def test_serve_routes_a_model_to_a_local_server_in_a_dialect() -> None:
    """Issue 10's options as a user runs them: the standalone local mock, and serve pointed at it."""
    local_port, port = free_port(), free_port()
    local = start(["mock", "--openai", "--port", str(local_port)])
    proc = None
    try:
        assert "mock OpenAI-compatible server ready" in local.stdout.readline()
        proc = start(["serve", "--port", str(port), "--upstream", "mock",
                      "--openai-upstream", f"qwen*=http://127.0.0.1:{local_port}/v1", "--tool-mode", "qwen*=hermes",
                      "--two-pass", "qwen3-*-think=16"])
        assert "ready on http://127.0.0.1:" in proc.stdout.readline()
        c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="demo", _strict_response_validation=True)
        tools = [{"type": "function", "name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
        r = c.responses.create(model="qwen3-8b-think", input="get_weather city=Bern", tools=tools)
        assert [o.type for o in r.output] == ["reasoning", "function_call"]
        assert json.loads(r.output[1].arguments) == {"city": "Bern"}
    finally:
        for p in (proc, local):
            if p is not None:
                p.send_signal(signal.SIGTERM)
                assert p.wait(10) == 0


def test_text_dialect_options_are_checked_at_start() -> None:
    for args, expect in ((["--tool-mode", "gemma*=klingon"], "--tool-mode must be"),
                         (["--rescue-text-calls", "x=nope"], "--rescue-text-calls must be"),
                         (["--openai-upstream", "qwen*=ftp://x"], "--openai-upstream must be"),
                         (["--two-pass", "qwen*=many"], "--two-pass must be"),
                         (["--upstream-api", "gemini-3*=responses"], "--upstream-api must be"),
                         (["--single-call", " "], "--single-call pattern")):
        proc = subprocess.run([sys.executable, "-m", "proxy", "serve", "--upstream", "mock", "--port", "0", *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=30)
        assert proc.returncode != 0 and expect in proc.stderr, proc.stderr


@pytest.mark.parametrize("command", ["serve", "mitm", "mock", "parse", "ca", "carrier-key"])
def test_global_options_also_after_the_subcommand(command: str) -> None:
    """Users write `serve --log-format json`; after the subcommand the options work as before it, and a
    value after the subcommand wins over one before it."""
    from proxy.cli import _parser

    extra = ["--dialect", "hermes"] if command == "parse" else []
    after = _parser().parse_args([command, *extra, "--log-format", "json", "--log-level", "DEBUG",
                                  "--event-loop", "asyncio"])
    assert (after.log_format, after.log_level, after.event_loop) == ("json", "DEBUG", "asyncio")
    before = _parser().parse_args(["--log-format", "json", "--log-level", "DEBUG", command, *extra])
    assert (before.log_format, before.log_level, before.event_loop) == ("json", "DEBUG", "auto")
    both = _parser().parse_args(["--log-level", "DEBUG", command, *extra, "--log-level", "ERROR"])
    assert both.log_level == "ERROR" and both.log_format == "text"


def test_serve_logs_json_when_asked_after_the_subcommand() -> None:
    port = free_port()
    proc = start(["serve", "--log-format", "json", "--port", str(port), "--upstream", "mock"])
    try:
        assert "ready on http://127.0.0.1:" in proc.stdout.readline()
        c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="demo", max_retries=0)
        c.responses.create(model="gemini-2.5-flash", input="hi")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert lines and all(isinstance(x, dict) and "message" in x for x in lines)
