#!/usr/bin/env bash
# The two-instance stack with plain podman commands (what compose.yaml describes, for podman without a
# compose provider): every container shares HAProxy's network namespace (`--network container:`,
# compose's `network_mode: service:haproxy`), so they all share 127.0.0.1 (this podman's CNI has no DNS
# between containers; a pod would too, but its infra container takes podman's default ulimits, which
# runc refuses here) -- Redis on 6379, the instances p1 on 8751 and p2 on 8752 (`--store
# redis://127.0.0.1:6379/0`, `--drain-seconds`), HAProxy on 8741 (deploy/haproxy.cfg), published on
# 127.0.0.1:$GTP_STACK_PORT of the host. The CA and carrier keys: the volume NAME-data at /data, shared
# by both instances (p1 makes them, then p2 starts). tests/test_container.py runs exactly this.
#
#   scripts/stack.sh build               the images (scripts/container_build.sh: proxy, Redis + HAProxy)
#   scripts/stack.sh up [SERVE ARGS...]  start the stack; SERVE ARGS go to both instances' `serve`
#                                        (e.g. --upstream mock; the Gemini key: GEMINI_API_KEY in the env)
#   scripts/stack.sh wait                until Redis, p1 and p2 answer and HAProxy has both UP (after
#                                        `podman-compose up -d`: compose.yaml uses the same names)
#   scripts/stack.sh restart             rolling restart: SIGTERM p1 (it drains), start it, wait until
#                                        HAProxy has it UP again, then the same for p2
#   scripts/stack.sh down [-v]           remove the containers (-v: and the volume, the carrier keys)
# Env: GTP_STACK (name, default gtp), GTP_STACK_PORT (8741), GTP_IMAGE, GTP_TOOLS_IMAGE,
# GTP_DRAIN_SECONDS (3), GTP_API_KEYS and GEMINI_API_KEY(S) (passed to the instances when set).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAME="${GTP_STACK:-gtp}"
PORT="${GTP_STACK_PORT:-8741}"
IMAGE="${GTP_IMAGE:-localhost/gemini-tool-proxy:local}"
TOOLS="${GTP_TOOLS_IMAGE:-localhost/gtp-tools:local}"
DRAIN="${GTP_DRAIN_SECONDS:-3}"  # > HAProxy taking it out (2 checks 200 ms apart), with margin
SHUTDOWN=10
P=(podman --runtime runc --cgroup-manager=cgroupfs)
# runc refuses limits above the host's hard ones.
U=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)

# GET http://127.0.0.1:PORT/PATH inside the pod (from p1's Python), printing the body; fails unless 200.
get() {
    "${P[@]}" exec "$NAME-p1" python3 -c "import sys, urllib.request
sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$1$2', timeout=2).read().decode())" 2>/dev/null
}
until_() {  # WHAT COMMAND...: retry for 30 s
    local what="$1"; shift
    for _ in $(seq 150); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
    echo "stack.sh: timed out waiting for $what" >&2; return 1
}
ready() { "${P[@]}" exec "$NAME-p$1" python3 -c "import urllib.request
urllib.request.urlopen('http://127.0.0.1:875$1/readyz', timeout=2)"; }
up_in_haproxy() { get 8404 "/stats;csv" | grep -q "^proxies,p$1,.*,UP,"; }

instance() {  # N SERVE ARGS...
    local n="$1"; shift
    local env=(-e "GTP_HEALTH_PORT=875$n")
    for v in GTP_API_KEYS GEMINI_API_KEY GEMINI_API_KEYS; do
        if [ -n "${!v:-}" ]; then env+=(-e "$v"); fi
    done
    "${P[@]}" run -d --network "container:$NAME-haproxy" --name "$NAME-p$n" "${U[@]}" -v "$NAME-data:/data" "${env[@]}" \
        --stop-timeout "$(( ${DRAIN%.*} + SHUTDOWN + 5 ))" "$IMAGE" \
        serve --port "875$n" --store redis://127.0.0.1:6379/0 --drain-seconds "$DRAIN" \
        --shutdown-timeout "$SHUTDOWN" "$@" >/dev/null
}

wait_all() {
    until_ "redis" "${P[@]}" exec "$NAME-redis" redis-cli -p 6379 ping
    for n in 1 2; do until_ "p$n ready" ready "$n"; done
    until_ "HAProxy with p1 UP" up_in_haproxy 1
    until_ "HAProxy with p2 UP" up_in_haproxy 2
}

case "${1:-}" in
build)
    "$ROOT/scripts/container_build.sh" "$IMAGE" "$TOOLS" >/dev/null ;;
up)
    shift
    "${P[@]}" volume exists "$NAME-data" || "${P[@]}" volume create "$NAME-data" >/dev/null
    # HAProxy first: it holds the namespace and the published port (its servers are DOWN until they start).
    "${P[@]}" run -d --name "$NAME-haproxy" -p "127.0.0.1:$PORT:8741" "${U[@]}" --user haproxy \
        -v "$ROOT/deploy/haproxy.cfg:/etc/gtp/haproxy.cfg:ro" "$TOOLS" haproxy -db -f /etc/gtp/haproxy.cfg >/dev/null
    "${P[@]}" run -d --network "container:$NAME-haproxy" --name "$NAME-redis" "${U[@]}" --user redis "$TOOLS" \
        redis-server --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
    until_ "redis" "${P[@]}" exec "$NAME-redis" redis-cli -p 6379 ping
    instance 1 "$@"
    until_ "p1 ready" ready 1  # it makes the carrier keys on the volume; p2 then reads them
    instance 2 "$@"
    wait_all
    echo "stack $NAME: http://127.0.0.1:$PORT" ;;
wait)
    wait_all ;;
restart)
    for n in 1 2; do
        # podman stop sends SIGTERM (the drain: /readyz 503, HAProxy takes it out within 200 ms, it
        # still serves for --drain-seconds), then SIGKILL only after the grace period.
        "${P[@]}" stop -t "$(( ${DRAIN%.*} + SHUTDOWN + 5 ))" "$NAME-p$n" >/dev/null
        "${P[@]}" start "$NAME-p$n" >/dev/null
        until_ "p$n ready again" ready "$n"
        until_ "HAProxy with p$n UP again" up_in_haproxy "$n"
        echo "p$n restarted"
    done ;;
down)
    for c in p2 p1 redis haproxy; do "${P[@]}" rm -f -t 5 "$NAME-$c" >/dev/null 2>&1 || true; done
    if [ "${2:-}" = "-v" ]; then "${P[@]}" volume rm -f "$NAME-data" >/dev/null 2>&1 || true; fi ;;
*)
    echo "usage: scripts/stack.sh build | up [SERVE ARGS...] | wait | restart | down [-v]" >&2; exit 2 ;;
esac
