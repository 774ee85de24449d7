"""Released Python clients from PyPI, each in its own venv under the project's .cache/ (made once
with uv): a test runs a script in it as a subprocess, against the proxy, to use a newer client than
the one the project's lock pins."""

import subprocess
import sys
from pathlib import Path

from tests.npm_tools import ROOT, _installing

UV = Path(sys.executable).with_name("uv")


def pypi_venv(name: str, *specs: str) -> Path:
    """The python of a venv in .cache/`name` holding `specs` (e.g. "anthropic==2.15.0"), made once."""
    prefix = ROOT / ".cache" / name
    python, marker = prefix / "bin" / "python", prefix / ".installed"
    with _installing(prefix):
        if marker.exists() and marker.read_text() == " ".join(specs):
            return python
        subprocess.run([str(UV), "venv", "-q", "--allow-existing", "--python", sys.executable, str(prefix)],
                       check=True, timeout=120)
        subprocess.run([str(UV), "pip", "install", "-q", "--python", str(python), *specs], check=True, timeout=600)
        marker.write_text(" ".join(specs))
    return python
