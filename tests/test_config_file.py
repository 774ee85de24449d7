"""Issue 12 item 3: `--config FILE` (TOML) holds every option of `serve`, flags override it, and a bad
key or value stops the start with a message naming it; the addon reads the same file (`gtp_config`)."""

import argparse
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons

from proxy import cli, options
from proxy.intercept.addon import GeminiTools
from proxy.store import MemoryStore
from proxy.upstream.gemini.client import DEFAULT_READ_TIMEOUT
from tests.servers import Process

KEY = "client-secret-0123456789"
SKIP = {"help", "config", "command", "commands", "log_level", "log_format", "event_loop"}  # globals: set below


def _sample(action: argparse.Action) -> tuple[object, list[str]]:
    """A value for the option, as TOML would hold it and as command-line words."""
    flag = next(s for s in action.option_strings if s.startswith("--"))
    if isinstance(action, argparse._StoreTrueAction):
        return True, [flag]
    if action.choices:
        value = list(action.choices)[-1]
    elif action.type in (int, options.count, options.port):
        value = 7
    elif action.type in (options.seconds, options.wait_seconds):
        value = 2.5
    elif action.type is options.size:
        value = "64M"
    else:
        value = "gemini-x=gemini-2.5-pro" if isinstance(action, argparse._AppendAction) else "some-value"
    if isinstance(action, argparse._AppendAction):
        return [value, value], [flag, str(value), flag, str(value)]
    return value, [flag, str(value)]


def _toml(key: str, value: object) -> str:
    def one(v: object) -> str:
        return ("true" if v else "false") if isinstance(v, bool) else f'"{v}"' if isinstance(v, str) else str(v)
    return f"{key} = [{', '.join(one(v) for v in value)}]" if isinstance(value, list) else f"{key} = {one(value)}"


def _parse(argv: list[str]) -> dict:
    parser = cli._parser()
    args = parser.parse_args(argv)
    cli._apply_config(args, parser, argv)
    return {k: v for k, v in vars(args).items() if k not in SKIP}


def test_every_serve_option_round_trips(tmp_path: Path) -> None:
    parser = cli._parser()
    serve = parser._subparsers._group_actions[0].choices["serve"]
    lines, flags = [], []
    for i, action in enumerate(a for a in serve._actions if a.option_strings and a.dest not in SKIP):
        value, words = _sample(action)
        key = next(s for s in action.option_strings if s.startswith("--"))[2:]
        lines.append(_toml(key.replace("-", "_") if i % 2 else key, value))  # both spellings
        flags += words
    (tmp_path / "all.toml").write_text("\n".join([*lines, 'log_level = "DEBUG"', 'log_format = "json"']))
    from_file = _parse(["serve", "--config", str(tmp_path / "all.toml")])
    from_flags = _parse(["--log-level", "DEBUG", "--log-format", "json", "serve", *flags])
    assert from_file == from_flags
    assert from_file["model_alias"] == ["gemini-x=gemini-2.5-pro"] * 2 and from_file["store_max_bytes"] == 64 << 20


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('port = 1111\nmodel_alias = ["a=gemini-2.5-pro"]\nstore = "redis://127.0.0.1:6379/0"\n'
                   'fill_missing_required = true\n')
    args = _parse(["serve", "--config", str(cfg), "--port", "2222", "--model-alias", "b=gemini-2.5-flash"])
    assert args["port"] == 2222 and args["model_alias"] == ["b=gemini-2.5-flash"], "a flag replaces the array"
    assert args["store"] == "redis://127.0.0.1:6379/0" and args["fill_missing_required"] is True


@pytest.mark.parametrize(("text", "message"), [
    ('modle_alias = ["a=b"]', "unknown option 'modle_alias' (did you mean 'model_alias'?)"),
    ('model_alias = "a=b"', "'model_alias' is repeatable: give an array"),
    ('port = "eighty"', "'port'"),
    ("fill_missing_required = 1", "'fill_missing_required' must be true or false"),
    ('forced_choice = "sometimes"', "'forced_choice' must be one of retry, error, allow"),
    ("read_timeout = -1", "'read_timeout': must be a positive, finite number"),
    ("port = [", "not valid TOML"),
])
def test_a_bad_file_is_a_start_up_error_naming_the_key(tmp_path: Path, text: str, message: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text + "\n")
    with pytest.raises(SystemExit) as e:
        _parse(["serve", "--config", str(cfg)])
    said = capsys.readouterr().err
    assert e.value.code == 2 and message in said and str(cfg) in said, said


def test_serve_runs_from_a_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "gtp.toml"
    cfg.write_text(f'port = 0\nupstream = "mock"\nmodel_alias = ["gpt-5.5=gemini-2.5-pro"]\n'
                   f'api_key = ["{KEY}"]\ngemini_key = ["server-key-1"]\ntool_mode = ["gemma-4*=gemma4"]\n'
                   'max_retries = 0\n')  # port 0: the port it got is read from its ready line
    proc = Process(tmp_path, "serve", [sys.executable, "-m", "proxy", "serve", "--config", str(cfg)], "ready")
    try:
        url = proc.url()
        client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0, _strict_response_validation=True)
        r = client.responses.create(model="gpt-5.5", input="hello")
        assert r.model == "gpt-5.5" and r.output_text
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0).models.list()
    finally:
        proc.stop()
    cfg.write_text('port = 1\nupstrem = "mock"\n')
    bad = subprocess.run([sys.executable, "-m", "proxy", "serve", "--config", str(cfg)], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode != 0 and "unknown option 'upstrem' (did you mean 'upstream'?)" in bad.stderr


async def test_the_addon_reads_the_same_file(tmp_path: Path) -> None:
    cfg = tmp_path / "addon.toml"
    cfg.write_text('model_alias = ["gpt-5.5=gemini-2.5-pro"]\ntools = "replace"\nstore = "memory"\n'
                   'gtp_default_session = "work"\nport = -1\nread_timeout = 30\n')
    addon = GeminiTools(MemoryStore())
    with taddons.context(addon) as tctx:
        tctx.configure(addon, listen_host="127.0.0.1", gtp_tools="merge")  # set on the command line: wins
        tctx.configure(addon, gtp_config=str(cfg))
        opts = tctx.options
        assert addon.options.aliases == {"gpt-5.5": "gemini-2.5-pro"}
        assert opts.gtp_default_session == "work" and opts.gtp_frontend_port == -1 and opts.gtp_read_timeout == 30
        assert opts.gtp_tools == "merge"
        cfg.write_text('tool_modes = ["x=y"]\n')
        with pytest.raises(exceptions.OptionsError, match="unknown option 'tool_modes' \\(did you mean 'tool_mode'"):
            tctx.configure(addon, gtp_config=str(cfg))


async def test_the_addon_takes_the_background_lease(tmp_path: Path) -> None:
    """`serve --mitm --background-lease` passes it on as gtp_background_lease; it reaches the limits."""
    addon = GeminiTools(MemoryStore())
    with taddons.context(addon) as tctx:
        tctx.configure(addon, listen_host="127.0.0.1", gtp_background_lease=7)
        assert addon.options.limits().background_lease == 7
        with pytest.raises(exceptions.OptionsError, match="gtp_background_lease: must be a positive"):
            tctx.configure(addon, gtp_background_lease=0)


async def test_the_command_line_beats_the_file_even_at_the_default(tmp_path: Path) -> None:
    """`--set gtp_tools=replace` equals the default, yet it was given: the file's `merge` must not win.
    mitmdump defers `--set` of an addon's options until the addon declares them; the addon is added
    after them here, the same way."""
    cfg = tmp_path / "addon.toml"
    cfg.write_text('tools = "merge"\ndefault_session = "from-file"\nread_timeout = 30\n')
    addon = GeminiTools(MemoryStore())
    with taddons.context() as tctx:
        tctx.options.set("gtp_tools=replace", f"gtp_read_timeout={int(DEFAULT_READ_TIMEOUT)}", "listen_host=127.0.0.1",
                         defer=True)
        tctx.master.addons.add(addon)
        tctx.configure(addon, gtp_config=str(cfg))
        assert tctx.options.gtp_tools == "replace"
        assert tctx.options.gtp_read_timeout == DEFAULT_READ_TIMEOUT
        assert tctx.options.gtp_default_session == "from-file", "what the command line left, the file fills"


def test_every_option_is_declared_once() -> None:
    """serve's command line, mitm's and the addon's options all come from proxy/options.py's table: the
    same names, kinds and help on every side, and no option is declared anywhere else (mitm's own four,
    listen-host, listen-port, confdir and mode, are mitmproxy's, passed to it)."""
    from pathlib import Path

    from mitmproxy.options import Options as MitmOptions

    from proxy.intercept.options import _Collect

    parser = cli._parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    own = {"help", "config", "log-level", "log-format", "event-loop"}

    def flags(command: str) -> set[str]:
        return {s[2:] for a in commands[command]._actions for s in a.option_strings if s.startswith("--")} - own

    assert flags("serve") == {o.name for o in options.OPTIONS if o.serve}
    mitmproxy_own = {"listen-host", "listen-port", "confdir", "mode"}
    assert flags("mitm") - mitmproxy_own == {o.name for o in options.OPTIONS if o.mitm}
    loader = _Collect(MitmOptions())
    for addon in GeminiTools().parts:
        if hasattr(addon, "load"):
            addon.load(loader)
    assert set(loader.typespecs) == {o.addon_name for o in options.OPTIONS if o.addon_name}
    helps = {a.dest: a.help for a in commands["serve"]._actions}
    assert all(helps[o.dest] == o.help for o in options.OPTIONS if o.serve)
    root = Path(options.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        if path.name != "options.py" or path.parent != root:
            assert "loader.add_option(" not in text, f"{path} declares an addon option outside proxy/options.py"
        if path.name == "cli.py":  # other commands' own (mock's --host/--port, parse's --tools), and
            # --config, which takes the table's help (serve reads the file, mitm hands it to the addon)
            named = {o.name for o in options.OPTIONS if f'add_argument("--{o.name}"' in text}
            assert named <= {"host", "port", "tools", "config"}, f"cli.py declares {named} itself"
