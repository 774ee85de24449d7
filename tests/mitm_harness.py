"""A real `mitmdump -s addons/gemini_tools.py` on loopback, in front of the mock Gemini served over TLS
under Google's host names (a throwaway upstream CA; the proxy routes those hosts to the mock)."""

import datetime
import os
import random
import re
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from proxy.ca import generate_ca
from proxy.mock.server import ACCEPTED, RECEIVED, start_mock
from tests.harness import LoopThread

ROOT = Path(__file__).resolve().parents[1]
MITMDUMP = Path(sys.executable).with_name("mitmdump")
GOOGLE_HOSTS = ["generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "daily-cloudcode-pa.googleapis.com",
                "daily-cloudcode-pa.sandbox.googleapis.com", "autopush-cloudcode-pa.sandbox.googleapis.com",
                "us-central1-aiplatform.googleapis.com", "aiplatform.googleapis.com", "www.googleapis.com"]
FOREIGN_HOST = "not-google.example"  # also served by the mock's certificate: a destination the addon must leave alone


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout`."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def free_port() -> int:
    """A port free now, for a process about to listen on it. Under pytest-xdist each worker draws from its
    own slice of the 10,000 ports below the kernel's ephemeral range, so two workers never pick the same
    port in the moment between this check and the process's bind, and neither does the kernel: it gives
    binds to port 0 and connect()s ports from the ephemeral range only. (Drawn from that range, a
    front-end's port was once taken by another test's outgoing connection in that moment: "address
    already in use".) A server that can start on port 0 and announce its port (servers.Process.url)
    leaves no such moment. Without xdist (the serial pass) the one worker has the whole slice, and no
    port is handed out twice: drawn from port 0 there, a front-end's port once answered another
    server's 404s (its mock's, handed the same port, or a port taken in the moment)."""
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    if lo > 11_024:
        lo, hi = lo - 10_000, lo - 1
    width = (hi - lo) // count
    while True:
        port = random.randrange(lo + worker * width, lo + (worker + 1) * width)
        if port in _GIVEN:  # two servers started one after the other must not be handed the same port
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            _GIVEN.add(port)
            return port


_GIVEN: set[int] = set()  # ports free_port handed out in this process


def upstream_tls(tmp: Path) -> tuple[ssl.SSLContext, Path]:
    """Server context for the mock posing as Google, and the CA file mitmproxy must trust for it."""
    ca_dir = tmp / "upstream-ca"
    generate_ca(ca_dir, key_type="ec", common_name="test upstream CA")
    pem = (ca_dir / "mitmproxy-ca.pem").read_bytes()
    ca_key = serialization.load_pem_private_key(pem, None)
    ca_cert = x509.load_pem_x509_certificate(pem)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, GOOGLE_HOSTS[0])]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in [*GOOGLE_HOSTS, FOREIGN_HOST]]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (tmp / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (tmp / "leaf.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp / "leaf.pem", tmp / "leaf.key")
    return server, ca_dir / "mitmproxy-ca-cert.pem"


class MitmStack:
    """mock (TLS) <- mitmdump + addon (+ front-end) <- test clients."""

    def __init__(self, tmp: Path, *extra: str, frontend_upstream: str = "mock", listen_port: int = 0,
                 upstream_app: Any = None) -> None:
        """`upstream_app`: an aiohttp app to serve under Google's host names instead of the mock."""
        self.tmp = tmp
        self.lt = LoopThread()
        server_ctx, upstream_ca = upstream_tls(tmp)
        self.mock_runner, self.mock_url, self.mock_app = self.lt.run(start_mock(ssl_context=server_ctx,
                                                                                app=upstream_app))
        mock_port = int(self.mock_url.rsplit(":", 1)[1])
        self.confdir = tmp / "proxy-ca"
        self.ca_cert = self.confdir / "mitmproxy-ca-cert.pem"
        if not self.ca_cert.exists():
            generate_ca(self.confdir)
        self.frontend_port = free_port()
        self.log = open(tmp / "mitmdump.log", "w+")  # noqa: SIM115 - closed in close()
        cmd = [str(MITMDUMP), "-s", str(ROOT / "addons" / "gemini_tools.py"), "--listen-host", "127.0.0.1",
               "--listen-port", str(listen_port), "--set", f"confdir={self.confdir}",
               "--set", "connection_strategy=lazy",
               "--set", f"ssl_verify_upstream_trusted_ca={upstream_ca}",
               "--set", f"gtp_route=127.0.0.1:{mock_port}",
               "--set", f"gtp_frontend_port={self.frontend_port}", "--set", f"gtp_upstream={frontend_upstream}",
               "--set", "flow_detail=0", *extra]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        self.proxy_url = self._wait_for(r"HTTP\(S\) proxy listening at (\S+?)\.?$", 30)
        self.frontend_url = f"http://127.0.0.1:{self.frontend_port}"
        self._wait_for(r"front-end listening at", 15)

    def _wait_for(self, pattern: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.log.seek(0)
            for line in self.log.read().splitlines():
                if m := re.search(pattern, line.strip()):
                    return "http://" + m.group(1) if m.groups() else line
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.log.seek(0)
        raise RuntimeError(f"mitmdump did not log {pattern!r}:\n{self.log.read()}")

    def client_ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_cert))
        ctx.verify_flags |= ssl.VERIFY_X509_STRICT  # what Python 3.13 clients do by default
        return ctx

    @property
    def accepted(self) -> int:
        """How many requests the mock accepted so far (RECEIVED keeps only the latest)."""
        return self.mock_app[ACCEPTED][0]

    @property
    def received(self) -> list[dict]:
        return list(self.mock_app[RECEIVED])

    def logs(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def close(self) -> float:
        """Stop mitmdump with SIGTERM; returns how long it took to exit."""
        start = time.monotonic()
        stop(self.proc)
        took = time.monotonic() - start
        self.lt.run(self.mock_runner.cleanup())
        self.lt.stop()
        self.log.close()
        return took
