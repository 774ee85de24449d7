"""Real client programs from the npm registry, installed once into the project's .cache/."""

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def npm_binary(package: str, version: str, binary: str) -> Path:
    """Path to `binary` from `package@version`, installing it into .cache/ the first time."""
    prefix = ROOT / ".cache" / f"{package.rsplit('/', 1)[-1]}-{version}"
    path = prefix / "node_modules" / ".bin" / binary
    if not path.exists():
        npm = shutil.which("npm")
        assert npm and shutil.which("node"), f"Node.js and npm are needed to run {package}"
        subprocess.run([npm, "install", "--prefix", str(prefix), f"{package}@{version}", "--no-audit", "--no-fund",
                        "--loglevel=error"], check=True, timeout=600)
    return path


def npm_packages(name: str, *specs: str) -> Path:
    """A directory whose node_modules holds `specs` (e.g. "openai@7.57.0"), installed once into .cache/;
    a script copied into it resolves them."""
    prefix = ROOT / ".cache" / name
    marker = prefix / ".installed"
    if not marker.exists() or marker.read_text() != " ".join(specs):
        npm = shutil.which("npm")
        assert npm and shutil.which("node"), "Node.js and npm are needed to run the Node SDK tests"
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "install", "--prefix", str(prefix), *specs, "--no-audit", "--no-fund",
                        "--loglevel=error"], check=True, timeout=600)
        marker.write_text(" ".join(specs))
    return prefix
