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

from proxy.model_rules import ModelRules

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
    proc = subprocess.run([sys.executable, "-m", "proxy", "serve", "--upstream", "mock", "--port", "0",
                           "--tool-result-media", "gemini*=inline"], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 2 and "'parts' or 'siblings'" in proc.stderr
    for args, expect in ((["--stream-arguments", " "], "--stream-arguments pattern"),  # the same parser
                         (["--hosted-tools", "gemini-2.5*=ignore"], "'drop' or 'error'")):
        from proxy.cli import _parser

        parsed = _parser().parse_args(["serve", *args])
        with pytest.raises(ValueError) as e:
            ModelRules.parse(parsed.tool_result_media, parsed.stream_arguments, parsed.hosted_tools)
        assert expect in str(e.value)
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
    """One real start shows a bad value stops it; the others go through the same parsers, called by
    `serve` before it listens (read here directly: a process per value cost 2 s each)."""
    from proxy.cli import _parser, _upstream

    proc = subprocess.run([sys.executable, "-m", "proxy", "serve", "--upstream", "mock", "--port", "0",
                           "--tool-mode", "gemma*=klingon"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "--tool-mode must be" in proc.stderr, proc.stderr
    for args, expect in ((["--rescue-text-calls", "x=nope"], "--rescue-text-calls must be"),
                         (["--single-call", " "], "--single-call pattern"),
                         (["--openai-upstream", "qwen*=ftp://x"], "--openai-upstream must be"),
                         (["--two-pass", "qwen*=many"], "--two-pass must be"),
                         (["--upstream-api", "gemini-3*=responses"], "--upstream-api must be")):
        parsed = _parser().parse_args(["serve", *args])
        with pytest.raises(ValueError) as e:
            ModelRules.parse(parsed.tool_result_media, parsed.stream_arguments, parsed.hosted_tools,
                             parsed.tool_mode, parsed.rescue_text_calls, parsed.single_call, parsed.think_open)
            _upstream(parsed, "http://127.0.0.1:9")
        assert expect in str(e.value), (args, e.value)


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


def _refused(args: list[str], *, timeout: float = 30) -> str:
    """Run the command; it must exit 2 before listening, with one line naming what is wrong."""
    proc = subprocess.run([sys.executable, "-m", "proxy", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "ready on" not in proc.stdout, proc.stderr[-2000:]
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(("args", "names"), [
    (["serve", "--port", "70000"], "--port"),
    (["serve", "--port", "-1"], "--port"),
    (["mitm", "--listen-port", "70000"], "--listen-port"),
    (["mitm", "--port", "99999"], "--port"),
    (["mock", "--port", "65536"], "--port"),
    (["serve", "--client-timeout", "inf"], "--client-timeout"),
    (["serve", "--read-timeout", "nan"], "--read-timeout"),
    (["mitm", "--client-timeout", "infinity"], "--client-timeout"),
])
def test_option_values_that_can_never_work_are_one_line_and_exit_2(args: list[str], names: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Checked by the parser itself (in this process: the same code path as a real start)."""
    from proxy.cli import main

    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert names in line and "error" in line


def test_a_store_url_that_can_never_work_is_one_line_and_exit_2() -> None:
    """The URL is read before anything listens (one real start shows the exit; mitm's `--store` goes
    through the same check, tested below with a live Redis)."""
    from proxy.store.open_store import check_store_url

    assert "--store" in _refused(["serve", "--store", "redis://127.0.0.1:6379/abc"])
    for url, says in (("redis://127.0.0.1:6379/abc", "must be a number"), ("redis://127.0.0.1:notaport/0", "port"),
                      ("redis://u:s3cret@127.0.0.1:6379/x", "***@127.0.0.1"), ("unix://", "no socket path"),
                      ("unix:///", "no socket path")):
        with pytest.raises(ValueError) as e:
            check_store_url(url)
        assert says in str(e.value) and "s3cret" not in str(e.value)
    # Issue 57 item 10: `unix://` with no path started (and could never reach a store); now it stops.
    assert "--store" in _refused(["serve", "--store", "unix://"])
    assert check_store_url("unix:///run/redis/redis.sock")


def test_a_store_that_answers_it_will_never_work_stops_the_start(tmp_path: Path) -> None:
    """A Redis database index out of range (`/99999`) and a wrong password start, then answer 503
    forever: refused before listening. A Redis that is merely down is a warning, and /readyz says so."""
    from tests.servers import RedisServer

    redis = RedisServer(tmp_path)
    try:
        base = redis.url.rsplit("/", 1)[0]
        line = _refused(["serve", "--store", f"{base}/99999"])
        assert "--store" in line and "DB index is out of range" in line
        line = _refused(["serve", "--store", base.replace("redis://", "redis://user:s3cret@") + "/0"])
        assert "--store" in line and "s3cret" not in line, "a password is never printed"
    finally:
        redis.stop()
    port = free_port()
    proc = start(["serve", "--port", str(port), "--upstream", "mock", "--store", f"{base}/0"])
    try:
        assert "ready on" in proc.stdout.readline()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz") as r:
            assert json.load(r) == {"status": "ok"}
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz")
        assert e.value.code == 503 and json.load(e.value)["status"] == "unavailable"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


def test_readyz_is_ready_with_a_memory_store_and_needs_no_key() -> None:
    port = free_port()
    proc = start(["serve", "--port", str(port), "--upstream", "mock", "--api-key", "k" * 20])
    try:
        assert "ready on" in proc.stdout.readline()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz") as r:
            body = json.load(r)
        assert body["status"] == "ready" and body["store"] == "ok", body
        assert body["upstream_connections"]["waiting"] == 0 and body["upstream_connections"]["size"] > 0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


def test_port_0_listens_on_a_free_port_and_says_which() -> None:
    proc = start(["serve", "--port", "0", "--upstream", "mock"])
    try:
        line = proc.stdout.readline()
        port = int(line.rsplit(":", 1)[1])
        assert port > 0
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz") as r:
            assert json.load(r) == {"status": "ok"}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


def test_a_config_file_that_is_not_toml_or_names_an_unknown_option_is_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "bin.toml"
    binary.write_bytes(bytes(range(256)) * 4)
    assert "not valid TOML" in _refused(["serve", "--config", str(binary)])
    typo = tmp_path / "typo.toml"
    typo.write_text('upstrem = "x"\n')
    # mitm reads it as its addon will (the same loader: a binary file fails there the same way).
    assert "unknown option 'upstrem'" in _refused(["mitm", "--config", str(typo)])


@pytest.mark.parametrize("args", [["ca", "--dir"], ["mitm", "--confdir"]])
def test_a_certs_directory_that_cannot_be_written_is_one_line(tmp_path: Path, args: list[str]) -> None:
    """Where the CA cannot be written (here: under a file, which fails for root too; a read-only
    directory fails the same way for other users)."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    line = _refused([*args, str(blocker / "certs")])
    assert args[1] in line and "cannot write the CA" in line


def _mitmdump_argv(argv: list[str]) -> list[str]:
    """What `gemini-tool-proxy <argv>` (a mitm command line) runs mitmdump with."""
    import proxy.cli as cli
    from proxy.cli import _mitm, _parser
    from proxy.config_file import given_options

    seen: list[list[str]] = []
    real, cli._run_mitmdump = cli._run_mitmdump, seen.append
    try:
        args = _parser().parse_args(argv)
        _mitm(args, given_options(args.commands["mitm"], argv[1:]))
    finally:
        cli._run_mitmdump = real
    [cmd] = seen
    return cmd


def test_mitm_takes_what_its_config_file_sets_unless_the_command_line_says_otherwise(tmp_path: Path) -> None:
    """`mitm --config` used to pass every option's default to the addon as if typed, so the file lost."""
    conf = tmp_path / "m.toml"
    conf.write_text(f'port = {free_port()}\nupstream = "http://127.0.0.1:1"\n')
    cmd = _mitmdump_argv(["mitm", "--config", str(conf), "--confdir", str(tmp_path / "c"), "--upstream",
                          "http://127.0.0.1:2"])
    sets = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--set"]
    assert "gtp_upstream=http://127.0.0.1:2" in sets, "typed on the command line: it wins"
    assert not any(s.startswith("gtp_frontend_port=") for s in sets), "set by the file, not typed: the file's"
    assert f"gtp_config={conf}" in sets and "gtp_store=memory" in sets


def test_mitm_mode_is_its_own_option_passed_to_mitmproxy(tmp_path: Path) -> None:
    """`mitm --mode transparent` died: argparse read `--mode` as a prefix of `--model-alias`. It is an
    option of its own now, checked by mitmproxy's parser and passed to mitmdump, and `mitm` takes no
    abbreviations."""
    cmd = _mitmdump_argv(["mitm", "--confdir", str(tmp_path / "c"), "--mode", "transparent", "--mode",
                          "wireguard@51821", "--model-alias", "a=gemini-2.5-flash"])
    modes = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--mode"]
    assert modes == ["transparent", "wireguard@51821"], cmd
    assert "gtp_model_aliases=a=gemini-2.5-flash" in [cmd[i + 1] for i, a in enumerate(cmd) if a == "--set"]
    for bad in (["--mode", "nonsense"], ["--mod", "transparent"]):
        proc = subprocess.run([sys.executable, "-m", "proxy", "mitm", *bad], cwd=ROOT, capture_output=True,
                              text=True, timeout=30)
        assert proc.returncode == 2 and ("not a mitmproxy mode" in proc.stderr or "--mod" in proc.stderr.splitlines()[
            -1]), proc.stderr
