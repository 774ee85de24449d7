# Sourced by test.sh and bench.sh: the system servers the tests and benchmarks run for real
# (redis-server for the shared store, haproxy as the load balancer, Chromium and its driver for the
# /inspect page), iproute2, iptables, wireguard-go, wireguard-tools and sudo for the capture modes'
# tests (network namespaces, a nat rule, a userspace WireGuard device, local mode's redirector; curl is
# their proxy-unaware client), from Debian's packages.
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
if [ "$(id -u)" = 0 ]; then  # the namespace test runs as root only (it skips otherwise)
    command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || need+=(iptables)
    command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || need+=(iproute2)
    command -v curl >/dev/null 2>&1 || need+=(curl)
    command -v wireguard-go >/dev/null 2>&1 || need+=(wireguard-go)  # userspace: no kernel module needed
    command -v wg >/dev/null 2>&1 || need+=(wireguard-tools)
    command -v sudo >/dev/null 2>&1 || need+=(sudo)
    # the image's test (tests/test_container.py): podman with runc, and debootstrap for its base
    command -v podman >/dev/null 2>&1 || need+=(podman)
    command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || need+=(runc)
    command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)  # mitmproxy starts local mode's redirector with it, as root too
fi
if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing ${need[*]} (Debian packages)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q --no-install-recommends "${need[@]}" >&2 \
            || { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "${need[@]}" >&2; }
    else
        echo "error: the tests need ${need[*]}; install them (Debian: apt-get install ${need[*]})" >&2
        exit 1
    fi
fi
# Debian starts the packaged services; the tests run their own on free ports.
export PATH="$PATH:/usr/sbin"
