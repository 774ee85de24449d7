"""The image (Containerfile) built with podman, as scripts/container_build.sh builds it, and run: it answers
/healthz, its HEALTHCHECK passes, it runs as uid 10001, and its carrier keys are on the /data volume (0700/0600).
Needs root, podman, runc and debootstrap (scripts/system_deps.sh installs them as root)."""

import os
import shutil
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.servers import free_port

pytestmark = [pytest.mark.slow, pytest.mark.serial]
ROOT = Path(__file__).resolve().parents[1]
P = ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs"]


def _limits() -> list[str]:
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return ["--ulimit", f"nofile={hard}:{hard}", "--ulimit", "nproc=4096:4096"]


@pytest.fixture(scope="module")
def image():
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("podman", "runc", "debootstrap")):
        pytest.skip("needs root with podman, runc and debootstrap (scripts/system_deps.sh installs them as root)")
    tag = subprocess.run([str(ROOT / "scripts/container_build.sh"), "localhost/gemini-tool-proxy:test"],
                         check=True, capture_output=True, text=True, timeout=900).stdout.strip()
    return tag


def test_image_serves_healthy_as_non_root_with_keys_on_the_volume(image):
    name, vol, port = f"gtp-{uuid.uuid4().hex[:8]}", f"gtp-data-{uuid.uuid4().hex[:8]}", free_port()
    subprocess.run([*P, "run", "-d", "--name", name, *_limits(), "-p", f"127.0.0.1:{port}:8741",
                    "-v", f"{vol}:/data", "-e", "GTP_API_KEYS=a-client-key-of-16-chars", image,
                    "serve", "--host", "0.0.0.0", "--upstream", "mock"], check=True, capture_output=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    assert r.status == 200
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        assert subprocess.run([*P, "healthcheck", "run", name], capture_output=True).returncode == 0
        out = subprocess.run([*P, "exec", name, "sh", "-c",
                              "id -u; stat -c %a /data/gemini-tool-proxy/certs "
                              "/data/gemini-tool-proxy/certs/carrier-keys"],
                             check=True, capture_output=True, text=True).stdout.split()
        assert out == ["10001", "700", "600"]
    finally:
        subprocess.run([*P, "rm", "-f", "-t", "5", name], capture_output=True)
        subprocess.run([*P, "volume", "rm", "-f", vol], capture_output=True)
