"""Issue 60 item 4, the rough edges found on the way: each as the process a user runs shows it.

a. a bare `mitmdump -s proxy/addon_script.py` listens on 127.0.0.1 and uses the project's certs
   directory (its CA and carrier keys), as `gemini-tool-proxy mitm` does (the installed package's
   line: tests/test_wheel.py);
b. a keyless request to the mock is told no key was sent and how to send one;
c. the certs directory is 0700 (made so, or tightened with a warning);
d. `mitm` says where its CA is and how clients trust it;
e. `mitm` logs each line once, at the level asked;
f. a bad option value is one line with the reason and a pointer to --help;
g. a closed stdout (`inspect | head`) ends quietly;
h. the shared journal's "Redis is down" is logged once per change, not every second;
i. `carrier-key --file` refuses a missing directory instead of making it without a word.
"""

import json
import os
import re
import signal
import socket
import ssl
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from proxy.ca import CA_CERT, CA_KEY_AND_CERT
from proxy.certs_dir import CERTS_DIR
from tests.mitm_harness import MITMDUMP, ROOT, free_port, stop
from tests.servers import RedisServer

PY = [sys.executable, "-m", "proxy"]


def _run(*args: str, **kwargs: object) -> subprocess.CompletedProcess:
    return subprocess.run([*PY, *args], cwd=ROOT, capture_output=True, text=True, timeout=60, **kwargs)


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


def _wait_text(path: Path, text: str, proc: subprocess.Popen, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = path.read_text()
        if text in seen:
            return seen
        if proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode} before {text!r}:\n{seen}")
        time.sleep(0.1)
    raise AssertionError(f"no {text!r} within {timeout}s:\n{path.read_text()}")


def _outside_address() -> str | None:
    """This machine's address on a non-loopback interface, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def _through_proxy(proxy_port: int, cafile: Path) -> tuple[int, dict]:
    """generateContent through the proxy (CONNECT, TLS under the proxy's CA, only that CA trusted)."""
    ctx = ssl.create_default_context(cafile=str(cafile))
    handler = urllib.request.ProxyHandler({"https": f"http://127.0.0.1:{proxy_port}"})
    opener = urllib.request.build_opener(handler, urllib.request.HTTPSHandler(context=ctx))
    req = urllib.request.Request(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
        data=json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode(),
        headers={"content-type": "application/json", "x-goog-api-key": "demo"})
    with opener.open(req, timeout=20) as r:
        return r.status, json.loads(r.read())


# a. ------------------------------------------------------------------------------------------------

def test_a_bare_mitmdump_of_the_addon_listens_on_loopback_with_the_project_s_ca(tmp_path: Path) -> None:
    """mitmdump's own defaults are every interface and ~/.mitmproxy (a CA of its own): the addon, loaded
    by a mitmdump given nothing but `-s` (and a port), listens on 127.0.0.1 only and intercepts with the
    CA of the project's certs directory, where `mitm` and `serve` keep the CA and the carrier keys."""
    home = tmp_path / "home"
    home.mkdir()
    proxy_port, front_port = free_port(), free_port()
    log = tmp_path / "mitmdump.log"
    env = {**os.environ, "HOME": str(home), "PYTHONUNBUFFERED": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen([str(MITMDUMP), "-s", str(ROOT / "proxy" / "addon_script.py"), "-p", str(proxy_port),
                                 "--set", f"gtp_frontend_port={front_port}", "--set", "gtp_upstream=mock"],
                                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    try:
        seen = _wait_text(log, f"HTTP(S) proxy listening at 127.0.0.1:{proxy_port}", proc)
        _wait_text(log, "front-end listening", proc)
        assert "refusing to intercept" not in seen, seen
        outside = _outside_address()
        if outside:
            with socket.socket() as s:
                s.settimeout(2)
                assert s.connect_ex((outside, proxy_port)) != 0, f"the proxy answers on {outside}"
        status, body = _through_proxy(proxy_port, CERTS_DIR / CA_CERT)
        assert status == 200 and body["candidates"][0]["content"]["parts"], body
        assert (CERTS_DIR / CA_KEY_AND_CERT).is_file() and (CERTS_DIR / "carrier-keys").is_file()
        assert not (home / ".mitmproxy").exists(), "mitmproxy's own CA was made"
        assert str(CERTS_DIR / CA_CERT) in log.read_text()
    finally:
        stop(proc)


def test_the_addon_keeps_a_listen_host_and_a_confdir_the_user_gave(tmp_path: Path) -> None:
    """Set on mitmdump's command line, they stand (here: a confdir of the user's, made 0700)."""
    proxy_port = free_port()
    confdir = tmp_path / "mine"
    log = tmp_path / "mitmdump.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(MITMDUMP), "-s", str(ROOT / "proxy" / "addon_script.py"), "--listen-host",
                                 "127.0.0.1", "-p", str(proxy_port), "--set", f"confdir={confdir}",
                                 "--set", "gtp_frontend_port=-1"], stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=tmp_path)
    try:
        seen = _wait_text(log, f"CA certificate is {confdir / CA_CERT}", proc)
        assert seen.count("proxy listening at") == 1, "given on the command line: no second start"
    finally:
        stop(proc)


# b. ------------------------------------------------------------------------------------------------

def test_a_keyless_request_to_the_mock_says_no_key_was_sent_and_how_to_send_one(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([*PY, "mock", "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert "ready" in proc.stdout.readline()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1beta/models/gemini-2.5-flash:generateContent",
                                     data=b'{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}',
                                     headers={"content-type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        err = json.load(e.value)["error"]
        assert e.value.code == 403 and err["code"] == 403 and err["status"] == "PERMISSION_DENIED", err  # Google's
        assert err["message"].startswith("No API key was sent"), err
        assert "x-goog-api-key" in err["message"] and "GEMINI_API_KEY" in err["message"]
        assert "Any value works with the mock" in err["message"]
        req.add_header("x-goog-api-key", "anything")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


# c. ------------------------------------------------------------------------------------------------

def test_a_directory_made_for_the_ca_or_the_carrier_keys_is_0700(tmp_path: Path) -> None:
    """`ca --dir`, and the directory `serve` makes for its carrier keys on first use (the installed
    package's certs directory is made that way: it was 0755)."""
    r = _run("ca", "--dir", str(tmp_path / "new" / "certs"))
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE((tmp_path / "new" / "certs").stat().st_mode) == 0o700
    port = free_port()
    proc = subprocess.Popen([*PY, "serve", "--port", str(port), "--upstream", "mock", "--carrier-keys-file",
                             str(tmp_path / "keys" / "carrier-keys")], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert "ready" in proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "keys" / "carrier-keys").stat().st_mode) == 0o600


def test_the_project_s_certs_directory_looser_than_0700_is_tightened_with_a_warning() -> None:
    """A fresh clone's certs/ is 0755 (git keeps no directory modes): made 0700, and said so. (The
    installed package's directory, made on first use: tests/test_wheel.py.)"""
    assert CERTS_DIR == ROOT / "certs"
    os.chmod(CERTS_DIR, 0o755)
    r = _run("carrier-key")
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(CERTS_DIR.stat().st_mode) == 0o700
    assert f"{CERTS_DIR} (the CA key and carrier keys) was mode 0755" in r.stderr and "made it 0700" in r.stderr
    again = _run("carrier-key")
    assert again.returncode == 0 and "mode" not in again.stderr, "said once: it is 0700 now"


def test_a_directory_the_user_named_is_theirs_a_warning_only(tmp_path: Path) -> None:
    loose = tmp_path / "shared"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    r = _run("ca", "--dir", str(loose))
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(loose.stat().st_mode) == 0o755 and f"chmod 700 {loose}" in r.stderr


# d, e. --------------------------------------------------------------------------------------------

def _mitm(tmp: Path, *extra: str, ready: str | None = "front-end listening") -> tuple[str, str]:
    """`gemini-tool-proxy mitm ... EXTRA` until `ready` is logged (or its front-end answers), then
    stopped: its stdout and stderr."""
    proxy_port, front_port = free_port(), free_port()
    tmp.mkdir(exist_ok=True)
    out, err = tmp / "stdout", tmp / "stderr"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen([*PY, "mitm", "--listen-port", str(proxy_port), "--port", str(front_port),
                                 "--confdir", str(tmp / "certs"), "--upstream", "mock", *extra],
                                stdout=o, stderr=e, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        if ready:
            _wait_text(err, ready, proc)
        else:
            _wait_port(front_port, proc)
        time.sleep(0.5)
    finally:
        stop(proc)
    return out.read_text(), err.read_text()


def test_mitm_logs_each_line_once_and_says_where_its_ca_is(tmp_path: Path) -> None:
    out, err = _mitm(tmp_path, "--log-level", "INFO")
    both = out + err
    for line in ("Loading script", "HTTP(S) proxy listening at", "front-end listening at",
                 "built-in mock Gemini at"):
        assert both.count(line) == 1, (line, both)
    assert " DEBUG " not in both, "INFO asked: mitmdump's root logger at DEBUG no longer leaks"
    assert out == "", "log lines go to stderr, as serve's"
    cert = tmp_path / "certs" / CA_CERT
    assert both.count(f"CA certificate is {cert}") == 1
    for hint in (f"NODE_EXTRA_CA_CERTS={cert}", f"SSL_CERT_FILE={cert}", f"REQUESTS_CA_BUNDLE={cert}",
                 f"--cacert {cert}"):
        assert hint in err, hint


@pytest.mark.parametrize(("level", "shown", "hidden"), [
    ("WARNING", None, " INFO "),
    ("DEBUG", " DEBUG ", None),
])
def test_mitm_logs_at_the_level_asked(tmp_path: Path, level: str, shown: str | None, hidden: str | None) -> None:
    out, err = _mitm(tmp_path, "--log-level", level, ready=None if level == "WARNING" else "front-end listening")
    if shown:
        assert shown in err
    if hidden:
        assert hidden not in err and "listening" not in err, err


def test_mitm_quiet_and_json_are_respected(tmp_path: Path) -> None:
    out, err = _mitm(tmp_path / "json", "--log-format", "json")
    lines = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    assert any("front-end listening" in x["message"] for x in lines)
    assert all(x.startswith("{") for x in err.splitlines() if x and not x.startswith(" ")), err
    out, err = _mitm(tmp_path / "quiet", "--log-level", "INFO", "--", "-q", ready=None)
    assert "listening" not in err, "mitmdump's -q (errors only) wins over --log-level"


# f. ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "says"), [
    (["serve", "--port", "abc"], "gemini-tool-proxy serve: error: --port: invalid port value: 'abc'"),
    (["serve", "--port", "70000"], "gemini-tool-proxy serve: error: --port: must be a TCP port"),
    (["serve", "--no-such-option"], "gemini-tool-proxy serve: error: unrecognized arguments: --no-such-option"),
    (["mitm", "--mode", "nonsense"], "gemini-tool-proxy mitm: error: --mode: not a mitmproxy mode"),
    (["inspect", "--status", "maybe"], "gemini-tool-proxy inspect: error: --status: invalid choice: 'maybe'"),
    (["nonsense"], "gemini-tool-proxy: error: command: invalid choice"),
])
def test_a_bad_option_value_is_one_line_with_the_reason_and_a_pointer_to_help(args: list[str], says: str) -> None:
    r = _run(*args)
    assert r.returncode == 2, r
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "usage:" not in r.stderr, r.stderr
    assert lines[0].startswith(says), lines[0]
    prog = says.split(": error:")[0]
    assert lines[0].endswith(f"(see {prog} --help)"), lines[0]


# g. ------------------------------------------------------------------------------------------------

def _closed_stdout(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    """`args | head -0`: stdout a pipe whose reader is already gone (every write: EPIPE)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([*PY, *args], cwd=ROOT, stdout=write, stderr=subprocess.PIPE, input=stdin, text=True,
                              timeout=60)
    finally:
        os.close(write)


def test_a_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    key = "k" * 24
    port = free_port()
    proc = subprocess.Popen([*PY, "serve", "--port", str(port), "--upstream", "mock", "--api-key", key,
                             "--gemini-key", "g", "--carrier-keys-file", str(tmp_path / "ck")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert "ready" in proc.stdout.readline()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/responses", data=json.dumps(
            {"model": "gemini-2.5-flash", "input": "hi"}).encode(), headers={
            "content-type": "application/json", "authorization": f"Bearer {key}"})
        with urllib.request.urlopen(req, timeout=20) as r:
            assert r.status == 200
        url = f"http://127.0.0.1:{port}"
        listed = _run("inspect", "--url", url, "--key", key)
        assert listed.returncode == 0 and "ex_" in listed.stdout, listed
        exchange = re.search(r"\bex_\w+", listed.stdout).group(0)
        for args in (["inspect", "--url", url, "--key", key], ["inspect", exchange, "--url", url, "--key", key]):
            r = _closed_stdout(args)
            assert r.returncode == 141, (args, r.returncode, r.stderr)
            assert r.stderr == "", (args, r.stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    line = json.dumps({"text": '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'})
    r = _closed_stdout(["parse", "--dialect", "hermes"], stdin=(line + "\n") * 50)
    assert r.returncode == 141 and r.stderr == "", r.stderr


# h. ------------------------------------------------------------------------------------------------

def test_redis_going_away_is_logged_once_and_its_return_once(tmp_path: Path) -> None:
    """The shared journal's listener tries Redis again every second: it said so every second."""
    redis = RedisServer(tmp_path)
    port = free_port()
    err = tmp_path / "stderr"
    with err.open("w") as e:
        proc = subprocess.Popen([*PY, "serve", "--port", str(port), "--upstream", "mock", "--store", redis.url,
                                 "--carrier-keys-file", str(tmp_path / "ck")], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=e, text=True)
    try:
        assert "ready" in proc.stdout.readline()
        time.sleep(1)
        redis.stop()
        _wait_text(err, "lost Redis", proc, timeout=10)
        time.sleep(4)  # four retries
        redis.start()
        _wait_text(err, "listens to Redis again", proc, timeout=10)
        time.sleep(1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        redis.stop()
    lines = [x for x in err.read_text().splitlines() if "shared journal" in x]
    assert len(lines) == 2, lines
    assert " WARNING " in lines[0] and "lost Redis" in lines[0] and "again every second" in lines[0]
    assert " WARNING " in lines[1] and "listens to Redis again" in lines[1]


# i. ------------------------------------------------------------------------------------------------

def test_carrier_key_refuses_a_file_whose_directory_is_missing(tmp_path: Path) -> None:
    target = tmp_path / "typo" / "dir" / "carrier-keys"
    r = _run("carrier-key", "--file", str(target))
    assert r.returncode == 2, r
    [line] = r.stderr.splitlines()
    assert f"--file {target}: the directory {target.parent} does not exist" in line and "mkdir -m 700" in line
    assert not (tmp_path / "typo").exists(), "nothing made"
    target.parent.mkdir(parents=True)
    r = _run("carrier-key", "--file", str(target))
    assert r.returncode == 0 and stat.S_IMODE(target.stat().st_mode) == 0o600, r.stderr
