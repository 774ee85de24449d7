"""The artifact users install: the sdist and wheel are built, the wheel installed into a fresh venv
with no checkout on sys.path, and every command run from a directory outside the checkout: `serve`
(memory and a real Redis), `mock`, `mitm` (a real mitmdump loading the addon from site-packages),
`parse`, `ca`, `carrier-key`; and `uv tool install` of the wheel, as a user would, serving the mock.

Every other test imports the source tree, which is how a missing package-data file (the Redis store's
Lua script) reached users unseen.
"""

import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.request
import zipfile
from email.message import Message
from pathlib import Path

import anthropic
import openai
import pytest

from tests.mitm_harness import ROOT, free_port
from tests.servers import Process, RedisServer

pytestmark = pytest.mark.slow
UV = Path(sys.executable).with_name("uv")


def _clean_env(tmp: Path) -> dict[str, str]:
    """The environment of a user who never saw the checkout: no PYTHONPATH, no project venv on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT)))
    env["HOME"] = str(tmp / "home")
    env.pop("XDG_DATA_HOME", None)
    return env


def _clean_copy(dest: Path) -> Path:
    """The tree as a fresh clone has it (tracked and new files, nothing ignored): a checkout's own
    `*.egg-info/SOURCES.txt` from an editable install would otherwise smuggle files into the build."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and wheel as `python -m build` (PyPA's front-end) makes them, and its output ("log").
    No isolation: the lock's setuptools, offline, and the same version each run, so a warning is the
    project's and not a new release's (build still checks it is within [build-system]'s bound)."""
    out = tmp_path_factory.mktemp("dist")
    src = _clean_copy(tmp_path_factory.mktemp("src"))
    # (where PYTHONDONTWRITEBYTECODE is set, as on these machines, setuptools warns it skips byte-compiling:
    # the machine's doing, not the package's; a wheel holds no bytecode either way)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # No --sdist/--wheel: the wheel is built from the sdist, as a release (and pip install of an sdist) does.
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    [wheel] = out.glob("*.whl")
    [sdist] = out.glob("*.tar.gz")
    log = tmp_path_factory.mktemp("build-log") / "build.log"
    log.write_text(r.stdout + r.stderr)
    return {"wheel": wheel, "sdist": sdist, "log": log}


# Lines of a build's output that only name the files it copies.
LISTING = ("copying ", "adding '", "creating ", "removing ", "writing ", "reading ")


def test_the_build_is_warning_free_and_twine_check_strict_passes(built: dict[str, Path]) -> None:
    """What the ecosystem's checks ask (issue 60 item 5): no warning from the build (setuptools'
    deprecations, a License classifier beside a license expression, a file the configuration names
    and that is missing) and a clean `twine check --strict` of both files."""
    log = built["log"].read_text()
    assert "Successfully built" in log, log[-3000:]
    warned = [line for line in log.splitlines() if not line.startswith(LISTING)
              and (re.search(r"(?i)\bwarning\b|deprecat|\berror\b", line) or line.strip() == "!!")]
    assert warned == [], "\n".join(warned)
    r = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(built["sdist"]), str(built["wheel"])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.count("PASSED") == 2, r.stdout + r.stderr


def _metadata(raw: bytes) -> Message:
    return email.parser.BytesParser().parsebytes(raw)


def test_the_metadata_has_the_license_expression_and_file_the_classifiers_and_urls(built: dict[str, Path]) -> None:
    """PEP 639 (Metadata 2.4): `License-Expression: MIT`, the LICENSE file named and shipped
    (`*.dist-info/licenses/LICENSE` in the wheel, at the top of the sdist), no License classifier;
    the classifiers and URLs pyproject.toml declares; `Typing :: Typed` with the py.typed marker."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    licence = (ROOT / "LICENSE").read_bytes()
    assert licence.startswith(b"MIT License") and b"The gemini-tool-proxy developers" in licence
    with zipfile.ZipFile(built["wheel"]) as z:
        [meta] = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        wheel_meta = _metadata(z.read(meta))
        assert z.read(meta.replace("METADATA", "licenses/LICENSE")) == licence
        assert "proxy/py.typed" in z.namelist()
    with tarfile.open(built["sdist"]) as t:
        top = t.getnames()[0].split("/")[0]
        sdist_meta = _metadata(t.extractfile(f"{top}/PKG-INFO").read())
        assert t.extractfile(f"{top}/LICENSE").read() == licence
    for m in (wheel_meta, sdist_meta):
        assert tuple(map(int, m["Metadata-Version"].split("."))) >= (2, 4), m["Metadata-Version"]
        assert m["License-Expression"] == "MIT" and m.get_all("License-File") == ["LICENSE"]
        assert m["License"] is None
        classifiers = m.get_all("Classifier")
        assert classifiers == project["classifiers"] and not [c for c in classifiers if c.startswith("License ::")]
        for c in ("Programming Language :: Python :: 3.12", "Programming Language :: Python :: 3.13",
                  "Framework :: AsyncIO", "Framework :: aiohttp", "Topic :: Internet :: Proxy Servers",
                  "Typing :: Typed"):
            assert c in classifiers, c
        urls = dict(u.split(", ", 1) for u in m.get_all("Project-URL") or [])
        assert urls == project.get("urls", {})
        assert m["Requires-Python"] == project["requires-python"] and m["Author"] == project["authors"][0]["name"]


@pytest.fixture(scope="module")
def installed(built: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A fresh venv holding only the wheel and its dependencies (at the lock's versions)."""
    tmp = tmp_path_factory.mktemp("user")
    (tmp / "home").mkdir()
    venv = tmp / "venv"
    subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=120)
    subprocess.run([str(UV), "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                    "-c", str(ROOT / "requirements.lock"), str(built["wheel"])], check=True, timeout=600)
    return {"bin": venv / "bin", "tmp": tmp, "env": _clean_env(tmp)}


def _run(inst: dict, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(inst["bin"] / "gemini-tool-proxy"), *args], input=stdin, capture_output=True,
                          text=True, cwd=inst["tmp"], env=inst["env"], timeout=120)


def _package_data() -> list[str]:
    """Every non-Python file under proxy/ (what the code may open at run time)."""
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "proxy").rglob("*")
                  if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts)


def test_every_data_file_is_in_the_wheel_and_the_sdist(built: dict[str, Path]) -> None:
    data = _package_data()
    assert "proxy/store/redis_entries.lua" in data
    names = set(zipfile.ZipFile(built["wheel"]).namelist())
    assert [d for d in data if d not in names] == []
    assert "proxy/addon_script.py" in names
    with tarfile.open(built["sdist"]) as t:
        sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert [d for d in data if d not in sdist] == []


def test_the_package_imported_is_the_installed_one(installed: dict) -> None:
    out = subprocess.run([str(installed["bin"] / "python"), "-c",
                          "import proxy, proxy.cli as c; print(proxy.__file__); print(c.ADDON_SCRIPT); "
                          "print(c.CERTS_DIR)"],
                         capture_output=True, text=True, cwd=installed["tmp"], env=installed["env"], check=True)
    module, addon, certs = out.stdout.split()
    assert "site-packages" in module and not module.startswith(str(ROOT))
    assert "site-packages" in addon and Path(addon).is_file()
    assert certs == str(installed["tmp"] / "home" / ".local" / "share" / "gemini-tool-proxy" / "certs")


def test_ca_and_carrier_key(installed: dict) -> None:
    tmp = installed["tmp"]
    r = _run(installed, "ca", "--dir", str(tmp / "ca"))
    assert r.returncode == 0, r.stderr
    keys = list((tmp / "ca").glob("*ca.pem"))
    assert keys and all(os.stat(k).st_mode & 0o777 == 0o600 for k in keys)
    r = _run(installed, "carrier-key", "--file", str(tmp / "ck" / "carrier-keys"))
    assert r.returncode == 2 and "does not exist" in r.stderr, "a directory the user named is never made silently"
    (tmp / "ck").mkdir()
    r = _run(installed, "carrier-key", "--file", str(tmp / "ck" / "carrier-keys"))
    assert r.returncode == 0, r.stderr
    assert os.stat(tmp / "ck" / "carrier-keys").st_mode & 0o777 == 0o600


def test_the_guide_s_bare_mitmdump_line_runs_as_written(installed: dict) -> None:
    """`mitmdump -s "$(python -c ...find_spec("proxy.addon_script").origin)"`, docs/mitm.md's line, from the
    installed venv: it listens on 127.0.0.1 (mitmdump's default is every interface), and uses the
    certs directory `gemini-tool-proxy mitm` and `serve` use (made 0700), not ~/.mitmproxy: the same CA
    and the same carrier keys. (Only a port and the front-end's port are added, to run beside others.)"""
    tmp, home = installed["tmp"], installed["tmp"] / "home"
    certs = home / ".local" / "share" / "gemini-tool-proxy" / "certs"
    shutil.rmtree(certs.parent, ignore_errors=True)
    r = _run(installed, "carrier-key")  # the default file: its directory is made, 0700, and said so
    assert r.returncode == 0 and f"made {certs} (mode 0700)" in r.stdout, (r.stdout, r.stderr)
    keys = (certs / "carrier-keys").read_text()
    proxy_port, front_port = free_port(), free_port()
    line = next(x for x in (Path(__file__).parents[1] / "docs" / "mitm.md").read_text().splitlines()
                if x.startswith("mitmdump -s \"$(python"))  # as the MITM guide gives it
    env = {**installed["env"], "PATH": f"{installed['bin']}{os.pathsep}{installed['env']['PATH']}"}
    proc = Process(tmp, "bare-mitmdump", ["bash", "-c", f"exec {line} -p {proxy_port} --set "
                                                        f"gtp_frontend_port={front_port}"],
                   "front-end listening", cwd=tmp, base_env=env, timeout=60)
    try:
        deadline = time.monotonic() + 15  # started again on loopback once the addon loaded (options.py)
        while f"HTTP(S) proxy listening at 127.0.0.1:{proxy_port}" not in proc.logs():
            assert time.monotonic() < deadline, proc.logs()
            time.sleep(0.1)
        assert f"CA certificate is {certs / 'mitmproxy-ca-cert.pem'}" in proc.logs()
        assert (certs / "mitmproxy-ca.pem").is_file() and os.stat(certs).st_mode & 0o777 == 0o700
        assert (certs / "carrier-keys").read_text() == keys, "the carrier keys serve and mitm use"
        assert not (home / ".mitmproxy").exists(), "mitmproxy's own CA was made"
        with urllib.request.urlopen(f"http://127.0.0.1:{front_port}/healthz") as r:
            assert r.status == 200
    finally:
        proc.stop()


def test_parse(installed: dict) -> None:
    tools = installed["tmp"] / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}]))
    line = json.dumps({"text": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'})
    r = _run(installed, "parse", "--dialect", "hermes", "--tools", str(tools), stdin=line + "\n")
    assert r.returncode == 0, r.stderr
    [out] = [json.loads(x) for x in r.stdout.splitlines()]
    assert [(c["name"], c["arguments"]) for c in out["calls"]] == [("get_weather", {"city": "Oslo"})]


def _serve_and_ask(inst: dict, name: str, *extra: str, exe: Path | None = None) -> str:
    port = free_port()
    exe = exe or inst["bin"] / "gemini-tool-proxy"
    proc = Process(inst["tmp"], name, [str(exe), "serve", "--port", str(port), "--upstream", "mock",
                                       "--carrier-keys-file", str(inst["tmp"] / f"{name}-ck"), *extra],
                   "ready", cwd=inst["tmp"], base_env=inst["env"])
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0,
                               _strict_response_validation=True)
        first = client.responses.create(model="gemini-2.5-flash", input="hello", store=True)
        assert first.status == "completed" and first.output_text
        again = client.responses.retrieve(first.id)
        assert again.id == first.id
        # The protocol folders, the WebSocket transport and compaction are in the wheel too.
        with client.responses.connect() as conn:
            conn.send({"type": "response.create", "model": "gemini-2.5-flash", "previous_response_id": first.id,
                       "input": "again"})
            while (event := conn.recv()).type not in ("response.completed", "response.failed", "error"):
                pass
            assert event.type == "response.completed", event
        lenient = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
        compacted = lenient.responses.compact(model="gemini-2.5-flash", previous_response_id=event.response.id)
        assert compacted.output[-1].type == "compaction"  # (the SDK types no user message there: not strict)
        claude = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0,
                                     _strict_response_validation=True)
        assert claude.messages.create(model="gemini-2.5-flash", max_tokens=50,
                                      messages=[{"role": "user", "content": "hello"}]).stop_reason == "end_turn"
        return proc.logs()
    finally:
        proc.stop()


def test_serve_on_memory(installed: dict) -> None:
    _serve_and_ask(installed, "serve-memory")


def test_serve_on_redis(installed: dict) -> None:
    redis = RedisServer(installed["tmp"] / "redis-store")
    try:
        logs = _serve_and_ask(installed, "serve-redis", "--store", redis.url)
        assert "FileNotFoundError" not in logs
    finally:
        redis.stop()


def test_mock(installed: dict) -> None:
    port = free_port()
    proc = Process(installed["tmp"], "mock", [str(installed["bin"] / "gemini-tool-proxy"), "mock", "--port",
                                              str(port)], "ready", cwd=installed["tmp"], base_env=installed["env"])
    try:
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1beta/models/gemini-2.5-flash:generateContent",
            data=json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode(),
            headers={"content-type": "application/json", "x-goog-api-key": "k"})
        with urllib.request.urlopen(req) as r:
            assert json.loads(r.read())["candidates"][0]["content"]["parts"]
    finally:
        proc.stop()


def test_mitm_runs_the_installed_addon_in_a_real_mitmdump(installed: dict) -> None:
    _mitm_listens(installed)


def _mitm_listens(inst: dict) -> None:
    proxy_port, front_port = free_port(), free_port()
    certs = inst["tmp"] / "mitm-certs"
    proc = Process(inst["tmp"], "mitm", [str(inst["bin"] / "gemini-tool-proxy"), "mitm", "--listen-port",
                                         str(proxy_port), "--port", str(front_port), "--confdir", str(certs),
                                         "--upstream", "mock"],
                   "front-end listening", cwd=inst["tmp"], base_env=inst["env"], timeout=60)
    try:
        assert f"HTTP(S) proxy listening at 127.0.0.1:{proxy_port}" in proc.logs()
        with urllib.request.urlopen(f"http://127.0.0.1:{front_port}/healthz") as r:
            assert r.status == 200
        assert any(certs.glob("*ca.pem")), "the CA is made on first run"
    finally:
        proc.stop()


def test_uv_tool_install_then_serve(built: dict[str, Path], installed: dict) -> None:
    """`uv tool install <wheel>` (resolving from the registry as a user would), then serve the mock."""
    tmp = installed["tmp"]
    env = {**installed["env"], "UV_TOOL_DIR": str(tmp / "uv-tools"), "UV_TOOL_BIN_DIR": str(tmp / "uv-bin")}
    r = subprocess.run([str(UV), "tool", "install", "-q", "--python", sys.executable, str(built["wheel"])],
                       capture_output=True, text=True, env=env, cwd=tmp, timeout=600)
    assert r.returncode == 0, r.stderr
    exe = tmp / "uv-bin" / "gemini-tool-proxy"
    assert exe.exists(), os.listdir(tmp / "uv-bin")
    _serve_and_ask(installed, "uv-tool-serve", exe=exe)
    shutil.rmtree(tmp / "uv-tools", ignore_errors=True)


# The supported Python this run is not on: 3.12 (what requires-python promises) under 3.13, 3.13 under 3.12.
OTHER = "3.13" if sys.version_info[:2] == (3, 12) else "3.12"


def _other_python() -> Path | None:
    """OTHER where these machines keep it (scripts/env.sh looks in the same places): GTP_PYTHON_OTHER,
    PATH, pyenv's installs, /usr/local/bin."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = [os.environ.get("GTP_PYTHON_OTHER"), shutil.which(f"python{OTHER}"),
             *sorted(map(str, pyenv.glob(f"{OTHER}.*/bin/python3")), reverse=True), f"/usr/local/bin/python{OTHER}"]
    for exe in filter(None, found):
        r = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                           text=True) if Path(exe).exists() else None
        if r is not None and r.stdout.strip() == OTHER:
            return Path(exe)
    return None


def test_the_wheel_on_the_other_supported_python(built: dict[str, Path], tmp_path: Path) -> None:
    """The suite runs on one Python; the wheel also runs on the other one it supports (CI: 3.12, the oldest
    requires-python allows): every module of the package imports there, serve answers the SDKs over every
    transport, and mitm starts a real mitmdump with the addon. A CI machine without it fails the run."""
    exe = _other_python()
    if exe is None:
        message = f"no Python {OTHER} found (PATH, pyenv, /usr/local/bin; or set GTP_PYTHON_OTHER)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    (tmp_path / "home").mkdir()
    venv = tmp_path / "venv"
    subprocess.run([str(UV), "venv", "-q", "--python", str(exe), str(venv)], check=True, timeout=120)
    subprocess.run([str(UV), "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                    "-c", str(ROOT / "requirements.lock"), str(built["wheel"])], check=True, timeout=600)
    inst = {"bin": venv / "bin", "tmp": tmp_path, "env": _clean_env(tmp_path)}
    every = ("import importlib, pkgutil, sys, proxy\n"
             "print('%d.%d' % sys.version_info[:2])\n"
             "for m in pkgutil.walk_packages(proxy.__path__, 'proxy.'):\n"
             "    if not m.name.endswith('__main__'):\n"
             "        importlib.import_module(m.name)\n"
             "        print(m.name)\n")
    out = subprocess.run([str(inst["bin"] / "python"), "-c", every], capture_output=True, text=True,
                         cwd=tmp_path, env=inst["env"], timeout=120)
    assert out.returncode == 0, out.stderr
    version, *modules = out.stdout.split()
    assert version == OTHER and "proxy.front.app" in modules and "proxy.intercept.journal_addon" in modules
    _serve_and_ask(inst, "serve-other-python")
    _mitm_listens(inst)
