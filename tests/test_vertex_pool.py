"""Issue 12 item 4, Vertex side: Google credentials files pooled like API keys (`--vertex-credentials`,
repeatable). google-auth mints each file's token at the mock's token endpoint (a service account's
signed JWT, an authorized user's refresh token); each request names the project of the credential
it uses; a credential Vertex rate-limits rests, one the token endpoint refuses is skipped; failures
reach the client in its own protocol. A real `serve` process in front of the mock process."""

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import urllib3
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mitmproxy import exceptions
from mitmproxy.test import taddons
from prometheus_client.parser import text_string_to_metric_families

from proxy import metrics
from proxy.intercept.addon import GeminiTools
from proxy.mock.server import SEEN, start_mock
from proxy.store import MemoryStore
from proxy.upstream.gemini.credentials import CredentialError, GoogleCredential
from proxy.upstream.gemini.key_pool import KeyPool
from proxy.upstream.gemini.vertex import vertex_credentials
from tests.mitm_harness import MitmStack
from tests.servers import Process, free_port, mock_gemini

CLIENT = "client-key-0123456789"


def service_account(path: Path, token_uri: str, email: str, project: str) -> str:
    """A service account key file as the Cloud console writes it (a real RSA key: google-auth signs with it)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    path.write_text(json.dumps({"type": "service_account", "project_id": project, "private_key_id": "k1",
                                "private_key": pem, "client_email": email, "client_id": "1",
                                "token_uri": token_uri}))
    return str(path)


def authorized_user(path: Path, refresh_token: str, project: str | None = None) -> str:
    """Application default credentials of a user (`gcloud auth application-default login`); google-auth
    always refreshes these at Google's own endpoint, so tests only load them."""
    info = {"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com", "client_secret": "secret",
            "refresh_token": refresh_token}
    path.write_text(json.dumps({**info, "quota_project_id": project} if project else info))
    return str(path)


class Served:
    def __init__(self, tmp: Path, mock: str, files: list[str]) -> None:
        self.mock_url = mock
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        creds = [w for f in files for w in ("--vertex-credentials", f)]
        self.proc = Process(tmp, f"serve-{port}", [sys.executable, "-m", "proxy", "serve", "--port", str(port),
                                                   "--upstream", mock, "--api-key", CLIENT,
                                                   "--vertex-location", "us-central1", *creds], "ready")
        self.client = openai.OpenAI(base_url=f"{self.url}/v1", api_key=CLIENT, max_retries=0,
                                    _strict_response_validation=True)

    def last(self) -> dict:
        """What the mock accepted last, and every request that reached it (these questions left out)."""
        last = json.loads(urllib3.request("GET", f"{self.mock_url}/mock/last").data)
        return {**last, "seen": [s for s in last["seen"] if " /mock/" not in s]}

    def metrics(self) -> dict[tuple[str, tuple], float]:
        body = urllib3.request("GET", f"{self.url}/metrics", headers={"authorization": f"Bearer {CLIENT}"}).data
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(body.decode()) for s in family.samples}

    def call(self, path: str, body: dict | None = None) -> tuple[int, dict]:
        r = urllib3.request("POST" if body is not None else "GET", f"{self.url}{path}", json=body,
                            headers={"x-goog-api-key": CLIENT})
        return r.status, json.loads(r.data)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vertex")


@pytest.fixture(scope="module")
def mock(tmp: Path) -> Iterator[str]:
    proc, url = mock_gemini(tmp)
    yield url
    proc.stop()


@pytest.fixture(scope="module")
def pooled(tmp: Path, mock: str) -> Iterator[Served]:
    token_uri = f"{mock}/token"
    files = [service_account(tmp / "exhausted.json", token_uri, "exhausted-runner@p.iam.example", "project-one"),
             service_account(tmp / "sa.json", token_uri, "runner@project-two.iam.gserviceaccount.com", "project-two"),
             service_account(tmp / "revoked.json", token_uri, "revoked-runner@p.iam.example", "project-three"),
             service_account(tmp / "user.json", token_uri, "other@project-four.iam.example", "project-four")]
    s = Served(tmp, mock, files)
    yield s
    s.proc.stop()


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def label(path: Path) -> str:
    return metrics.key_label(str(path.resolve()))


def test_requests_go_to_vertex_in_turn_and_skip_rate_limited_and_refused_credentials(pooled: Served,
                                                                                      tmp: Path) -> None:
    projects = []
    for _ in range(4):
        r = pooled.client.responses.create(model="gemini-2.5-flash", input="hello")
        assert r.status == "completed" and r.output_text
        last = pooled.last()
        assert last["path"].startswith("/v1/projects/") and "/locations/us-central1/publishers/google/models/" \
            "gemini-2.5-flash:generateContent" in last["path"]
        projects.append(last["path"].split("/")[3])
        assert last["key"].endswith("-token"), "a token from the token endpoint, as a bearer"
    # exhausted (429, rests 30s) -> sa; revoked (refused) -> user; then sa, user in turn.
    assert projects == ["project-two", "project-four", "project-two", "project-four"]
    m = pooled.metrics()
    assert value(m, "gtp_key_requests_total", key=label(tmp / "exhausted.json"), outcome="rate_limited") == 1
    assert value(m, "gtp_key_requests_total", key=label(tmp / "revoked.json"), outcome="refused") == 1
    assert value(m, "gtp_key_requests_total", key=label(tmp / "sa.json"), outcome="ok") == 2
    assert 25 < value(m, "gtp_key_cooling_seconds", key=label(tmp / "exhausted.json")) <= 30
    seen = pooled.last()["seen"]
    assert seen.count("POST /token") == 4, "one token per credential, reused by later requests"


def test_count_tokens_has_a_vertex_twin_and_developer_api_paths_say_they_have_none(pooled: Served) -> None:
    status, body = pooled.call("/v1beta/models/gemini-2.5-flash:countTokens",
                              {"contents": [{"role": "user", "parts": [{"text": "count me"}]}]})
    assert status == 200 and body["totalTokens"] > 0, body
    assert pooled.last()["seen"][-1].startswith("POST /v1/projects/project-")
    assert pooled.last()["seen"][-1].endswith("/publishers/google/models/gemini-2.5-flash:countTokens")
    status, body = pooled.call("/v1beta/files")
    assert status == 501 and "Vertex AI" in body["error"]["message"] and "files" in body["error"]["message"]


def test_a_client_key_never_replaces_the_pool(pooled: Served) -> None:
    """The client's key only admitted it; Vertex is called with the server's credentials."""
    chat = pooled.client.chat.completions.create(model="gemini-2.5-flash",
                                                 messages=[{"role": "user", "content": "hi"}])
    assert chat.choices[0].message.content and pooled.last()["key"] != CLIENT


def test_every_credential_refused_is_a_failure_in_each_protocol(tmp: Path, mock: str) -> None:
    files = [service_account(tmp / f"revoked-{i}.json", f"{mock}/token", f"revoked-{i}@p.iam.example", "p-revoked")
             for i in range(2)]
    s = Served(tmp, mock, files)
    try:
        with pytest.raises(openai.APIStatusError) as err:
            s.client.responses.create(model="gemini-2.5-flash", input="hello")
        # Each was tried in turn: the message names the last and what Google said.
        assert err.value.status_code == 502
        said = "credential revoked-1.json no token: invalid_grant: Invalid grant: account not found"
        assert said in err.value.message
        with pytest.raises(openai.APIStatusError) as err:  # both now rest: said without another try
            s.client.responses.create(model="gemini-2.5-flash", input="hello", stream=True)
        assert err.value.status_code == 502 and "Every upstream credential (2) was refused a token" in err.value.message
        status, body = s.call("/v1beta/models/gemini-2.5-flash:generateContent",
                             {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
        assert status == 502 and body["error"]["status"] == "UNAVAILABLE"
        assert "PRIVATE KEY" not in s.proc.logs()
    finally:
        s.proc.stop()


@pytest.mark.parametrize(("extra", "message"), [
    (["--vertex-location", "Mars/1"], "--vertex-location must be a Google Cloud location"),
    (["--upstream-api", "interactions"], "Vertex AI has no Interactions API"),
])
def test_bad_vertex_settings_stop_the_start(tmp: Path, extra: list[str], message: str) -> None:
    f = authorized_user(tmp / "ok.json", "good-user", "project-ok")
    done = subprocess.run([sys.executable, "-m", "proxy", "serve", "--port", str(free_port()), "--api-key", CLIENT,
                           "--vertex-credentials", f, *extra], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and message in done.stderr, done.stderr


def test_credentials_files_are_checked_at_start(tmp: Path) -> None:
    with pytest.raises(ValueError, match="missing.json"):
        vertex_credentials([str(tmp / "missing.json")], None, "global")
    (tmp / "external.json").write_text(json.dumps({"type": "external_account", "credential_source": {
        "executable": {"command": "/bin/sh -c 'touch /tmp/ran'"}}}))
    with pytest.raises(ValueError, match="type 'external_account' is not supported"):
        vertex_credentials([str(tmp / "external.json")], "p-project", "global")
    (tmp / "partial.json").write_text(json.dumps({"type": "service_account", "project_id": "p-project"}))
    with pytest.raises(ValueError, match="partial.json"):
        vertex_credentials([str(tmp / "partial.json")], None, "global")
    no_project = authorized_user(tmp / "no-project.json", "good-user")
    assert vertex_credentials([authorized_user(tmp / "quota.json", "u", "quota-project")], None,
                              "global")[0].project == "quota-project", "an authorized user bills its quota project"
    with pytest.raises(ValueError, match="names no project; give --vertex-project"):
        vertex_credentials([no_project], None, "global")
    assert vertex_credentials([no_project], "given-project", "global")[0].project == "given-project"
    with pytest.raises(ValueError, match="is not a Google Cloud project id"):
        vertex_credentials([no_project], "../escape", "global")


async def test_concurrent_requests_wait_for_one_refresh(tmp_path: Path) -> None:
    runner, base, app = await start_mock()
    try:
        cred = GoogleCredential(service_account(tmp_path / "sa.json", f"{base}/token", "a@p-one.iam.example",
                                                "p-one1"))
        headers = await asyncio.gather(*(cred.headers() for _ in range(8)))
        assert {h["authorization"] for h in headers} == {"Bearer a@p-one.iam.example-token"}
        assert list(app[SEEN]).count("POST /token") == 1
        revoked = GoogleCredential(service_account(tmp_path / "r.json", f"{base}/token", "revoked-x@p.iam.example",
                                                   "p-two2"))
        with pytest.raises(CredentialError, match=r"r\.json.*account not found"):
            await revoked.headers()
        pool = KeyPool([cred, revoked])
        assert pool.pick() is cred and pool.pick() is revoked, "credentials take turns like keys"
    finally:
        await runner.cleanup()


def test_the_addon_front_end_pools_the_same_credentials(tmp: Path, mock: str) -> None:
    """mitmdump's in-process front-end (gtp_vertex_credentials), in front of the same mock."""
    files = [service_account(tmp / f"addon-{i}.json", f"{mock}/token", f"runner-{i}@p.iam.example",
                             f"addon-project-{i}") for i in range(2)]
    stack = MitmStack(tmp, "--set", f"gtp_vertex_credentials={files[0]}", "--set",
                      f"gtp_vertex_credentials={files[1]}", "--set", "gtp_vertex_location=europe-west4",
                      frontend_upstream=mock)
    try:
        assert "Vertex AI at" in stack.logs()
        client = openai.OpenAI(base_url=f"{stack.frontend_url}/v1", api_key="unused-key-0123456789", max_retries=0,
                               _strict_response_validation=True)
        projects = []
        for _ in range(2):
            assert client.responses.create(model="gemini-2.5-flash", input="hi").output_text
            last = json.loads(urllib3.request("GET", f"{mock}/mock/last").data)
            assert "/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent" in last["path"]
            projects.append(last["path"].split("/")[3])
        assert sorted(projects) == ["addon-project-0", "addon-project-1"]
    finally:
        stack.close()


def test_the_addon_refuses_bad_vertex_options(tmp: Path) -> None:
    addon = GeminiTools(MemoryStore())
    with taddons.context(addon) as tctx:
        with pytest.raises(exceptions.OptionsError, match=r"gtp_vertex_credentials .*missing\.json"):
            tctx.configure(addon, gtp_vertex_credentials=[str(tmp / "missing.json")])
        with pytest.raises(exceptions.OptionsError, match="gtp_vertex_location must be a Google Cloud location"):
            tctx.configure(addon, gtp_vertex_location="Mars/1")
