#!/usr/bin/env bash
# Build gemini-tool-proxy's image with podman, where no image registry is reachable: the base is made
# with debootstrap (Debian trixie: its python3 is 3.13) and `podman import`ed, the wheels built on the
# host from requirements.lock and the source; both cached under .cache/ keyed by their inputs.
# Usage: scripts/container_build.sh [TAG [TOOLS_TAG]]   (default localhost/gemini-tool-proxy:local)
# With TOOLS_TAG, also the stack's Redis + HAProxy image (deploy/Containerfile.tools) on the same base
# (podman's layer cache keeps its apt step).
# Needs root, podman, runc and debootstrap (Debian: apt-get install podman runc debootstrap).
# GTP_CONTAINER_CACHE: where the base and the wheels are kept (default .cache/container).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TAG="${1:-localhost/gemini-tool-proxy:local}"
TOOLS_TAG="${2:-}"
MIRROR="${GTP_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PY="${GTP_PYTHON:-$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3 2>/dev/null | sort -V | tail -1)}"
P=(podman --runtime runc --cgroup-manager=cgroupfs)
# runc refuses limits above the host's hard ones: the host's own open-files limit, nproc 4096.
U=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
CACHE="${GTP_CONTAINER_CACHE:-$ROOT/.cache/container}"; mkdir -p "$CACHE"
# One build at a time (test.sh starts one ahead of the tests; the tests' own then finds it done).
exec 9>"$CACHE/build.lock"
flock 9
base_key="$(echo "trixie minbase python3 python3-venv ca-certificates $MIRROR" | sha256sum | cut -c1-12)"
BASE="localhost/gtp-base:$base_key"
src_key="$( (cat "$ROOT/requirements.lock" "$ROOT/pyproject.toml" "$ROOT/Containerfile"; \
             git -C "$ROOT" ls-files -s proxy addons LICENSE README.md) | sha256sum | cut -c1-12)"
CTX="$CACHE/ctx-$src_key"
# The wheels (the runtime dependencies only, pinned by the lock) are built while the base is made.
wheels_pid=
if [ ! -d "$CTX/wheels" ]; then
    rm -rf "$CTX.tmp"; mkdir -p "$CTX.tmp"
    ( "$PY" -m pip wheel -q -c "$ROOT/requirements.lock" "$ROOT" -w "$CTX.tmp/wheels" >&2 \
      && mv "$CTX.tmp" "$CTX" ) &
    wheels_pid=$!
fi
if ! "${P[@]}" image exists "$BASE"; then
    if [ ! -f "$CACHE/base-$base_key.tar" ]; then
        rm -rf "$CACHE/rootfs"
        debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates trixie "$CACHE/rootfs" "$MIRROR" >&2
        rm -rf "$CACHE/rootfs"/var/cache/apt/archives/*.deb
        tar -C "$CACHE/rootfs" -cf "$CACHE/base-$base_key.tar.tmp" . && mv "$CACHE/base-$base_key.tar.tmp" "$CACHE/base-$base_key.tar"
        rm -rf "$CACHE/rootfs"
    fi
    "${P[@]}" import "$CACHE/base-$base_key.tar" "$BASE" >&2
fi
if [ -n "$wheels_pid" ]; then wait "$wheels_pid"; fi
cp "$ROOT/Containerfile" "$CTX/Containerfile"
tools_pid=
if [ -n "$TOOLS_TAG" ]; then  # alongside the proxy's: mostly apt's downloads
    "${P[@]}" build --format docker "${U[@]}" --build-arg "BASE=$BASE" -t "$TOOLS_TAG" \
        -f "$ROOT/deploy/Containerfile.tools" "$ROOT/deploy" >&2 &
    tools_pid=$!
fi
"${P[@]}" build --format docker "${U[@]}" --build-arg "BASE=$BASE" -t "$TAG" "$CTX" >&2
if [ -n "$tools_pid" ]; then wait "$tools_pid"; fi
echo "$TAG"
