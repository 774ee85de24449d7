#!/usr/bin/env bash
# Install (first run) and start the proxy. Arguments go to `gemini-tool-proxy serve`.
. "$(dirname "$0")/env.sh"
exec "$VENV_PY" -m proxy serve "$@"
