# Sourced by the other scripts: finds a Python >= 3.12 and prepares .venv with the locked dependencies.
# Usage: . scripts/env.sh   (sets $VENV_PY; exits with a clear message if no suitable Python exists)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${GTP_VENV:-$ROOT/.venv}"

py_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; }

find_python() {
    local c
    # PATH first, then pyenv's installs (these machines keep 3.12/3.13 there, off PATH), newest first.
    for c in "${GTP_PYTHON:-}" python3.13 python3.12 python3; do
        [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && py_ok "$(command -v "$c")" && { command -v "$c"; return; }
    done
    for c in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 /usr/local/bin/python3.1[2-9] \
               /usr/bin/python3.1[2-9] 2>/dev/null | sort -rV); do
        py_ok "$c" && { echo "$c"; return; }
    done
    return 1
}

if ! [ -x "$VENV/bin/python" ] || ! py_ok "$VENV/bin/python"; then
    PY="$(find_python)" || {
        echo "error: gemini-tool-proxy needs Python >= 3.12 (mitmproxy 12 requires it), and none was found" >&2
        echo "       on PATH or under pyenv. Install one (e.g. 'pyenv install 3.12') or set GTP_PYTHON=/path/to/python3.12." >&2
        exit 1
    }
    echo "using $PY ($("$PY" -V))" >&2
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
fi
VENV_PY="$VENV/bin/python"
stamp="$VENV/.gtp-installed"
# Reinstall only when the lock or the project metadata changed.
# (BYTECODE: venvs made before their packages were compiled to bytecode are made again.)
BYTECODE=1
want="$( (cat "$ROOT/requirements.lock" "$ROOT/pyproject.toml"; echo "bytecode $BYTECODE") | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    "$VENV_PY" -m pip install -q --disable-pip-version-check "uv==0.13.9" >&2
    "$VENV/bin/uv" pip install -q --python "$VENV_PY" -r "$ROOT/requirements.lock" >&2
    "$VENV/bin/uv" pip install -q --python "$VENV_PY" --no-deps -e "$ROOT" >&2
    # The packages as bytecode (see below), those installed before too: uv pip install writes none.
    "$VENV_PY" -m compileall -q -j 0 "$VENV/lib" >/dev/null 2>&1 || true
    echo "$want" > "$stamp"
fi
# The project's own modules as bytecode too (only those changed since are compiled again). Where
# PYTHONDONTWRITEBYTECODE is set, as on these machines, Python never writes it: every process the
# tests start (serve, mock, mitmdump: hundreds) compiled every module it imports from source, about a
# second each (the suite's first pass: 347 s without bytecode, 263 s with it). A module that does not
# compile is left to ruff and pytest to report.
"$VENV_PY" -m compileall -q -j 0 "$ROOT/proxy" "$ROOT/addons" "$ROOT/scripts" "$ROOT/tests" >/dev/null || true
export PATH="$VENV/bin:$PATH"
