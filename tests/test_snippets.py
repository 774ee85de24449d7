"""Every snippet the README and the docs mark runnable runs as pasted and prints what the page says.

A fenced block (```python, ```sh or ```console) right after the line `<!-- snippet: run -->` is run, in
page order, against `gemini-tool-proxy serve --upstream mock` on http://127.0.0.1:8741 (the port the
pages use; started here, hence `serial`: no other test may hold it), with the project's venv first on
PATH; `<!-- snippet: run, expect: TEXT -->` also asserts that its output contains TEXT. python blocks
run with the venv's python in a temporary directory, sh blocks with `bash -e` in the checkout, console
blocks are their `$ ` lines (with `\\` continuations), run the same way. A snippet starts a server of
its own only where its page says so (the README's MITM demo). Also here: the README's command synopsis
is the one scripts/readme_synopsis.py renders from the CLI's parser, and its opening names every way in.
"""

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PORT = 8741
MARK = re.compile(r"^<!-- snippet: run(?:, expect: (?P<expect>.*?))? -->\s*$")
FENCE = re.compile(r"^(?P<fence>`{3,})(?P<lang>[\w-]*)\s*$")
LANGS = ("python", "sh", "console")
TIMEOUT = 120


@dataclass
class Snippet:
    page: str
    line: int             # the marker's line, 1-based
    lang: str
    code: str
    expect: str | None
    problem: str | None = None  # a marker the harness cannot run (reported as that case's failure)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def extract(path: Path) -> list[Snippet]:
    """The marked blocks of one page, in order."""
    page, lines, found = str(path.relative_to(ROOT)), path.read_text().splitlines(), []
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        opening = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if not opening or opening["lang"] not in LANGS:
            found.append(Snippet(page, i + 1, "", "", None,
                                 "the marker is not followed by a ```python, ```sh or ```console block"))
            continue
        end = next((j for j in range(i + 2, len(lines)) if lines[j].strip() == opening["fence"]), None)
        if end is None:
            found.append(Snippet(page, i + 1, "", "", None, "the block is never closed"))
            continue
        found.append(Snippet(page, i + 1, opening["lang"], "\n".join(lines[i + 2:end]) + "\n", m["expect"]))
    return found


def console_commands(code: str) -> str:
    """A console block's commands: its `$ ` lines, each with the lines its trailing `\\` continues."""
    commands, continuing = [], False
    for line in code.splitlines():
        if continuing:
            commands[-1] += "\n" + line
        elif line.startswith("$ "):
            commands.append(line[2:])
        else:
            continue
        continuing = line.endswith("\\")
    return "\n".join(commands) + "\n"


SNIPPETS = [s for p in pages() for s in extract(p)]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def mock_proxy(tmp_path_factory: pytest.TempPathFactory):
    """`gemini-tool-proxy serve --upstream mock` on the pages' port, as the README starts it."""
    healthz = f"http://127.0.0.1:{PORT}/healthz"
    if _answers(healthz):
        pytest.fail(f"something already serves 127.0.0.1:{PORT}: the snippets need that port (stop it)")
    log = (tmp_path_factory.mktemp("snippets") / "serve.log").open("wb")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "gemini-tool-proxy"), "serve", "--upstream", "mock",
                             "--port", str(PORT)], stdout=log, stderr=subprocess.STDOUT, env=_env(),
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while not _answers(healthz):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"gemini-tool-proxy serve did not answer {healthz}: {Path(log.name).read_text()}")
        time.sleep(0.1)
    yield
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


@pytest.mark.serial  # holds port 8741 (and the MITM demo 8080): run alone (scripts/test.sh)
@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.id for s in SNIPPETS])
def test_the_snippet_runs_as_pasted(snippet: Snippet, mock_proxy: None, tmp_path: Path) -> None:
    assert snippet.problem is None, f"{snippet.id}: {snippet.problem}"
    if snippet.lang == "python":
        script = tmp_path / "snippet.py"
        script.write_text(snippet.code)
        args, cwd = [sys.executable, str(script)], tmp_path
    else:
        script = tmp_path / "snippet.sh"
        script.write_text(console_commands(snippet.code) if snippet.lang == "console" else snippet.code)
        args, cwd = ["bash", "-e", str(script)], ROOT
    try:
        done = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{snippet.id} did not finish in {TIMEOUT} s; output so far: {e.stdout!r} {e.stderr!r}")
    said = f"{snippet.id} ({snippet.lang}) printed:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"exit status {done.returncode}; {said}"
    if snippet.expect is not None:
        assert snippet.expect in done.stdout, f"expected {snippet.expect!r}; {said}"


def test_the_pages_have_runnable_snippets() -> None:
    assert sum(s.page == "README.md" for s in SNIPPETS) >= 5, [s.id for s in SNIPPETS]


def test_a_console_block_runs_its_dollar_lines_with_their_continuations() -> None:
    block = "$ echo a \\\n    b\na b\n$ echo c\nc\n"
    assert console_commands(block) == "echo a \\\n    b\necho c\n"


def _synopsis_module():
    spec = importlib.util.spec_from_file_location("readme_synopsis", ROOT / "scripts" / "readme_synopsis.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_readme_synopsis_is_the_one_the_parser_renders() -> None:
    synopsis = _synopsis_module()
    block = synopsis.readme_block((ROOT / "README.md").read_text())
    assert block is not None, f"README.md lost its synopsis markers ({synopsis.BEGIN})"
    assert block == synopsis.render(), (
        "the README's command synopsis is stale: regenerate it with "
        "`.venv/bin/python scripts/readme_synopsis.py --write`")
    for command in synopsis._parser().get_default("commands"):
        assert f"gemini-tool-proxy {command} " in block, command


def test_the_readme_opening_names_every_way_in() -> None:
    text = (ROOT / "README.md").read_text()
    opening = text.split("\n## ", 1)[0]
    for name in ("Responses", "WebSocket", "Chat Completions", "Anthropic", "Messages", "Claude Code",
                 "google-genai", "/v1/gemini", "Interactions", "intercepting proxy", "generativelanguage",
                 "v1internal", "Gemini CLI", "Antigravity", "Vertex", "mock", "```mermaid"):
        assert name in opening, f"the README's opening does not name {name!r}"
