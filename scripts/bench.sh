#!/usr/bin/env bash
# The benchmark: installs what it needs (Python packages, redis-server, haproxy, and LiteLLM's proxy in
# its own virtual environment under .bench/; valgrind when it can), runs every row in one run and
# writes docs/benchmarks.md (and docs/benchmarks-sse.md: how SSE decoding scales).
# BENCH_N / BENCH_SECONDS / BENCH_MITM_ROUNDS (the MITM rows' alternated rounds, 3) shorten or lengthen it; BENCH_LITELLM=0 leaves LiteLLM out.
# Tails under concurrency (bench_tails.py: its section of docs/benchmarks.md and docs/benchmarks-tails.png):
# BENCH_TAILS_RUNS (3 whole runs), BENCH_TAILS_N (rounds per concurrency), BENCH_TAILS_CONC ("1,4,16,64").
# Where a c=1 request's time goes (critical_path.py: its section of docs/benchmarks.md), 3 runs; how much
# Python a request runs (footprint.py: its section); BENCH_IMAGE: the c=1 tails in that image too (bench_image.sh).
. "$(dirname "$0")/env.sh"
. "$(dirname "$0")/system_deps.sh"
cd "$ROOT"
# valgrind counts the journal's instructions per request (bench_journal.py; its rows are left out without it).
if ! command -v valgrind >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing valgrind (Debian package)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends valgrind >&2 || true
fi
if [ "${BENCH_LITELLM:-1}" != 0 ]; then
    LITELLM_VENV="$ROOT/.bench/litellm"
    if ! [ -x "$LITELLM_VENV/bin/litellm" ]; then
        echo "installing LiteLLM's proxy into $LITELLM_VENV (once)" >&2
        "$("$VENV_PY" -c 'import sys; print(sys._base_executable)')" -m venv "$LITELLM_VENV"
        "$LITELLM_VENV/bin/pip" install -q --disable-pip-version-check 'litellm[proxy]' >&2
    fi
    export BENCH_LITELLM_BIN="$LITELLM_VENV/bin/litellm"
fi
# matplotlib draws bench_tails.py's plot: installed into the venv only, when missing (it is no dependency of
# the project, so the lock stays as it is).
if ! "$VENV_PY" -c 'import matplotlib' 2>/dev/null; then
    echo "installing matplotlib into $VENV (the tails plot)" >&2
    "$VENV/bin/uv" pip install -q --python "$VENV_PY" matplotlib >&2
fi
"$VENV_PY" scripts/bench.py "$@"
# Each script below replaces (or appends) its own section of docs/benchmarks.md, as bench.py did its own.
"$VENV_PY" scripts/bench_tails.py --write --factors --runs "${BENCH_TAILS_RUNS:-3}"
"$VENV_PY" scripts/critical_path.py --write --runs 3  # where a c=1 request's time goes, proxy against the hop
"$VENV_PY" scripts/footprint.py --write  # how much Python a request runs, proxy against the hop (a count)
# The tails at c=1 in the image users install, beside the venv's (BENCH_IMAGE: a built image, e.g.
# localhost/gemini-tool-proxy:test from scripts/container_build.sh): printed, for the findings.
if [ -n "${BENCH_IMAGE:-}" ]; then
    BENCH_TAILS_CONC=1 scripts/bench_image.sh "$BENCH_IMAGE" "$ROOT/.bench/image" scripts/bench_tails.py \
        --kinds responses,chat,anthropic --json /out/tails-c1.json
fi
"$VENV_PY" scripts/bench_journal.py --write  # the journal on against off -> docs/benchmarks-journal.md
exec "$VENV_PY" scripts/bench_sse.py --write   # SSE decoding's scaling -> docs/benchmarks-sse.md
