#!/usr/bin/env bash
# Generate the proxy's CA into certs/ (key file 0600, never committed). Arguments go to `gemini-tool-proxy ca`.
. "$(dirname "$0")/env.sh"
exec "$VENV_PY" -m proxy ca "$@"
