#!/usr/bin/env bash
# Install (first run: Python packages, and redis-server and haproxy) and run ruff, then the whole test suite. Arguments go to pytest.
. "$(dirname "$0")/env.sh"
. "$(dirname "$0")/system_deps.sh"
cd "$ROOT"
"$VENV_PY" -m ruff check .
exec "$VENV_PY" -m pytest "$@"
