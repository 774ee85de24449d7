"""The image (Containerfile) built with podman, as scripts/container_build.sh builds it, and run: it answers
/healthz, its HEALTHCHECK passes, it runs as uid 10001, and its carrier keys are on the /data volume (0700/0600).
Then the two-instance stack (scripts/stack.sh, the plain podman commands docs/deployment.md gives;
compose.yaml says the same, checked here): Redis, two instances on it, HAProxy in front; a tool loop
through HAProxy whose turns land on both instances, and a rolling restart under load without a failed
request. Needs root, podman, runc and debootstrap (scripts/system_deps.sh installs them as root)."""

import os
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import openai
import pytest
import yaml

from tests.conftest import WEATHER
from tests.servers import ResponsesLoad, free_port

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
    # The proxy's image and the stack's Redis + HAProxy one, as the docs build them.
    subprocess.run([str(ROOT / "scripts/stack.sh"), "build"], env=os.environ | IMAGES, check=True,
                   capture_output=True, text=True, timeout=900)
    return IMAGES["GTP_IMAGE"]


IMAGES = {"GTP_IMAGE": "localhost/gemini-tool-proxy:test", "GTP_TOOLS_IMAGE": "localhost/gtp-tools:test"}


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


COMPOSE = Path(sys.executable).parent / "podman-compose"  # the test extra's (PyPI: Debian's 1.0.3 cannot run it)
MODEL = "gemini-3-flash-preview"  # thought signatures required: a turn on the other instance must find them


class Stack:
    """One stack, brought up by scripts/stack.sh or by podman-compose from compose.yaml (the same
    container names: stack.sh's `wait` and `restart` serve both)."""

    def __init__(self, how: str, tmp: Path) -> None:
        self.how, self.tmp = how, tmp
        self.env = os.environ | IMAGES | {"GTP_STACK": f"gtp-{how[0]}{uuid.uuid4().hex[:6]}",
                                          "GTP_STACK_PORT": str(free_port())}
        self.name, self.url = self.env["GTP_STACK"], f"http://127.0.0.1:{self.env['GTP_STACK_PORT']}"

    def run(self, *args: str, timeout: float = 120) -> str:
        return self._run([str(ROOT / "scripts/stack.sh"), *args], timeout)

    def _run(self, argv: list[str], timeout: float = 120) -> str:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-3000:] + self.logs()
        return done.stdout

    def compose(self, *args: str) -> str:
        # The tests' one change: the mock upstream (an override file, as a user would add theirs).
        override = self.tmp / "compose.override.yaml"
        override.write_text(yaml.safe_dump({"services": {
            f"p{n}": {"command": [*yaml.safe_load((ROOT / "compose.yaml").read_text())["services"][f"p{n}"]["command"],
                                  "--upstream", "mock"]} for n in (1, 2)}}))
        return self._run([str(COMPOSE),
                          "--podman-args=--runtime runc --cgroup-manager=cgroupfs",
                          "-f", str(ROOT / "compose.yaml"), "-f", str(override), "-p", self.name, *args])

    def up(self) -> None:
        if self.how == "script":
            self.run("up", "--upstream", "mock")
        else:
            self.compose("up", "-d", "--no-build")
            self.run("wait")

    def down(self) -> None:
        if self.how == "script":
            self.run("down", "-v")
        else:
            self.compose("down", "-v", "-t", "5")

    def served(self, n: int, route: str) -> int:
        return self.instance_logs(n).count(f"gtp.access: POST {route} 200")

    def instance_logs(self, n: int) -> str:
        done = subprocess.run([*P, "logs", f"{self.name}-p{n}"], capture_output=True, text=True)
        return done.stdout + done.stderr

    def logs(self) -> str:
        return "".join(f"\n--- p{n}:\n{self.instance_logs(n)[-2000:]}" for n in (1, 2))

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key="a-client-key", max_retries=0, timeout=30)


@pytest.fixture(scope="module", params=["script", "compose"])
def stack(request, image, tmp_path_factory):
    if request.param == "compose" and not COMPOSE.exists():
        pytest.fail("podman-compose is missing: it is in the test extra (requirements.lock)")
    s = Stack(request.param, tmp_path_factory.mktemp("stack"))
    try:
        s.up()
        yield s
    finally:
        s.down()


def test_stack_tool_loop_through_haproxy_lands_on_both_instances(stack: Stack) -> None:
    client = stack.client()
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER["parameters"]}}
    messages: list = [{"role": "user", "content": "call get_weather city=Lima"}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=[tool])
    msg = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls" and msg.tool_calls, first
    messages += [msg.model_dump(exclude_none=True),
                 *[{"role": "tool", "tool_call_id": c.id, "content": "cloudy"} for c in msg.tool_calls]]
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=[tool])
    assert second.choices[0].finish_reason == "stop" and second.choices[0].message.content, second
    # Round robin: one turn on each instance; the second found the first's signature in Redis.
    assert [stack.served(n, "/v1/chat/completions") for n in (1, 2)] == [1, 1], stack.logs()
    # A chained Responses loop too: the stored response is read by the other instance.
    r1 = client.responses.create(model=MODEL, input="call get_weather city=Oslo", tools=[WEATHER])
    call = next(o for o in r1.output if o.type == "function_call")
    r2 = client.responses.create(model=MODEL, previous_response_id=r1.id, tools=[WEATHER],
                                 input=[{"type": "function_call_output", "call_id": call.call_id, "output": "snow"}])
    assert r2.status == "completed" and r2.output_text, r2
    assert [stack.served(n, "/v1/responses") for n in (1, 2)] == [1, 1], stack.logs()


# On the compose stack only (the script's runs the same containers, checked against compose.yaml below,
# and the same `stack.sh restart`): a second rolling restart costs CI a minute and proves nothing more.
@pytest.mark.parametrize("stack", ["compose"], indirect=True)
def test_stack_rolling_restart_under_load_fails_no_request(stack: Stack) -> None:
    before = [stack.served(n, "/v1/responses") for n in (1, 2)]
    with ResponsesLoad(stack.client, MODEL) as load:
        time.sleep(1.0)
        out = stack.run("restart")
        time.sleep(1.5)
    results, failures = load.results, load.failures
    total = sum(results.values())
    print("rolling restart in containers:", dict(results), out, sep="\n  ")
    assert out.split() == ["p1", "restarted", "p2", "restarted"]
    assert not failures, f"{len(failures)} of {total} failed: {failures[:5]}" + stack.logs()
    assert results["streamed", True] > 20 and results["whole", True] > 20, results
    # Each instance was stopped with SIGTERM (the drain) and served again after its restart: podman
    # logs keeps both runs' lines, the second run's "ready" line after the drain's.
    for n in (1, 2):
        logs = stack.instance_logs(n)
        assert "SIGTERM: draining for 3 s" in logs, logs[-2000:]
        after = logs[logs.index("SIGTERM: draining"):]
        assert after.count("gtp.access: POST /v1/responses 200") > 0 and "ready" in after
    assert all(stack.served(n, "/v1/responses") > b for n, b in zip((1, 2), before, strict=True))


def test_compose_yaml_describes_the_stack_the_script_runs() -> None:
    """The tests above run both; this says they run the same stack."""
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    script = (ROOT / "scripts/stack.sh").read_text()
    services = compose["services"]
    assert set(services) == {"haproxy", "redis", "p1", "p2"}
    assert services["haproxy"]["ports"] == ["127.0.0.1:${GTP_STACK_PORT:-8741}:8741"]
    assert '-p "127.0.0.1:$PORT:8741"' in script and 'PORT="${GTP_STACK_PORT:-8741}"' in script
    for svc in services:
        assert services[svc]["container_name"] == f"${{GTP_STACK:-gtp}}-{svc}"
    assert services["haproxy"]["command"] == ["haproxy", "-db", "-f", "/etc/gtp/haproxy.cfg"]
    assert "./deploy/haproxy.cfg:/etc/gtp/haproxy.cfg:ro" in services["haproxy"]["volumes"]
    assert "redis-server --bind 127.0.0.1 --port 6379 --save \"\" --appendonly no" in script
    assert services["redis"]["command"] == ["redis-server", "--bind", "127.0.0.1", "--port", "6379", "--save", "",
                                            "--appendonly", "no"]
    cfg = (ROOT / "deploy/haproxy.cfg").read_text()
    for n in (1, 2):
        svc = services[f"p{n}"]
        assert svc["network_mode"] == "service:haproxy" and services["redis"]["network_mode"] == "service:haproxy"
        assert svc["command"] == ["serve", "--port", f"875{n}", "--store", "redis://127.0.0.1:6379/0",
                                  "--drain-seconds", "3", "--shutdown-timeout", "10"]
        assert f"GTP_HEALTH_PORT=875{n}" in svc["environment"] and svc["volumes"] == ["gtp-data:/data"]
        assert f"server p{n} 127.0.0.1:875{n} check inter 200ms fall 2 rise 1" in cfg
        assert svc["build"]["dockerfile"] == "Containerfile"
    assert 'serve --port "875$n" --store redis://127.0.0.1:6379/0 --drain-seconds "$DRAIN"' in script
    assert 'DRAIN="${GTP_DRAIN_SECONDS:-3}"' in script and "SHUTDOWN=10" in script
    assert services["p2"]["depends_on"] == {"p1": {"condition": "service_healthy"}}
    assert services["haproxy"]["build"]["dockerfile"] == "Containerfile.tools"
    assert "option httpchk GET /readyz" in cfg and "retries 0" in cfg and "timeout check 2s" in cfg
