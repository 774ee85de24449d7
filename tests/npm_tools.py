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
