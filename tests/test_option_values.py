"""Issue 63 item 4: one value path for options. Every row of proxy/options.py's table checks a value
through its own `parse` on the command line (argparse), in a config file (`serve`'s and the addon's
gtp_config) and in the addon's `configure`: the same raw value is the same value or the same error
on each. And `--help` loads only argparse and the table (no aiohttp, pydantic or mitmproxy)."""

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons

from proxy import cli, options
from proxy.config_file import ConfigError, addon_settings
from proxy.intercept.addon import GeminiTools
from proxy.intercept.options import option_kinds
from proxy.options import OPTIONS, OptionValueError
from proxy.store import MemoryStore

# good and bad raw values per kind, as a config file (TOML) holds them; the command line gets str()
SAMPLES: dict[str, tuple[list[Any], list[Any]]] = {
    "seconds": ([1, 2.5, 30, "7"], [0, -1, "soon", float("inf"), True]),
    "count": ([0, 7, "3"], [-1, 2.5, 4.0, "many", True]),
    "port": ([0, 8080, "9"], [65536, -2, "eighty", 7.5]),
    "bytes": ([1024, "64M", "2K"], [0, "lots", "-1M", 1.5]),
    "text": (["some-value"], [5, True, ["a"]]),
    "flag": ([True, False], [1, "yes"]),
    "list": ([["a=b", "c=d"], []], [["a", 5], "a=b"]),
}
CHECKED = {"route": (["127.0.0.1:9", "gemini.local:443", ""], ["nowhere", "host:port"])}  # "": unset


def _samples(o: options.Option) -> tuple[list[Any], list[Any]]:
    if o.choices:
        return list(o.choices), ["sometimes", 3]
    return CHECKED.get(o.name, SAMPLES[o.kind])


CASES = [pytest.param(o, raw, id=f"{o.name}={raw!r}") for o in OPTIONS for raw in sum(_samples(o), [])
         if o.name != "config"]


def _expect(fn: Any, raw: Any) -> tuple[str, Any]:
    try:
        return "value", fn(raw)
    except OptionValueError as e:
        return "error", e.reason


def _command(o: options.Option) -> str | None:
    return "serve" if o.serve else "mitm" if o.mitm else None


def _words(o: options.Option, raw: Any) -> list[str] | None:
    """The command-line words for a raw value, where words can say it."""
    if o.kind == "flag":
        return [f"--{o.name}"] if raw is True else None
    if o.kind == "list":
        return [w for v in raw for w in (f"--{o.name}", str(v))] if isinstance(raw, list) else None
    return None if isinstance(raw, (list, bool)) else [f"--{o.name}={raw}"]  # = : a word may start with -


def _outcome(call: Any, capsys: pytest.CaptureFixture[str]) -> tuple[str, Any]:
    try:
        return "value", call()
    except SystemExit as e:
        assert e.code == 2
        return "error", capsys.readouterr().err


def _same(got: tuple[str, Any], want: tuple[str, Any]) -> None:
    if want[0] == "error":
        assert got[0] == "error" and want[1] in got[1], (got, want)
    else:
        assert got == want


@pytest.mark.parametrize(("o", "raw"), CASES)
def test_the_command_line_takes_a_word_as_the_table_parses_it(o: options.Option, raw: Any,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    command, words = _command(o), _words(o, raw)
    if command is None or words is None:
        pytest.skip("not on the command line, or no words say this value")
    want = ("value", True) if o.kind == "flag" else _expect(o.parse, [str(v) for v in raw] if o.kind == "list"
                                                             else str(raw))
    parser = cli._parser()
    got = _outcome(lambda: getattr(parser.parse_args([command, *words]), o.dest), capsys)
    if want[0] == "value" and o.kind == "list":
        want = ("value", list(want[1]))
    _same(got, want)
    if o.kind in ("seconds", "count", "port") and not isinstance(raw, str):
        word, number = _expect(o.parse, str(raw)), _expect(o.parse, raw)
        assert word == number or word[0] == number[0] == "error", "a word parses as the number it says"


@pytest.mark.parametrize(("o", "raw"), CASES)
def test_serves_config_file_takes_a_value_as_the_table_parses_it(o: options.Option, raw: Any, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    if not o.serve:
        pytest.skip("not an option of serve")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"{o.dest} = {_toml(raw)}\n")
    parser = cli._parser()

    def read() -> Any:
        args = parser.parse_args(["serve", "--config", str(cfg)])
        cli._apply_config(args, parser, ["serve", "--config", str(cfg)])
        return getattr(args, o.dest)

    _same(_outcome(read, capsys), _expect(o.parse, raw))


@pytest.mark.parametrize(("o", "raw"), CASES)
def test_the_addons_config_file_takes_a_value_as_the_table_parses_it(o: options.Option, raw: Any,
                                                                     tmp_path: Path) -> None:
    if o.addon_name is None:
        pytest.skip("not an option of the addon")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"{o.dest} = {_toml(raw)}\n")
    kinds = option_kinds({r.addon_name: r.addon_typespec() for r in OPTIONS if r.addon_name})
    try:
        got: tuple[str, Any] = ("value", addon_settings(cfg, kinds)[o.addon_name])
    except ConfigError as e:
        got = ("error", str(e))
    _same(got, _expect(o.addon_parse, raw))


# The addon's options whose values the table checks beyond their type (mitmproxy checks the type):
# every raw value of the right type goes through configure.
def _addon_cases() -> list[Any]:
    out = []
    for o in OPTIONS:
        if o.addon_name is None or not (o.kind in ("seconds", "count", "port", "bytes") or o.choices or o.check):
            continue
        for raw in sum(_samples(o), []):
            typed = isinstance(raw, int) and not isinstance(raw, bool) if o.addon_typespec() is int \
                else isinstance(raw, str)
            if typed:
                out.append(pytest.param(o, raw, id=f"{o.addon_name}={raw!r}"))
    return out


@pytest.mark.parametrize(("o", "raw"), _addon_cases())
async def test_the_addons_configure_checks_a_value_as_the_table_parses_it(o: options.Option, raw: Any) -> None:
    want = _expect(o.addon_parse, raw)
    addon = GeminiTools(MemoryStore())
    with taddons.context(addon) as tctx:
        tctx.configure(addon, listen_host="127.0.0.1")
        try:
            tctx.configure(addon, **{o.addon_name: raw})
            got: tuple[str, Any] = ("value", getattr(tctx.options, o.addon_name))
        except exceptions.OptionsError as e:
            got = ("error", str(e))
    _same(got, want)
    if want[0] == "error":
        assert got[1].startswith(o.addon_name), got[1]


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return f"[{', '.join(_toml(v) for v in value)}]"
    return "inf" if value == math.inf else repr(value)


def test_fractional_seconds_stay_on_serve_and_round_up_on_the_addon(tmp_path: Path) -> None:
    """A config file's `read_timeout = 1.5`: 1.5 on serve; the addon's whole seconds round it up to 2,
    never down to a shorter timeout (it was truncated to 1)."""
    cfg = tmp_path / "c.toml"
    cfg.write_text("read_timeout = 1.5\nclient_timeout = 0.2\n")
    parser = cli._parser()
    args = parser.parse_args(["serve", "--config", str(cfg)])
    cli._apply_config(args, parser, ["serve", "--config", str(cfg)])
    assert args.read_timeout == 1.5 and args.client_timeout == 0.2
    kinds = option_kinds({r.addon_name: r.addon_typespec() for r in OPTIONS if r.addon_name})
    assert addon_settings(cfg, kinds) == {"gtp_read_timeout": 2, "gtp_client_timeout": 1}


def test_help_loads_neither_aiohttp_nor_pydantic_nor_mitmproxy() -> None:
    """`python -X importtime -m proxy --help` (and `serve --help`): the modules it imports, by name."""
    for argv in (["--help"], ["serve", "--help"], ["mitm", "--help"]):
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "proxy", *argv], capture_output=True,
                              text=True, timeout=60, check=True)
        assert "usage: gemini-tool-proxy" in done.stdout
        names = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                 if line.startswith("import time:") and line.count("|") == 2}
        assert "proxy.options" in names, "the importtime output was read"
        heavy = {n for n in names if n.split(".")[0] in ("aiohttp", "pydantic", "mitmproxy")}
        assert not heavy, sorted(heavy)


def test_the_dialect_names_are_the_dialects() -> None:
    """proxy/defaults.py names the dialects for the help texts without importing them."""
    from proxy.defaults import DIALECT_NAMES
    from proxy.dialects import DIALECTS

    assert tuple(DIALECTS) == DIALECT_NAMES


def test_a_rows_own_parser_or_check_fails_as_one_option_error() -> None:
    """A row's `type` or `check` raising ValueError or argparse's error is the option's error all the same
    (so a config file names the key rather than showing a traceback)."""
    import argparse

    def word(text: str) -> str:
        raise argparse.ArgumentTypeError(f"must be a word, not {text}")

    def check(value: str) -> None:
        raise ValueError("must be short")

    for row in (options.Option("x", "text", None, "h", type=word), options.Option("x", "text", None, "h", check=check)):
        with pytest.raises(OptionValueError) as e:
            row.parse("long")
        assert e.value.named("'x'").startswith("'x': must be")
