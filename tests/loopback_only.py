"""Run a command in a network namespace of its own, with only its loopback, whose sole way out is one
port bridged to the MITM on the host's loopback: a client that ignores HTTPS_PROXY, or dials an
address itself, fails at once instead of reaching the Internet. Each connection's first line (the
proxy request: `CONNECT host:443 HTTP/1.1`) is appended to --log, so a test can say which hosts the
client asked for.

    python tests/loopback_only.py --port 8080 --log hosts.log -- CMD ARGS...

Inside, 127.0.0.1:PORT is the bridge (so HTTPS_PROXY=http://127.0.0.1:PORT); the command's own
servers on other loopback ports are its own. Needs CAP_SYS_ADMIN (root) or unprivileged user
namespaces; exits 97 when neither is there.
"""

import argparse
import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
PR_SET_PDEATHSIG = 1
NO_NAMESPACE = 97


def _die_with_parent() -> None:
    """Killed with the process that started us (the relay kills only the command it started)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := a.recv(65536):
            b.sendall(data)
    with contextlib.suppress(OSError):
        b.shutdown(socket.SHUT_WR)


def _join(a: socket.socket, b: socket.socket, first: bytes = b"") -> None:
    if first:
        b.sendall(first)
    threading.Thread(target=_pipe, args=(a, b), daemon=True).start()
    threading.Thread(target=_pipe, args=(b, a), daemon=True).start()


def _serve(listener: socket.socket, connect, log: str | None) -> None:
    while True:
        conn, _ = listener.accept()
        first = b""
        if log:
            with contextlib.suppress(OSError):
                conn.settimeout(10)
                first = conn.recv(65536)
                conn.settimeout(None)
            with open(log, "a") as f:
                f.write(first.split(b"\r\n", 1)[0].decode(errors="replace") + "\n")
        try:
            _join(conn, connect(), first)
        except OSError:
            conn.close()


def _lo_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH14x", b"lo", 0)))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def _unshare() -> bool:
    uid, gid = os.getuid(), os.getgid()
    try:
        os.unshare(os.CLONE_NEWNET)
        return True
    except PermissionError:
        pass
    try:
        os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNET)
    except (PermissionError, OSError):
        return False
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")
    return True


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True, help="the MITM's port on the host's 127.0.0.1")
    p.add_argument("--log", help="append each connection's first line here")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    path = os.path.join(tempfile.mkdtemp(prefix="gtp-lo-"), "bridge")
    outside = socket.socket(socket.AF_UNIX)
    outside.bind(path)  # a filesystem socket: reachable from any network namespace
    outside.listen(64)
    child = os.fork()
    if child == 0:
        _die_with_parent()
        outside.close()
        if not _unshare():
            print("loopback_only: cannot make a network namespace (needs root or user namespaces)", file=sys.stderr)
            os._exit(NO_NAMESPACE)
        _lo_up()
        inside = socket.create_server(("127.0.0.1", args.port), backlog=64)

        def to_bridge() -> socket.socket:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            return s

        threading.Thread(target=_serve, args=(inside, to_bridge, args.log), daemon=True).start()
        os._exit(subprocess.run(command, preexec_fn=_die_with_parent).returncode)
    threading.Thread(target=_serve, args=(outside, lambda: socket.create_connection(("127.0.0.1", args.port)), None),
                     daemon=True).start()
    _, status = os.waitpid(child, 0)
    os.unlink(path)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
