"""Issue 24 item 1: tenants share nothing that lives at Google. With client keys the proxy calls Google
as itself for everyone, so it keeps each client to the objects it created: real `serve` processes
(two, sharing a real Redis) in front of the mock's files (resumable uploads, as google-genai makes
them) and cachedContents, driven by google-genai with each tenant's key."""

import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from tests.servers import RedisServer, mock_gemini, proxy_instance

KEY_A, KEY_B = "tenant-a-key-0123456789abcdef", "tenant-b-key-0123456789abcdef"


@pytest.fixture(scope="module")
def instances(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    tmp = tmp_path_factory.mktemp("tenants")
    redis = RedisServer(tmp)
    mock, mock_url = mock_gemini(tmp)
    procs = [proxy_instance(tmp, f"p{i}", mock_url, "--store", redis.url, "--api-key", KEY_A, "--api-key", KEY_B)
             for i in range(2)]
    yield [url for _, url in procs]
    for proc, _ in procs:
        proc.stop()
    mock.stop()
    redis.stop()


def client(url: str, key: str) -> genai.Client:
    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=url, api_version="v1beta"))


def _not_found(call) -> None:
    with pytest.raises(genai_errors.ClientError) as e:
        call()
    assert e.value.code == 404 and e.value.status == "NOT_FOUND", e.value


def test_a_tenants_file_is_invisible_and_untouchable_for_another(instances: list[str]) -> None:
    a, b = client(instances[0], KEY_A), client(instances[1], KEY_B)  # on different instances, too
    up = a.files.upload(file=io.BytesIO(b"%PDF-1.4 salaries"), config=types.UploadFileConfig(
        mime_type="application/pdf", display_name="tenantA-payroll.pdf"))
    assert up.name and up.display_name == "tenantA-payroll.pdf"
    assert up.name in [f.name for f in a.files.list()]
    assert up.name not in [f.name for f in b.files.list()], "listed for another tenant"
    _not_found(lambda: b.files.get(name=up.name))
    _not_found(lambda: b.files.delete(name=up.name))
    # Using it in a prompt is reaching it too: refused before Gemini is asked.
    part = types.Part.from_uri(file_uri=up.uri, mime_type="application/pdf")
    _not_found(lambda: b.models.generate_content(model="gemini-2.5-flash", contents=[part, "summarize"]))
    assert a.models.generate_content(model="gemini-2.5-flash", contents=[part, "summarize"]).text
    # The owner, on the other instance, still has it, and can delete it.
    other_a = client(instances[1], KEY_A)
    assert other_a.files.get(name=up.name).display_name == "tenantA-payroll.pdf"
    other_a.files.delete(name=up.name)
    with pytest.raises(genai_errors.ClientError) as gone:  # Google's own answer for a deleted file
        a.files.get(name=up.name)
    assert gone.value.code == 403


def test_a_tenants_cached_content_is_its_own(instances: list[str]) -> None:
    a, b = client(instances[1], KEY_A), client(instances[0], KEY_B)
    cache = a.caches.create(model="gemini-2.5-flash", config=types.CreateCachedContentConfig(
        contents=["a long shared context " * 1200], display_name="tenant-a-cache", ttl="300s"))
    assert cache.name in [c.name for c in a.caches.list()]
    assert cache.name not in [c.name for c in b.caches.list()]
    _not_found(lambda: b.caches.get(name=cache.name))
    _not_found(lambda: b.caches.update(name=cache.name, config=types.UpdateCachedContentConfig(ttl="600s")))
    _not_found(lambda: b.caches.delete(name=cache.name))
    _not_found(lambda: b.models.generate_content(model="gemini-2.5-flash", contents="hi",
                                                 config=types.GenerateContentConfig(cached_content=cache.name)))
    assert a.caches.get(name=cache.name).display_name == "tenant-a-cache"
    a.caches.delete(name=cache.name)


def test_objects_the_proxy_never_saw_created_are_nobodys(instances: list[str]) -> None:
    """The mock's seeded file was not made through the proxy: no client key reaches it (fail closed)."""
    a = client(instances[0], KEY_A)
    assert "files/mockfile1" not in [f.name for f in a.files.list()]
    _not_found(lambda: a.files.get(name="files/mockfile1"))
    req = urllib.request.Request(f"{instances[0]}/v1beta/files/mockfile1", method="DELETE",
                                 headers={"x-goog-api-key": KEY_B})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req)
    assert e.value.code == 404 and json.load(e.value)["error"]["status"] == "NOT_FOUND"


def _post(url: str, data: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_an_upload_session_admits_only_its_starter(instances: list[str]) -> None:
    """google-genai sends an upload's bytes to the session URL without a key (Google asks none): the
    proxy points that URL at itself and lets the bytes in for the client that started the session —
    not for another client's key, not for a made-up session."""
    status, headers, _ = _post(f"{instances[0]}/upload/v1beta/files", json.dumps(
        {"file": {"displayName": "a.txt", "mimeType": "text/plain"}}).encode(), {
        "x-goog-api-key": KEY_A, "x-goog-upload-protocol": "resumable", "x-goog-upload-command": "start",
        "x-goog-upload-header-content-length": "5", "x-goog-upload-header-content-type": "text/plain",
        "content-type": "application/json"})
    assert status == 200
    session = headers.get("x-goog-upload-url") or headers["X-Goog-Upload-URL"]
    assert session.startswith(instances[0] + "/upload/v1beta/files?upload_id="), "pointed back at the proxy"
    other = session.replace(instances[0], instances[1])  # any instance knows the session (shared store)
    bytes_headers = {"x-goog-upload-command": "upload, finalize", "x-goog-upload-offset": "0"}
    status, _, body = _post(other, b"hello", {**bytes_headers, "x-goog-api-key": KEY_B})
    assert status == 404 and json.loads(body)["error"]["status"] == "NOT_FOUND"
    status, _, _ = _post(session.replace("upload_id=", "upload_id=x"), b"hello", bytes_headers)
    assert status == 401, "a session the proxy never started admits nobody without a key"
    status, headers, body = _post(other, b"hello", bytes_headers)  # as google-genai sends it: no key
    assert status == 200 and json.loads(body)["file"]["displayName"] == "a.txt"
    name = json.loads(body)["file"]["name"]
    a, b = client(instances[1], KEY_A), client(instances[1], KEY_B)
    assert name in [f.name for f in a.files.list()]
    assert name not in [f.name for f in b.files.list()]


def test_a_prompt_cache_is_shared_by_instances_and_never_by_tenants(instances: list[str]) -> None:
    """Anthropic `cache_control` mapped to a Gemini cache (server/prompt_cache.py): the cache map is in
    the shared store, so the other instance reads the cache the first made; another tenant, on either
    instance, gets a cache of its own, never the first's (and cannot GET it)."""
    import anthropic

    system = [{"type": "text", "text": "Follow the repository's conventions. " * 700,
               "cache_control": {"type": "ephemeral"}}]
    ask = [{"role": "user", "content": "hi"}]
    more = [*ask, {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "and then?"}]

    def usage(url: str, key: str, messages: list) -> anthropic.types.Usage:
        sdk = anthropic.Anthropic(base_url=url, api_key=key, max_retries=0, _strict_response_validation=True)
        return sdk.messages.create(model="gemini-3-flash-preview", max_tokens=200, system=system,
                                   messages=messages).usage

    made = usage(instances[0], KEY_A, ask)
    assert made.cache_creation_input_tokens > 4096 and made.cache_read_input_tokens == 0
    read = usage(instances[1], KEY_A, more)
    assert read.cache_read_input_tokens == made.cache_creation_input_tokens and read.cache_creation_input_tokens == 0
    other = usage(instances[1], KEY_B, more)
    assert other.cache_read_input_tokens == 0 and other.cache_creation_input_tokens > 0
    a, b = client(instances[0], KEY_A), client(instances[1], KEY_B)
    a_caches, b_caches = [c.name for c in a.caches.list()], [c.name for c in b.caches.list()]
    assert len(a_caches) == len(b_caches) == 1 and a_caches != b_caches
    _not_found(lambda: b.caches.get(name=a_caches[0]))
