#!/usr/bin/env bash
# Install (first run) and run the whole test suite, then ruff. Arguments go to pytest.
. "$(dirname "$0")/env.sh"
cd "$ROOT"
"$VENV_PY" -m ruff check .
exec "$VENV_PY" -m pytest "$@"
