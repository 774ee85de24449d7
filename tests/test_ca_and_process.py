"""Our CA (what Python 3.13 clients demand), and the mitmdump process's life cycle."""

import asyncio
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509

from proxy.ca import CA_CERT, CA_KEY_AND_CERT, generate_ca
from tests.mitm_harness import MITMDUMP, ROOT, MitmStack


@pytest.mark.parametrize("key_type", ["rsa", "ec"])
def test_ca_has_the_extensions_strict_clients_require(tmp_path: Path, key_type: str) -> None:
    generate_ca(tmp_path, key_type=key_type)
    key_file = tmp_path / CA_KEY_AND_CERT
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in key_file.read_bytes() and b"PRIVATE KEY" not in (tmp_path / CA_CERT).read_bytes()
    cert = x509.load_pem_x509_certificate((tmp_path / CA_CERT).read_bytes())
    bc = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    ku = cert.extensions.get_extension_for_class(x509.KeyUsage)
    assert bc.critical and bc.value.ca and ku.critical and ku.value.key_cert_sign and ku.value.crl_sign
    cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
    with pytest.raises(FileExistsError):
        generate_ca(tmp_path)


def test_ca_command(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "proxy", "ca", "--dir", str(tmp_path / "c"), "--key-type", "ec"],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert "NODE_EXTRA_CA_CERTS=" in out and (tmp_path / "c" / CA_CERT).exists()


def mitmdump_with_a_busy_port(tmp_path: Path, which: str) -> tuple[int, subprocess.CompletedProcess, float]:
    """Run mitmdump + addon with either the proxy port or the front-end port already taken."""
    generate_ca(tmp_path / "ca")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        ports = ["--listen-port", str(port), "--set", "gtp_frontend_port=-1"] if which == "proxy" else [
            "--listen-port", "0", "--set", f"gtp_frontend_port={port}"]
        start = time.monotonic()
        proc = subprocess.run([str(MITMDUMP), "-s", str(ROOT / "addons" / "gemini_tools.py"), "--listen-host",
                               "127.0.0.1", "--set", f"confdir={tmp_path / 'ca'}", *ports],
                              capture_output=True, text=True, timeout=60)
    return port, proc, time.monotonic() - start


def test_busy_frontend_port_fails_fast(tmp_path: Path) -> None:
    port, proc, took = mitmdump_with_a_busy_port(tmp_path, "frontend")
    assert proc.returncode != 0 and took < 30
    assert f"front-end cannot listen on 127.0.0.1:{port}" in proc.stdout + proc.stderr


def test_busy_proxy_port_fails_fast(tmp_path: Path) -> None:
    _, proc, took = mitmdump_with_a_busy_port(tmp_path, "proxy")
    assert proc.returncode != 0 and took < 30
    assert "address already in use" in (proc.stdout + proc.stderr).lower()


def test_shutdown_is_prompt_with_an_open_sse_client(tmp_path: Path) -> None:
    m = MitmStack(tmp_path)

    async def hold_stream(ready: asyncio.Event) -> None:
        async with aiohttp.ClientSession() as s, s.post(
                f"{m.frontend_url}/v1/responses", json={"model": "gemini-2.5-flash", "stream": True,
                                                        "input": "[[mock:slow 5]] " + "word " * 30}) as r:
            await r.content.readline()
            ready.set()
            async for _ in r.content:
                pass

    async def scenario() -> float:
        ready = asyncio.Event()
        task = asyncio.create_task(hold_stream(ready))
        await asyncio.wait_for(ready.wait(), 20)
        took = await asyncio.to_thread(m.close)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return took

    took = asyncio.run(scenario())
    assert took < 10, f"mitmdump took {took:.1f} s to stop"
    assert m.proc.returncode is not None


def test_keys_are_not_logged(tmp_path: Path) -> None:
    m = MitmStack(tmp_path)
    try:
        async def call() -> None:
            async with aiohttp.ClientSession() as s, s.post(
                    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
                    json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
                    headers={"x-goog-api-key": "SECRET-KEY-123", "authorization": "Bearer SECRET-TOKEN-456"},
                    proxy=m.proxy_url, ssl=m.client_ssl()) as r:
                assert r.status == 200
        asyncio.run(call())
    finally:
        m.close()
    logs = m.logs() if not m.log.closed else (tmp_path / "mitmdump.log").read_text()
    assert "SECRET-KEY-123" not in logs and "SECRET-TOKEN-456" not in logs
    assert os.path.getsize(tmp_path / "mitmdump.log") > 0


@pytest.mark.parametrize("relay", [False, True])
def test_mitm_command_runs_the_proxy_and_front_end(tmp_path: Path, relay: bool) -> None:
    from tests.mitm_harness import free_port

    proxy_port, front_port = free_port(), free_port()
    extra = ["--upstream", "relay", "--", "--set", "gtp_relay=true {prompt}"] if relay else ["--upstream", "mock"]
    proc = subprocess.Popen([sys.executable, "-m", "proxy", "mitm", "--listen-port", str(proxy_port), "--port",
                             str(front_port), "--confdir", str(tmp_path / "certs"), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        deadline, seen = time.monotonic() + 30, ""
        while time.monotonic() < deadline and "front-end listening" not in seen:
            seen += proc.stdout.readline()
        assert f"HTTP(S) proxy listening at 127.0.0.1:{proxy_port}" in seen, seen
        assert "front-end listening" in seen, seen
        assert (tmp_path / "certs" / CA_CERT).exists(), "the CA is made on first run"
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{front_port}/healthz") as r:
            assert r.status == 200
    finally:
        proc.terminate()
        proc.wait(15)


def test_a_mitmdump_without_the_proxy_s_dependencies_exits_saying_what_to_run(tmp_path: Path) -> None:
    """A mitmdump installed on its own (pipx, brew) cannot import the addon's dependencies: it must not
    go on as a plain proxy that passes Gemini traffic untouched, and its message says what to run."""
    venv, uv = tmp_path / "bare", Path(sys.executable).with_name("uv")
    subprocess.run([str(uv), "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=120)
    subprocess.run([str(uv), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "-c",
                    str(ROOT / "requirements.lock"), "mitmproxy"], check=True, timeout=600)
    proc = subprocess.run([str(venv / "bin" / "mitmdump"), "-s", str(ROOT / "addons" / "gemini_tools.py"),
                           "--listen-host", "127.0.0.1", "--listen-port", "0", "--set", f"confdir={tmp_path / 'ca'}"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Error logged during startup, exiting" in out
    assert "gemini-tool-proxy's addon cannot load: No module named" in out
    assert f"This mitmdump runs Python from {venv}" in out and "run `gemini-tool-proxy mitm`" in out
