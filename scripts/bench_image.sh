#!/usr/bin/env bash
# A bench script run inside the image users install (issue 62 item 3: "test the artifact users
# install"): its Python (Debian's, libpython linked into the executable, where the development venv's
# pyenv build loads it as a shared library and was configured without --enable-optimizations or
# --with-lto), its venv, its wheel of the proxy. The bench scripts and their bodies are copied in
# without proxy/ and pyproject.toml, so every server the bench starts (`python -m proxy serve`, the
# mock) imports the installed package. No network but the container's own loopback.
#
#   scripts/bench_image.sh IMAGE OUT_DIR [SCRIPT [ARGS...]]
#
# SCRIPT defaults to scripts/bench_tails.py; ARGS are its own (`--json /out/NAME.json` writes into
# OUT_DIR). Environment variables named BENCH_* are passed on (BENCH_TAILS_N, BENCH_TAILS_CONC...), but
# BENCH_LITELLM_BIN: the host's LiteLLM is not in the image.
# Example: BENCH_TAILS_CONC=1 scripts/bench_image.sh localhost/gemini-tool-proxy:test /tmp/out \
#            scripts/bench_tails.py --kinds responses,chat,anthropic --json /out/image.json
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
image=$1 out=$2
shift 2
[ $# -ge 1 ] || set -- scripts/bench_tails.py
root=$(cd "$(dirname "$0")/.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tests" "$out"
cp -r "$root/scripts" "$stage/"
cp "$root/README.md" "$stage/"  # bench_tails.py's system prompt
cp "$root"/tests/{__init__,servers,mitm_harness,harness}.py "$stage/tests/"
cp -r "$root/tests/fixtures" "$stage/tests/"  # the real clients' tool schemas
chmod -R a+rX "$stage"
chmod 0777 "$out"  # the image runs as uid 10001
env_args=()
while IFS='=' read -r name _; do  # (not the host's LiteLLM: the image has none)
    [ "$name" = BENCH_LITELLM_BIN ] || env_args+=(-e "$name")
done < <(env | grep '^BENCH_' || true)
hard=$(ulimit -Hn)
exec podman run --rm --network=none --ulimit "nofile=$hard:$hard" --ulimit nproc=4096:4096 \
  -v "$stage:/src:ro" -v "$out:/out" -w /src "${env_args[@]}" \
  --entrypoint /opt/gtp/bin/python "$image" "$@"
