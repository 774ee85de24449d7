"""Where the CA and the carrier keys live, and keeping that directory private (0700).

A checkout keeps them in its certs/; an installed package (no pyproject.toml beside it) in the user's
data directory, never inside site-packages. `gemini-tool-proxy mitm`, `serve`, `ca`, `carrier-key`
and a bare `mitmdump -s` of the addon all use the same one (imported by the addon too: light).
"""

import logging
import os
import stat
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
log = logging.getLogger("gemini-tool-proxy")


def _certs_dir() -> Path:
    if (PROJECT / "pyproject.toml").is_file() and (PROJECT / "certs").is_dir():
        return PROJECT / "certs"
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "gemini-tool-proxy" / "certs"


CERTS_DIR = _certs_dir()


def private_dir(path: Path) -> Path:
    """Make `path` (and its missing parents) 0700, or check an existing one.

    The default certs directory is the project's own: one readable by others (a fresh clone's certs/ is
    0755, as git records no directory modes; so was the data directory of older versions) is tightened
    to 0700 with a warning; refusing would stop every fresh checkout's first run, and narrowing a
    directory that holds only our keys breaks nobody. A directory the user named is theirs: it is left
    as it is, with a warning when others can read it. Raises OSError when it cannot be made."""
    path = path.expanduser()
    if not path.is_dir():
        missing = [p for p in (path, *path.parents) if not p.exists()]
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path == CERTS_DIR and CERTS_DIR.parent in missing and CERTS_DIR.parent.name == "gemini-tool-proxy":
            os.chmod(CERTS_DIR.parent, 0o700)  # mkdir's mode is the leaf's only; the project's data directory too
        os.chmod(path, 0o700)  # whatever the umask
        return path
    mode = stat.S_IMODE(path.stat().st_mode)
    if not mode & 0o077:
        return path
    if path.resolve() == CERTS_DIR.resolve():
        try:
            os.chmod(path, 0o700)
        except OSError as e:
            log.warning("%s (the CA key and carrier keys) is mode %04o, open to other users, and cannot be "
                        "tightened: %s", path, mode, e.strerror or e)
        else:
            log.warning("%s (the CA key and carrier keys) was mode %04o, open to other users: made it 0700",
                        path, mode)
    else:
        log.warning("%s (holding a private key) is mode %04o, open to other users; `chmod 700 %s` keeps it "
                    "private", path, mode, path)
    return path
