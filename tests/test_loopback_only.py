"""tests/loopback_only.py, which the Antigravity client tests use to check that nothing leaves
loopback: inside, a direct connection to an outside address fails at once; the bridge port reaches
the host's listener, and each connection's first line is logged."""

import socket
import subprocess
import sys
import threading
from pathlib import Path

from tests.mitm_harness import ROOT

PROBE = """
import socket, sys
try:
    socket.create_connection(("192.0.2.1", 443), timeout=5)
    sys.exit("an outside address was reachable")
except OSError as e:
    print("outside:", e.errno)
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) as s:
    s.sendall(b"CONNECT example.org:443 HTTP/1.1\\r\\n\\r\\n")
    print("bridge:", s.recv(100).decode())
"""


def test_only_the_bridge_leads_out(tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(100)
            conn.sendall(b"hello from the host")

    threading.Thread(target=answer, daemon=True).start()
    log = tmp_path / "hosts.log"
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "loopback_only.py"), "--port", str(port), "--log",
                           str(log), "--", sys.executable, "-c", PROBE, str(port)],
                          capture_output=True, text=True, timeout=30)
    server.close()
    assert done.returncode == 0, done.stderr
    assert "outside: 101" in done.stdout, done.stdout  # ENETUNREACH: no route but loopback
    assert "bridge: hello from the host" in done.stdout
    assert log.read_text() == "CONNECT example.org:443 HTTP/1.1\n"
