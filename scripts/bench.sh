#!/usr/bin/env bash
# The benchmark: installs what it needs (Python packages, redis-server, haproxy), runs every row in
# one run and writes docs/benchmarks.md. BENCH_N / BENCH_SECONDS shorten or lengthen it.
. "$(dirname "$0")/env.sh"
. "$(dirname "$0")/system_deps.sh"
cd "$ROOT"
exec "$VENV_PY" scripts/bench.py "$@"
