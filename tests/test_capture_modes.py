"""Capture modes beyond the HTTP proxy (issue 58): `gemini-tool-proxy mitm --mode transparent` in a network
namespace the test makes, where an app that knows nothing of proxies dials an IP address and the nat table
redirects it; `--mode wireguard` with a second namespace as the device, its traffic carried by a userspace
WireGuard (wireguard-go: this kernel has no wireguard module); and, in the regular mode, the TLS server name
(not the CONNECT host) deciding what is ours.

A namespace holds everything of its test: the mock posing as Google (its listening socket is made while
this thread is inside), `python -m proxy mitm --mode ...` (started from inside, so it is there too), the
iptables rule, and the clients. Nothing leaves them: 10.253.x addresses exist only inside."""

import contextlib
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from proxy.ca import generate_ca
from proxy.mock.server import RECEIVED, start_mock
from tests.harness import LoopThread
from tests.mitm_harness import FOREIGN_HOST, ROOT, MitmStack, free_port, stop, upstream_tls
from tests.test_mitm_e2e import CLOCK, WEATHER, run, session_state, set_tools, sse_chunks, user

GL = "generativelanguage.googleapis.com"
DAILY_CC = "daily-cloudcode-pa.googleapis.com"  # Antigravity's Code Assist host
APP_IP = "10.253.0.1"  # what the app dials: an address on the namespace's loopback, redirected to the proxy
GENERATE = "/v1beta/models/gemini-2.5-flash:generateContent"

pytestmark = pytest.mark.slow


# -- the network namespace ---------------------------------------------------------------------------

def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def _in(name: str, *args: str) -> None:
    """`ip -n NAME ARGS...`, which must succeed."""
    done = _ip("-n", name, *args)
    assert done.returncode == 0, f"ip -n {name} {' '.join(args)}: {done.stderr}"


@contextlib.contextmanager
def network_namespace(address: str | None = APP_IP) -> Iterator[str]:
    """A fresh namespace with loopback up and `address` on it; deleted afterwards, even on failure."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2's `ip`")
    name = f"gtp-modes-{uuid.uuid4().hex[:8]}"
    made = _ip("netns", "add", name)
    if made.returncode != 0:
        pytest.skip(f"`ip netns add` is not possible here: {made.stderr.strip()}")
    try:
        _in(name, "link", "set", "lo", "up")
        if address:
            _in(name, "addr", "add", f"{address}/32", "dev", "lo")
        yield name
    finally:
        _ip("netns", "del", name)


@contextlib.contextmanager
def inside(name: str) -> Iterator[None]:
    """This thread in the namespace: sockets it makes, threads and processes it starts are in there."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        os.setns(target, os.CLONE_NEWNET)
        try:
            yield
        finally:
            os.setns(home, os.CLONE_NEWNET)
    finally:
        os.close(target)
        os.close(home)


def _nat(name: str, *rule: str) -> None:
    if shutil.which("iptables") is None:
        pytest.fail("iptables is missing: scripts/system_deps.sh installs it (Debian's iptables)")
    done = subprocess.run(["ip", "netns", "exec", name, "iptables", "-t", "nat", *rule],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


# -- the proxy in a namespace, transparent mode ----------------------------------------------------------------

class NamespaceStack:
    """Inside a namespace: the TLS mock as Google, `python -m proxy mitm --mode MODE` routed to it and, for
    transparent mode, the nat rule sending the app's connections to APP_IP:443 to the proxy."""

    def __init__(self, tmp: Path, ns: str, mode: str = "transparent", *args: str, wrap: tuple[str, ...] = ()) -> None:
        """`wrap`: a command line the proxy's runs under (its last argument, a shell's, gets the proxy's)."""
        self.tmp, self.ns = tmp, ns
        self.lt = LoopThread()  # started inside: its loop's sockets are the namespace's
        server_ctx, upstream_ca = upstream_tls(tmp)
        self.mock_runner, mock_url, self.mock_app = self.lt.run(start_mock(ssl_context=server_ctx))
        self.confdir = tmp / "proxy-ca"
        generate_ca(self.confdir)
        self.ca_cert = self.confdir / "mitmproxy-ca-cert.pem"
        self.proxy_port, self.frontend_port = free_port(), free_port()
        self.frontend_url = f"http://127.0.0.1:{self.frontend_port}"
        self.log = open(tmp / "mitm.log", "w+")  # noqa: SIM115 - closed in close()
        # The proxy's own upstream connections go to the mock on 127.0.0.1: the rule below never matches them.
        # connection_strategy=lazy: gtp_route (testing only) reroutes a connection made for a request.
        cmd = [sys.executable, "-m", "proxy", "mitm", "--mode", mode, "--listen-port", str(self.proxy_port), *args,
               "--port", str(self.frontend_port), "--upstream", "mock", "--confdir", str(self.confdir),
               "--", "--set", f"gtp_route=127.0.0.1:{mock_url.rsplit(':', 1)[1]}", "--set", "connection_strategy=lazy",
               "--set", f"ssl_verify_upstream_trusted_ca={upstream_ca}"]
        if wrap:
            cmd = [*wrap[:-1], f"{wrap[-1]} {shlex.join(cmd)}"]
        # A session of its own: close() ends its whole process group (local mode's redirector runs under sudo).
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            self.listening = self._wait_for(r"(Transparent Proxy|WireGuard server) listening at \S+|"
                                            r"Local redirector started")
            self._wait_for(r"front-end listening at")
            if mode == "transparent":
                _nat(ns, "-A", "OUTPUT", "-p", "tcp", "-d", APP_IP, "--dport", "443", "-j", "REDIRECT",
                     "--to-ports", str(self.proxy_port))
        except BaseException:
            self.close()
            raise

    def _wait_for(self, pattern: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if m := re.search(pattern, self.logs()):
                return m.group(0)
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"the proxy did not log {pattern!r}:\n{self.logs()}")

    def logs(self) -> str:
        self.log.seek(0)
        return self.log.read()

    @property
    def received(self) -> list[dict]:
        return list(self.mock_app[RECEIVED])

    def close(self) -> None:
        stop(self.proc)
        with contextlib.suppress(ProcessLookupError):  # what it started and left (its group: its own pid)
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.lt.run(self.mock_runner.cleanup())
        self.lt.stop()
        self.log.close()


@pytest.fixture(scope="module")
def transparent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NamespaceStack]:
    with network_namespace() as ns:
        with inside(ns):
            stack = NamespaceStack(tmp_path_factory.mktemp("transparent"), ns)
        try:
            yield stack
        finally:
            stack.close()


def dial(ip: str, server_name: str, path: str, body: dict, ca: Path) -> tuple[int, bytes]:
    """An app that knows no proxy: TCP to `ip`:443, TLS naming `server_name` (python's http.client reads no
    proxy variables; the connection is made here, so not even its host is resolved)."""
    ctx = ssl.create_default_context(cafile=str(ca))
    tls = ctx.wrap_socket(socket.create_connection((ip, 443), timeout=30), server_hostname=server_name)
    return _post_over(tls, server_name, path, body)  # its Host header: the server name


def _post_over(tls: ssl.SSLSocket, host_header: str, path: str, body: dict) -> tuple[int, bytes]:
    """A Gemini POST over a TLS connection the caller made, as an app's HTTP client sends it."""
    conn = http.client.HTTPConnection(host_header, timeout=30)
    conn.sock = tls
    try:
        conn.request("POST", path, body=json.dumps(body),
                     headers={"x-goog-api-key": "k", "content-type": "application/json"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def test_transparent_mode_intercepts_an_app_that_dials_an_ip(transparent: NamespaceStack) -> None:
    """The app ignores proxy variables and dials 10.253.0.1:443; iptables redirects it; the proxy reads the
    real host from the TLS server name, injects the session's tools, and the answer's call is captured."""
    assert f"127.0.0.1:{transparent.proxy_port}" in transparent.listening
    with inside(transparent.ns):
        run(set_tools(transparent, "tp", [WEATHER]))
        status, data = dial(APP_IP, GL, GENERATE, {"contents": [user("<session:tp> call get_weather city=Paris")]},
                            transparent.ca_cert)
        assert status == 200, data
        sent = transparent.received[-1]
        assert sent["path"] == GENERATE
        assert [d["name"] for d in sent["body"]["tools"][0]["functionDeclarations"]] == ["get_weather"]
        assert sent["body"]["contents"] == [user("call get_weather city=Paris")], "the marker never leaves the proxy"
        assert json.loads(data)["candidates"][0]["content"]["parts"][0]["functionCall"] == {
            "name": "get_weather", "args": {"city": "Paris"}}
        assert run(session_state(transparent, "tp"))["rounds"][-1]["calls"][0]["name"] == "get_weather"


def test_transparent_mode_intercepts_code_assist_on_its_daily_host(transparent: NamespaceStack) -> None:
    """Antigravity's host, daily-cloudcode-pa, with Cloud Code's envelope, streamed; the client is curl (told to
    use no proxy), resolving the host to the IP."""
    body = {"model": "gemini-2.5-pro", "project": "p-1", "user_prompt_id": "u1",
            "request": {"contents": [user("<session:tcc> call get_clock zone=UTC")], "session_id": "s-1"}}
    with inside(transparent.ns):
        run(set_tools(transparent, "tcc", [CLOCK]))
        data = curl(transparent.ns, DAILY_CC, "/v1internal:streamGenerateContent?alt=sse", body, transparent.ca_cert)
        [chunk] = sse_chunks(data)
        assert chunk["response"]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "get_clock"
        sent = transparent.received[-1]
        assert sent["path"] == "/v1internal:streamGenerateContent?alt=sse" and sent["model"] == "gemini-2.5-pro"
        assert [d["name"] for d in sent["body"]["tools"][0]["functionDeclarations"]] == ["get_clock"]
        assert run(session_state(transparent, "tcc"))["rounds"][-1]["calls"][0]["name"] == "get_clock"


def test_transparent_mode_leaves_another_server_name_alone(transparent: NamespaceStack) -> None:
    """The same IP, TLS naming a host that is not Gemini's: the request passes as the app wrote it."""
    raw = {"contents": [user("<session:tp> call get_weather city=Paris")]}
    with inside(transparent.ns):
        run(set_tools(transparent, "tp", [WEATHER]))
        status, _ = dial(APP_IP, FOREIGN_HOST, GENERATE, raw, transparent.ca_cert)
    assert status == 200
    sent = transparent.received[-1]
    assert sent["headers"]["Host"] == FOREIGN_HOST
    assert sent["body"] == raw, "no tools injected, the marker left in: untouched"


# -- WireGuard mode: another device (here a second namespace) sends its traffic through a tunnel ---------

PROXY_SIDE, DEVICE_SIDE = "10.253.2.1", "10.253.2.2"  # the two ends of a veth link between the namespaces
TUNNELED = "10.253.0.0/24"  # what the device routes into the tunnel (a real one: AllowedIPs = 0.0.0.0/0)


def client_config(log: str) -> dict[str, str]:
    """The WireGuard client configuration mitmproxy prints at start (what a user types into the device)."""
    block = log[log.index("[Interface]"):]
    found: dict[str, str] = {}
    for key, value in re.findall(r"^(PrivateKey|Address|PublicKey|Endpoint) = (\S+)$", block, re.M):
        found.setdefault(key, value)
    return found


@dataclass
class Tunnel:
    stack: NamespaceStack
    device: str  # the device's namespace
    config: dict[str, str]


@pytest.fixture(scope="module")
def wireguard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tunnel]:
    """`python -m proxy mitm --mode wireguard` in one namespace; in another, the device: wireguard-go (the
    userspace WireGuard: this kernel has no wireguard module) configured with `wg` from what mitmproxy printed."""
    tmp = tmp_path_factory.mktemp("wireguard")
    with network_namespace() as proxy_ns, network_namespace(None) as device:
        if not os.path.exists("/dev/net/tun"):
            pytest.skip("userspace WireGuard (wireguard-go) needs /dev/net/tun, which this machine lacks")
        for tool in ("wireguard-go", "wg"):
            if shutil.which(tool) is None:
                pytest.fail(f"{tool} is missing: scripts/system_deps.sh installs it (Debian: wireguard-go, -tools)")
        _in(proxy_ns, "link", "add", "gtp0", "type", "veth", "peer", "name", "gtp1", "netns", device)
        _in(proxy_ns, "addr", "add", f"{PROXY_SIDE}/30", "dev", "gtp0")
        _in(proxy_ns, "link", "set", "gtp0", "up")
        _in(device, "addr", "add", f"{DEVICE_SIDE}/30", "dev", "gtp1")
        _in(device, "link", "set", "gtp1", "up")
        with inside(proxy_ns):
            # WireGuard authenticates the device by its key; the proxy's open-bind refusal knows only proxyauth.
            stack = NamespaceStack(tmp, proxy_ns, "wireguard", "--listen-host", PROXY_SIDE, "--allow-unauthenticated")
        wg_go = None
        try:
            config = client_config(stack.logs())
            key = tmp / "device.key"
            key.touch(0o600)
            key.write_text(config["PrivateKey"] + "\n")
            wg_go = subprocess.Popen(["ip", "netns", "exec", device, "wireguard-go", "-f", "wg0"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 15
            while _ip("-n", device, "link", "show", "wg0").returncode != 0:
                assert time.monotonic() < deadline and wg_go.poll() is None, "wireguard-go made no wg0"
                time.sleep(0.05)
            done = subprocess.run(["ip", "netns", "exec", device, "wg", "set", "wg0", "private-key", str(key), "peer",
                                   config["PublicKey"], "allowed-ips", TUNNELED, "endpoint", config["Endpoint"]],
                                  capture_output=True, text=True, timeout=30)
            assert done.returncode == 0, done.stderr
            _in(device, "addr", "add", config["Address"], "dev", "wg0")
            _in(device, "link", "set", "wg0", "up")
            _in(device, "route", "add", TUNNELED, "dev", "wg0")
            yield Tunnel(stack, device, config)
        finally:
            if wg_go is not None:
                stop(wg_go)
            stack.close()


def curl(ns: str, host: str, path: str, body: dict, ca: Path, program: str = "curl") -> bytes:
    """curl in namespace `ns`, told to use no proxy (a proxy variable naming a dead port proves it listens),
    `host` resolved to APP_IP."""
    done = subprocess.run(
        ["ip", "netns", "exec", ns, program, "-sS", "--fail-with-body", "--noproxy", "*", "--max-time", "30",
         "--resolve", f"{host}:443:{APP_IP}", "--cacert", str(ca), "-H", "content-type: application/json",
         "-H", "x-goog-api-key: k", "--data-binary", json.dumps(body), f"https://{host}{path}"],
        capture_output=True, timeout=60, env={**os.environ, "HTTPS_PROXY": "http://127.0.0.1:9"})
    assert done.returncode == 0, (done.stderr, done.stdout)
    return done.stdout


def test_wireguard_mode_intercepts_a_device_through_its_tunnel(wireguard: Tunnel) -> None:
    """The device dials 10.253.0.1:443 (which exists nowhere: only the tunnel carries it), TLS naming Gemini's
    host; the proxy on the tunnel's other end injects the session's tools and captures the call."""
    assert wireguard.config["Endpoint"] == f"{PROXY_SIDE}:{wireguard.stack.proxy_port}", wireguard.config
    with inside(wireguard.stack.ns):
        run(set_tools(wireguard.stack, "wg", [WEATHER]))
        data = curl(wireguard.device, GL, GENERATE, {"contents": [user("<session:wg> call get_weather city=Lima")]},
                    wireguard.stack.ca_cert)
        sent = wireguard.stack.received[-1]
        assert [d["name"] for d in sent["body"]["tools"][0]["functionDeclarations"]] == ["get_weather"]
        assert sent["body"]["contents"] == [user("call get_weather city=Lima")]
        assert json.loads(data)["candidates"][0]["content"]["parts"][0]["functionCall"] == {
            "name": "get_weather", "args": {"city": "Lima"}}
        assert run(session_state(wireguard.stack, "wg"))["rounds"][-1]["calls"][0]["name"] == "get_weather"
        # Another server name through the same tunnel passes as the device wrote it.
        raw = {"contents": [user("<session:wg> call get_weather city=Lima")]}
        curl(wireguard.device, FOREIGN_HOST, GENERATE, raw, wireguard.stack.ca_cert)
        assert wireguard.stack.received[-1]["body"] == raw


# -- local mode: one program's connections, caught by mitmproxy's eBPF redirector ---------------------------

def test_local_mode_intercepts_one_program_by_its_name(tmp_path: Path) -> None:
    """`--mode local:NAME` on Linux: mitmproxy's redirector (run through sudo, as root too) attaches an eBPF
    program to the cgroup2 root that sends the sockets of processes named NAME into its TUN device. This
    machine mounts cgroup v1 at /sys/fs/cgroup (cgroup2 under .../unified), where attaching fails ("failed to
    attach cgroup_sock_create program: bpf_link_create failed: Bad file descriptor"): the proxy runs in a
    mount namespace of its own with cgroup2 at /sys/fs/cgroup. The program is curl under a name of its own:
    nothing else on the machine matches."""
    name = f"gtp{uuid.uuid4().hex[:8]}"  # a process name (comm) of at most 15 characters
    program = tmp_path / name
    with network_namespace() as ns:
        if shutil.which("sudo") is None or shutil.which("unshare") is None:
            pytest.fail("local mode needs sudo and unshare: scripts/system_deps.sh installs them (Debian: sudo)")
        shutil.copy(shutil.which("curl") or "curl", program)
        with inside(ns):
            stack = NamespaceStack(tmp_path, ns, f"local:{name}",
                                     wrap=("unshare", "-m", "sh", "-c", "mount -t cgroup2 none /sys/fs/cgroup && exec"))
        try:
            if "eBPF initialization failed" in stack.logs() or stack.proc.poll() is not None:
                pytest.fail(f"the local redirector did not start:\n{stack.logs()}")
            with inside(ns):
                run(set_tools(stack, "local", [WEATHER]))
                try:  # the redirector logs an eBPF failure after it "started"
                    data = curl(ns, GL, GENERATE, {"contents": [user("<session:local> call get_weather city=Quito")]},
                                stack.ca_cert, program=str(program))
                except AssertionError as e:
                    pytest.fail(f"{e}\n{stack.logs()}")
                sent = stack.received[-1]
                assert [d["name"] for d in sent["body"]["tools"][0]["functionDeclarations"]] == ["get_weather"]
                assert json.loads(data)["candidates"][0]["content"]["parts"][0]["functionCall"] == {
                    "name": "get_weather", "args": {"city": "Quito"}}
                assert run(session_state(stack, "local"))["rounds"][-1]["calls"][0]["name"] == "get_weather"
        finally:
            stack.close()


# -- regular mode: the TLS server name decides, not the CONNECT host ------------------------------

@pytest.fixture(scope="module")
def regular(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MitmStack]:
    stack = MitmStack(tmp_path_factory.mktemp("regular"))
    yield stack
    stack.close()


def tunnel(m: MitmStack, connect_host: str, server_name: str, host_header: str, body: dict) -> tuple[int, bytes]:
    """CONNECT to one host, TLS naming another: mitmproxy dials the first and sends and verifies the second
    upstream (seen with a real mitmdump, both connection strategies)."""
    host, port = m.proxy_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.sendall(f"CONNECT {connect_host}:443 HTTP/1.1\r\nHost: {connect_host}:443\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(4096) or b"!eof\r\n\r\n"
    assert answer.startswith(b"HTTP/1.1 200"), answer
    return _post_over(m.client_ssl().wrap_socket(sock, server_hostname=server_name), host_header, GENERATE, body)


def test_regular_mode_judges_by_the_tls_server_name(regular: MitmStack) -> None:
    """CONNECT to another name, TLS naming Gemini's host: Gemini's certificate answers, so it is ours."""
    run(set_tools(regular, "sni", [WEATHER]))
    body = {"contents": [user("<session:sni> call get_weather city=Oslo")]}
    status, data = tunnel(regular, FOREIGN_HOST, GL, GL, body)
    assert status == 200, data
    sent = regular.received[-1]
    assert [d["name"] for d in sent["body"]["tools"][0]["functionDeclarations"]] == ["get_weather"]
    assert sent["body"]["contents"] == [user("call get_weather city=Oslo")]
    assert json.loads(data)["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "get_weather"


def test_regular_mode_leaves_a_tunnel_to_gemini_naming_another_server_alone(regular: MitmStack) -> None:
    """CONNECT to Gemini's host, TLS naming another server: that server's certificate answers, not Gemini's,
    whatever the Host header says."""
    run(set_tools(regular, "sni", [WEATHER]))
    raw = {"contents": [user("<session:sni> call get_weather city=Oslo")]}
    for host_header in (GL, FOREIGN_HOST):
        status, _ = tunnel(regular, GL, FOREIGN_HOST, host_header, raw)
        assert status == 200
        sent = regular.received[-1]
        assert sent["headers"]["Host"] == host_header and sent["body"] == raw, "untouched"


# -- a mode naming its own address is held to the same refusal ---------------------------------------

@pytest.mark.parametrize("mode", ["regular@0.0.0.0:0", "transparent@0.0.0.0:0", "wireguard@0.0.0.0:0",
                                  "socks5@0.0.0.0:0"])
def test_a_mode_listening_on_every_interface_is_refused_without_authentication(tmp_path: Path, mode: str) -> None:
    """`--mode regular@0.0.0.0:8080` listens where --listen-host does not say: it used to start an
    unauthenticated proxy on every interface, past the refusal that --listen-host 0.0.0.0 meets."""
    proc = subprocess.run([sys.executable, "-m", "proxy", "mitm", "--mode", mode, "--port", "0",
                           "--confdir", str(tmp_path / "ca")], cwd=ROOT, capture_output=True, text=True, timeout=90,
                          env={**os.environ, "GTP_API_KEYS": ""})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"refusing to intercept on 0.0.0.0 (mode {mode})" in out, out
