"""The README's command synopsis, rendered from the CLI's own parser (proxy/cli.py), so it is complete.

    .venv/bin/python scripts/readme_synopsis.py           # print it
    .venv/bin/python scripts/readme_synopsis.py --write   # rewrite the README's block with it

tests/test_snippets.py checks that the block between the README's synopsis markers equals `render()`.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from proxy.cli import _parser  # noqa: E402

README = ROOT / "README.md"
BEGIN = "<!-- synopsis: generated from proxy/cli.py by scripts/readme_synopsis.py --write; do not edit -->"
END = "<!-- /synopsis -->"
BLOCK = re.compile(re.escape(BEGIN) + r"\n```text\n(.*?)```\n" + re.escape(END), re.S)


def render() -> str:
    """`gemini-tool-proxy`'s global usage, then one line per subcommand with its help."""
    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.metavar = "COMMAND"
    wide = argparse.HelpFormatter(parser.prog, width=10_000)
    actions = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    wide.add_usage(None, actions, [], prefix="")
    lines = [wide.format_help().strip()]
    width = max(len(c.dest) for c in sub._choices_actions)
    lines += [f"  {parser.prog} {c.dest.ljust(width)}  {c.help}" for c in sub._choices_actions]
    return "\n".join(lines) + "\n"


def readme_block(text: str) -> str | None:
    m = BLOCK.search(text)
    return m.group(1) if m else None


def main() -> None:
    if sys.argv[1:] == ["--write"]:
        text = README.read_text()
        if readme_block(text) is None:
            raise SystemExit(f"README.md has no synopsis block ({BEGIN} ... {END})")
        README.write_text(BLOCK.sub(lambda _: f"{BEGIN}\n```text\n{render()}```\n{END}", text))
    else:
        sys.stdout.write(render())


if __name__ == "__main__":
    main()
