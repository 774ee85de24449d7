#!/usr/bin/env bash
# Install (first run: Python packages, and redis-server and haproxy) and run ruff, then the whole test suite
# in two passes: the tests not marked `serial` on two workers (pytest-xdist, a file per worker: module fixtures
# stay shared; GTP_TEST_WORKERS=N to change),
# then the `serial` ones (bound by time or memory) alone, on a machine the other pass no longer loads.
# Arguments go to both passes (a `-m` of yours replaces the split); a pass that selects nothing is fine.
. "$(dirname "$0")/env.sh"
. "$(dirname "$0")/system_deps.sh"
cd "$ROOT"
"$VENV_PY" -m ruff check .
# Test paths given: only those run. Otherwise, the whole suite: the container tests' images are built beside the first pass (debootstrap and apt are
# mostly downloads), so the serial pass finds them ready; container_build.sh's lock makes the tests wait
# for this build rather than start another.
paths=0
for arg in "$@"; do
    if [ -e "${arg%%::*}" ]; then paths=1; fi
done
if [ "$paths" = 0 ] && [ "$(id -u)" = 0 ] && command -v podman >/dev/null && command -v debootstrap >/dev/null; then
    mkdir -p "$ROOT/.cache"
    GTP_IMAGE=localhost/gemini-tool-proxy:test GTP_TOOLS_IMAGE=localhost/gtp-tools:test \
        nice -n 10 "$ROOT/scripts/stack.sh" build >"$ROOT/.cache/container-prebuild.log" 2>&1 &
fi
parallel=0 serial=0
"$VENV_PY" -m pytest -n "${GTP_TEST_WORKERS:-2}" --dist loadfile -m "not serial" "$@" || parallel=$?
# Given no test paths, the second pass collects only the files that mark tests serial (collecting every
# file takes about 27 s here).
serial_files=()
if [ "$paths" = 0 ]; then
    mapfile -t serial_files < <(grep -l "pytest.mark.serial" tests/test_*.py)
fi
"$VENV_PY" -m pytest -m serial "$@" "${serial_files[@]}" || serial=$?
# pytest's 5 means "no tests selected": fine for one pass, not for both.
if [ "$parallel" = 5 ] && [ "$serial" = 5 ]; then exit 5; fi
for rc in "$parallel" "$serial"; do
    if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then exit "$rc"; fi
done
