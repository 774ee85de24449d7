"""The offline MITM demo (issue 58): `gemini-tool-proxy mitm --upstream mock` answers intercepted traffic
from the built-in mock — the Developer API, Code Assist and Antigravity's shapes, their account and
quota calls — so a newcomer sees the whole loop without a Google account: the real command, `curl`
through it to Google's real host names with the proxy's CA, and the real Gemini CLI. Nothing may leave
loopback: the requests never resolve a Google name (the lazy connection strategy, routed to the mock)."""

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.mitm_harness import free_port
from tests.npm_tools import npm_binary
from tests.servers import Process
from tests.test_gemini_cli import GEMINI_CLI_VERSION, run_cli
from tests.test_inspect_browser import browser, shot  # noqa: F401 (the fixture)

pytestmark = pytest.mark.slow
WEATHER = {"type": "function", "name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


class Demo:
    """`gemini-tool-proxy mitm --upstream mock`, as the README runs it."""

    def __init__(self, tmp: Path) -> None:
        self.port, self.frontend = free_port(), free_port()
        self.confdir = tmp / "certs"
        self.proc = Process(tmp, "demo", ["gemini-tool-proxy", "mitm", "--upstream", "mock", "--listen-port",
                                          str(self.port), "--port", str(self.frontend), "--confdir", str(self.confdir)],
                            "front-end listening at", timeout=60,
                            base_env={**os.environ, "PATH": f"{Path(os.sys.executable).parent}:{os.environ['PATH']}"})
        self.proxy_url = f"http://127.0.0.1:{self.port}"
        self.frontend_url = f"http://127.0.0.1:{self.frontend}"
        self.ca_cert = self.confdir / "mitmproxy-ca-cert.pem"

    def curl(self, url: str, body: dict, *headers: str) -> tuple[int, str]:
        args = ["curl", "-sS", "--max-time", "30", "--proxy", self.proxy_url, "--cacert", str(self.ca_cert),
                "-H", "content-type: application/json", "-w", "\n%{http_code}", "-d", json.dumps(body), url]
        for h in headers:
            args[1:1] = ["-H", h]
        done = subprocess.run(args, capture_output=True, text=True, timeout=60, env={"PATH": os.environ["PATH"]})
        assert done.returncode == 0, done.stderr
        text, _, code = done.stdout.rpartition("\n")
        return int(code), text

    def stop(self) -> None:
        self.proc.stop()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    d = Demo(tmp_path_factory.mktemp("demo"))
    yield d
    d.stop()


def _put_tools(demo: Demo, session: str) -> None:
    req = urllib.request.Request(f"{demo.frontend_url}/v1/sessions/{session}/tools", method="PUT",
                                 data=json.dumps({"tools": [WEATHER]}).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200


def test_the_developer_api_with_a_session_s_tools_is_answered_offline(demo: Demo) -> None:
    _put_tools(demo, "demo")
    status, text = demo.curl(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "<session:demo> call get_weather city=Paris"}]}]},
        "x-goog-api-key: demo-key")
    assert status == 200, text
    part = json.loads(text)["candidates"][0]["content"]["parts"][0]
    assert part["functionCall"] == {"name": "get_weather", "args": {"city": "Paris"}}
    with urllib.request.urlopen(f"{demo.frontend_url}/v1/sessions/demo", timeout=10) as r:
        assert json.load(r)["rounds"][-1]["calls"][0]["name"] == "get_weather", "captured for the session"


def test_code_assist_and_antigravity_shapes_and_their_account_calls_are_answered_offline(demo: Demo) -> None:
    bearer = "authorization: Bearer ya29.demo-token"
    status, text = demo.curl("https://cloudcode-pa.googleapis.com/v1internal:loadCodeAssist",
                             {"metadata": {"ideType": "IDE_UNSPECIFIED"}}, bearer)
    assert status == 200 and json.loads(text)["cloudaicompanionProject"], text
    envelope = {"model": "gemini-3-flash", "project": "demo-project", "requestId": "agent-1",
                "userAgent": "antigravity", "requestType": "agent",
                "request": {"contents": [{"role": "user", "parts": [{"text": "hello"}]}], "sessionId": "-1"}}
    status, text = demo.curl("https://daily-cloudcode-pa.googleapis.com/v1internal:streamGenerateContent?alt=sse",
                             envelope, bearer)
    assert status == 200 and "data: " in text, text
    chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    said = "".join(p.get("text", "") for c in chunks for p in c["response"]["candidates"][0]["content"]["parts"])
    assert said == "Mock Gemini (gemini-3-flash) heard: hello", said
    status, text = demo.curl("https://daily-cloudcode-pa.googleapis.com/v1internal:retrieveUserQuotaSummary",
                             {"project": "demo-project"}, bearer)
    assert status == 200 and {b["bucketId"] for g in json.loads(text)["groups"] for b in g["buckets"]} == {
        "gemini-5h", "gemini-weekly", "3p-5h", "3p-weekly"}
    with urllib.request.urlopen(f"{demo.frontend_url}/inspect/api/quota", timeout=10) as r:
        shown = {b["bucket"] for b in json.load(r)["buckets"] if b["account"] == "demo-project"}
    assert {"gemini-5h", "3p-weekly"} <= shown


def test_gemini_cli_runs_offline_against_the_demo(demo: Demo, tmp_path: Path) -> None:
    binary = npm_binary("@google/gemini-cli", GEMINI_CLI_VERSION, "gemini")
    _put_tools(demo, "cli-demo")
    done = run_cli(binary, demo, tmp_path / "home", "<session:cli-demo> call get_weather city=Lyon",  # type: ignore
                   False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().startswith("Tool results: get_weather returned"), done.stdout
    assert "getaddrinfo" not in demo.proc.logs() and "name resolution" not in demo.proc.logs().lower()


def test_the_inspector_shows_the_quota_the_demo_reported(demo: Demo, browser) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    demo.curl("https://daily-cloudcode-pa.googleapis.com/v1internal:retrieveUserQuotaSummary",
              {"project": "page-project"}, "authorization: Bearer ya29.demo-token")
    browser.get(demo.frontend_url + "/inspect")
    panel = WebDriverWait(browser, 20).until(lambda d: (q := d.find_element(By.ID, "quota")).is_displayed() and q)
    panel.find_element(By.TAG_NAME, "summary").click()
    rows = [r.text for r in panel.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert any("page-project" in r and "gemini-5h" in r and "82%" in r for r in rows), rows
    shot(browser, "quota")
