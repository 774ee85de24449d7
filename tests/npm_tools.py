"""Real client programs from the npm registry, installed once into the project's .cache/."""

import contextlib
import fcntl
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def npm_binary(package: str, version: str, binary: str, ignore_scripts: bool = False) -> Path:
    """Path to `binary` from `package@version`, installing it into .cache/ the first time.
    `ignore_scripts`: skip the packages' install scripts (e.g. a native module built from source
    when its prebuilt binary cannot be downloaded, which the test does not use)."""
    prefix = ROOT / ".cache" / f"{package.rsplit('/', 1)[-1]}-{version}"
    path = prefix / "node_modules" / ".bin" / binary
    with _installing(prefix):
        if path.exists():
            return path
        npm = shutil.which("npm")
        assert npm and shutil.which("node"), f"Node.js and npm are needed to run {package}"
        subprocess.run([npm, "install", "--prefix", str(prefix), f"{package}@{version}", "--no-audit", "--no-fund",
                        "--loglevel=error", *(["--ignore-scripts"] if ignore_scripts else [])], check=True, timeout=600)
    return path


def npm_packages(name: str, *specs: str) -> Path:
    """A directory whose node_modules holds `specs` (e.g. "openai@7.57.0"), installed once into .cache/;
    a script copied into it resolves them."""
    prefix = ROOT / ".cache" / name
    marker = prefix / ".installed"
    with _installing(prefix):
        if marker.exists() and marker.read_text() == " ".join(specs):
            return prefix
        npm = shutil.which("npm")
        assert npm and shutil.which("node"), "Node.js and npm are needed to run the Node SDK tests"
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "install", "--prefix", str(prefix), *specs, "--no-audit", "--no-fund",
                        "--loglevel=error"], check=True, timeout=600)
        marker.write_text(" ".join(specs))
    return prefix


@contextlib.contextmanager
def _installing(prefix: Path) -> Iterator[None]:
    """One installer per prefix at a time: the suite's workers (pytest-xdist) may want the same program at once."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f"{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
