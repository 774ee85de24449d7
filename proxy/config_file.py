"""`--config FILE` (TOML): every command-line option of `serve` / `mitm`, and `gtp_config` for the addon.

Keys are the long option names without the leading dashes (`model-alias` or `model_alias`);
repeatable options take arrays (`model_alias = ["gpt-5.5=gemini-2.5-pro"]`), switches booleans.
Flags given on the command line win over the file (a repeatable flag replaces the file's array).
Everything is checked at start: an unknown key, a wrong type or a bad value is an error naming the
key and the file, never ignored.
"""

import argparse
import difflib
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    pass


def load_toml(path: str | Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not valid TOML: it is not UTF-8 text") from None


def _name(key: str) -> str:
    return key.replace("_", "-")


def _unknown(path: str | Path, key: str, known: Iterable[str]) -> ConfigError:
    close = difflib.get_close_matches(_name(key), list(known), n=1)
    hint = f" (did you mean '{close[0].replace('-', '_')}'?)" if close else ""
    return ConfigError(f"{path}: unknown option '{key}'{hint}")


def _options(parsers: Iterable[argparse.ArgumentParser]) -> dict[str, argparse.Action]:
    """Long option name (without dashes) -> its action, for every option a file may set."""
    out: dict[str, argparse.Action] = {}
    for parser in parsers:
        for action in parser._actions:  # argparse keeps no public list of a parser's options
            longs = [s[2:] for s in action.option_strings if s.startswith("--")]
            if longs and not isinstance(action, argparse._HelpAction) and action.dest != "config":
                out[longs[0]] = action
    return out


def _convert(path: str | Path, key: str, action: argparse.Action, value: Any) -> Any:
    """The value through the option's row of the table (its parse, as the command line's words go),
    or, for the few options the table does not hold (log_level, ...), through argparse's action."""
    from proxy.options import BY_NAME, OptionValueError

    where = f"{path}: '{key}'"
    row = BY_NAME.get(_name(key))
    if row is not None and row.dest == action.dest:
        if row.kind == "list" and not isinstance(value, list):
            raise ConfigError(f"{where} is repeatable: give an array, e.g. {key} = [{_toml(value)}]")
        try:
            return row.parse(value)
        except OptionValueError as e:
            raise ConfigError(e.named(where)) from None
    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, not {value!r}")
        return value
    if isinstance(action, argparse._AppendAction):
        values = value if isinstance(value, list) else None
        if values is None:
            raise ConfigError(f"{where} is repeatable: give an array, e.g. {key} = [{_toml(value)}]")
        return [_scalar(where, action, v) for v in values]
    return _scalar(where, action, value)


def _toml(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _scalar(where: str, action: argparse.Action, value: Any) -> Any:
    if isinstance(value, (dict, list)) or isinstance(value, bool) and action.type is not None:
        raise ConfigError(f"{where} must be a single value, not {value!r}")
    text = str(value)
    try:
        converted = action.type(text) if callable(action.type) else text
    except (argparse.ArgumentTypeError, ValueError) as e:
        raise ConfigError(f"{where}: {e}") from None
    if action.choices is not None and converted not in action.choices:
        raise ConfigError(f"{where} must be one of {', '.join(map(str, action.choices))}, not {value!r}")
    return converted


def given_options(parser: argparse.ArgumentParser, argv: list[str]) -> set[str]:
    """The option dests named on the command line (parsed again with every default None)."""
    saved = {a.dest: a.default for a in parser._actions}
    for action in parser._actions:
        action.default = None
    try:
        ns, _ = parser.parse_known_args(argv)
    finally:
        for action in parser._actions:
            action.default = saved[action.dest]
    return {dest for dest, value in vars(ns).items() if value is not None}


def _named(parser: argparse.ArgumentParser, argv: list[str]) -> set[str]:
    """The dests of `parser`'s own options that `argv` names (the words before the subcommand)."""
    words = {w.split("=", 1)[0] for w in argv if w.startswith("-")}
    return {a.dest for a in parser._actions if words & set(a.option_strings)}


def apply_config(args: argparse.Namespace, path: str | Path, command: argparse.ArgumentParser,
                 main: argparse.ArgumentParser, command_argv: list[str], main_argv: list[str]) -> dict[str, Any]:
    """Fill `args` from the file for every option the command line did not give; returns what it set."""
    table = load_toml(path)
    options = {**_options([main]), **_options([command])}
    given = given_options(command, command_argv) | _named(main, main_argv)
    applied: dict[str, Any] = {}
    for key, value in table.items():
        action = options.get(_name(key))
        if action is None:
            raise _unknown(path, key, options)
        converted = _convert(path, key, action, value)
        if action.dest not in given:
            setattr(args, action.dest, converted)
            applied[action.dest] = converted
    return applied


def addon_settings(path: str | Path, option_types: dict[str, Any]) -> dict[str, Any]:
    """The addon's `gtp_*` values from a config file: keys by the command line's names (`model_alias`)
    or the addon's own (`gtp_model_aliases`); an option the addon lacks is an error naming it."""
    from proxy.options import BY_ADDON_NAME, OptionValueError, addon_names

    renamed = addon_names()
    out: dict[str, Any] = {}
    for key, value in load_toml(path).items():
        name = _name(key)
        option = key if key in option_types else renamed.get(name) or "gtp_" + name.replace("-", "_")
        if option not in option_types or option == "gtp_config":
            raise _unknown(path, key, [n.removeprefix("gtp_").replace("_", "-") for n in option_types])
        row = BY_ADDON_NAME.get(option)
        if row is not None:  # the table's: its parse, as the command line and `serve`'s file
            try:
                out[option] = row.addon_parse(value)
            except OptionValueError as e:
                raise ConfigError(e.named(f"{path}: '{key}'")) from None
            continue
        kind = option_types[option]
        if kind is bool and not isinstance(value, bool):
            raise ConfigError(f"{path}: '{key}' must be true or false, not {value!r}")
        if kind is int and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ConfigError(f"{path}: '{key}' must be a number, not {value!r}")
        if kind == "sequence":
            if not isinstance(value, list):
                raise ConfigError(f"{path}: '{key}' is repeatable: give an array")
            value = [str(v) for v in value]
        elif kind is str and not isinstance(value, str):
            raise ConfigError(f"{path}: '{key}' must be a string, not {value!r}")
        out[option] = int(value) if kind is int else value
    return out
