"""Issue 56 part 3: no key leaks through a model name. A key in the `model` field (a swapped
environment variable is enough) is a 400 in the route's protocol that does not echo it, on every
front-end and for intercepted apps; and whatever the check let through, the metrics, the spans and
the access log write model names only through the process's redactor.

Against a real `serve` (and a real mitmdump with the addon) in front of the mock, through the
official SDKs, with a real OTLP collector (tests/otlp_collector.py)."""

import asyncio
import json
import time
import urllib.error
import urllib.request

import aiohttp
import anthropic
import google.genai
import openai
import pytest
from google.genai import errors as genai_errors

from proxy import metrics, redact
from proxy.errors import ProxyError
from proxy.journal.access_log import access_fields
from proxy.journal.exchange import Exchange
from proxy.redact import Redactor
from proxy.wire.model_name import check_model_name
from tests.mitm_harness import MitmStack
from tests.otlp_collector import Collector
from tests.servers import mock_gemini, proxy_instance

KEY = "client-key-canary-5d1c7b2e9f"            # the configured client key (--api-key)
GEMINI_KEY = "AIzaSyServerGeminiKeyCanary0123456789ab"  # the server's Gemini key (--gemini-key)
CANARIES = {
    "client key": KEY,
    "server's Gemini key": GEMINI_KEY,
    "Google API key": "AIzaSyD4x9Qm2LpR7vT1nK8sW3eZ6hJ0cB5fGyU",
    "Anthropic key": "sk-ant-api03-Zq8mN2xP5vR9tL3wK7yB1cD4fG6hJ0sA-Qw_E2rT5yU8iO1pA",
    "OpenAI key": "sk-proj-R4nd0mCanaryKeyValue1234567890abcdef",
    "OAuth token": "ya29.a0AfB_byCanaryAccessTokenValue123456789",
    "GitHub token": "ghp_C4n4ryT0kenValue0123456789abcdefABCD",
    "JWT": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJjYW5hcnkiLCJpYXQiOjE3MDB9",
    "random token": "7f9c2ba4e88f827d616045507605853ed73b8093",  # 40 hex digits: no shape, no one's key
}
MODEL = "gemini-2.5-flash"
REAL_NAMES = ["gemini-3-flash-preview", "models/gemini-2.5-flash", "tunedModels/my-model_1.2", "gpt-5.5",
              "claude-sonnet-4-5@20250929", "qwen3:8b", "Qwen/Qwen3-8B", "Qwen/Qwen3-30B-A3B-Instruct-2507",
              "meta-llama/Llama-3.3-70B-Instruct-Turbo", "gemini-2.5-flash-preview-05-20", "gemma-3-27b-it",
              "text-embedding-004", "hf.co/unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M", "gpt-4o-mini-2024-07-18"]


# -- the one judgement: the redactor -------------------------------------------------------------------

@pytest.mark.parametrize("name", REAL_NAMES)
def test_real_model_names_are_no_secrets(name: str) -> None:
    assert not Redactor([KEY]).secret_in(name), name


@pytest.mark.parametrize("what", list(CANARIES))
def test_credentials_are_secrets(what: str) -> None:
    assert Redactor([KEY, GEMINI_KEY]).secret_in(CANARIES[what]), what


@pytest.mark.parametrize("what", [w for w in CANARIES if w not in ("client key", "server's Gemini key")])
def test_the_grammar_refuses_a_credential_without_echoing_it(what: str) -> None:
    with pytest.raises(ProxyError) as e:
        check_model_name(CANARIES[what])
    assert e.value.status == 400 and e.value.param == "model" and e.value.code == "invalid_model"
    assert CANARIES[what] not in e.value.message and CANARIES[what][:12] not in e.value.message


def test_the_grammar_refuses_a_configured_key() -> None:
    """A client key has no credential's shape: the process's redactor knows it (the recorder's)."""
    before = list(redact._PROCESS)
    try:
        redact.use(Redactor([KEY]))
        with pytest.raises(ProxyError) as e:
            check_model_name(KEY)
        assert KEY not in e.value.message
    finally:
        redact._PROCESS[:] = before


def test_exporters_redact_a_name_the_check_never_saw() -> None:
    """Defence in depth: a credential that reached the request's record or exchange some other way
    (a model name recorded before it was checked) is exported by neither the span nor the
    access-log line (the metrics' labels: tests/test_metrics_labels.py)."""
    canary = CANARIES["Google API key"]
    record = metrics.RequestRecord("/v1/chat/completions", model=canary, client_model=canary)
    fields = access_fields("POST", f"/v1beta/models/{canary}:generateContent", 400, record, "req_1", None)
    assert canary not in json.dumps(fields) and fields["client_model"] == redact.REDACTED

    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from proxy.journal.ring import summarize
    from proxy.journal.tracing import Tracing
    exporter = InMemorySpanExporter()
    tracing = Tracing("http://127.0.0.1:9/v1/traces", exporter=exporter)
    ex = Exchange(1, "frontend", "POST", f"/v1beta/models/{canary}:generateContent", client_model=canary)
    ex.upstream(canary, b"{}", False)
    ex.status, ex.end = 404, ex.start
    tracing.export(ex, summarize)
    tracing.provider.force_flush()
    spans = exporter.get_finished_spans()
    assert len(spans) == 2
    dumped = "".join(s.to_json() for s in spans)
    assert canary not in dumped and "chat [redacted]" in {s.name for s in spans}
    tracing.shutdown()


# -- every front-end, a real process ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("model-secrets")
    collector = Collector()
    mock, murl = mock_gemini(tmp)
    proc, url = proxy_instance(tmp, "proxy", murl, "--api-key", KEY, "--gemini-key", GEMINI_KEY,
                               "--otlp-endpoint", collector.url, "--log-format", "json")
    yield proc, url, collector
    proc.stop()
    mock.stop()
    collector.close()


def _post(url: str, path: str, body: dict, headers: dict | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", "authorization": f"Bearer {KEY}",
                                          **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _refusals(url: str, canary: str) -> list[tuple[str, int, bytes]]:
    """(front-end, status, the body the client got) for the canary as the model name on each."""
    out: list[tuple[str, int, bytes]] = []
    oai = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0, _strict_response_validation=True)

    def sdk(name: str, call, error: type) -> None:
        with pytest.raises(error) as e:
            call()
        response = getattr(e.value, "response", None)
        out.append((name, getattr(e.value, "status_code", None) or getattr(e.value, "code", 0),
                    response.content if response is not None and hasattr(response, "content") else
                    json.dumps(getattr(e.value, "details", None) or getattr(e.value, "body", None)).encode()))

    sdk("responses", lambda: oai.responses.create(model=canary, input="hi"), openai.BadRequestError)
    sdk("responses stream", lambda: list(oai.responses.create(model=canary, input="hi", stream=True)),
        openai.BadRequestError)
    sdk("responses input_tokens", lambda: oai.responses.input_tokens.count(model=canary, input="hi"),
        openai.BadRequestError)
    sdk("chat", lambda: oai.chat.completions.create(model=canary, messages=[{"role": "user", "content": "hi"}]),
        openai.BadRequestError)
    with oai.responses.connect(extra_headers={"OpenAI-Beta": "responses_websockets=2026-02-06"}) as conn:
        conn.send({"type": "response.create", "model": canary, "input": "hi"})
        raw = conn.recv_bytes()
        event = json.loads(raw)
        out.append(("responses websocket", event.get("status", 0), raw))
        assert event["type"] == "error" and event["error"]["param"] == "model", event
    ant = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
    sdk("anthropic", lambda: ant.messages.create(model=canary, max_tokens=16, messages=[{"role": "user",
                                                                                          "content": "hi"}]),
        anthropic.BadRequestError)
    sdk("anthropic count_tokens", lambda: ant.messages.count_tokens(model=canary, messages=[{"role": "user",
                                                                                              "content": "hi"}]),
        anthropic.BadRequestError)
    genai = google.genai.Client(api_key=KEY, http_options={"base_url": url, "api_version": "v1beta"})
    sdk("gemini generateContent", lambda: genai.models.generate_content(model=canary, contents="hi"),
        genai_errors.ClientError)
    sdk("gemini streamGenerateContent", lambda: list(genai.models.generate_content_stream(model=canary,
                                                                                          contents="hi")),
        genai_errors.ClientError)
    sdk("gemini countTokens", lambda: genai.models.count_tokens(model=canary, contents="hi"), genai_errors.ClientError)
    sdk("gemini get model", lambda: genai.models.get(model=canary), genai_errors.ClientError)
    sdk("gemini get tuned model", lambda: genai.models.get(model=f"tunedModels/{canary}"), genai_errors.ClientError)
    sdk("interactions", lambda: genai.interactions.create(model=canary, input="hi"), Exception)
    status, body = _post(url, "/v1/gemini", {"model": canary, "input": "hi"})
    out.append(("/v1/gemini", status, body))
    return out


def _scrape(url: str) -> bytes:
    req = urllib.request.Request(url + "/metrics", headers={"authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def _journal(url: str) -> bytes:
    def get(path: str) -> bytes:
        req = urllib.request.Request(url + path, headers={"authorization": f"Bearer {KEY}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read()
    listing = get("/inspect/api/exchanges?limit=500")
    rows = json.loads(listing)["exchanges"]
    return listing + b"".join(get(f"/inspect/api/exchanges/{r['id']}") for r in rows)


def test_a_key_as_the_model_name_is_refused_and_appears_nowhere(served) -> None:
    """Each canary as the model on every front-end: a 400 in the route's protocol that does not echo
    it; then no metric, span, log line, journal list or exchange holds it (nor its first 16 characters)."""
    proc, url, collector = served
    oai = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    assert oai.responses.create(model=MODEL, input="hello").status == "completed"  # spans flow
    for what, canary in CANARIES.items():
        for name, status, body in _refusals(url, canary):
            assert status == 400, (what, name, status, body)
            assert canary.encode() not in body and canary[:16].encode() not in body, (what, name, body)
            doc = json.loads(body)
            error = doc[0]["error"] if isinstance(doc, list) else doc.get("error") or doc
            text = json.dumps(error)
            assert "model" in text, (what, name, body)  # it names the field
            if name.startswith("gemini") or name == "/v1/gemini":
                assert error.get("status") == "INVALID_ARGUMENT", (what, name, body)
            elif name.startswith("anthropic"):
                assert doc["type"] == "error" and error["type"] == "invalid_request_error", (what, name, body)
            elif name == "interactions":
                assert error["code"] == "INVALID_ARGUMENT", (what, name, body)
            else:
                assert error["param"] == "model" and error["code"] == "invalid_model", (what, name, body)
    deadline = time.monotonic() + 20  # the batch processor exports every 5 s
    while time.monotonic() < deadline and not any(s["attributes"].get("http.response.status_code") == 400
                                                  and s["attributes"].get("url.path") == "/v1/gemini"
                                                  for s in collector.spans[-40:]):
        time.sleep(0.5)
    time.sleep(6)  # one more batch
    outputs = {"metrics": _scrape(url), "spans": b"".join(collector.raw), "log": proc.logs().encode(),
               "journal": _journal(url)}
    assert b'gtp_requests_total{model="gemini-2.5-flash"' in outputs["metrics"] or \
        b'model="gemini-2.5-flash"' in outputs["metrics"]
    assert len(collector.spans) > len(CANARIES) * 10, "the refused requests were traced"
    for what, canary in CANARIES.items():
        for name, data in outputs.items():
            assert canary.encode() not in data, f"the {what} appears in the {name}"
            assert canary[:16].encode() not in data, f"the {what}'s head appears in the {name}"


# -- intercepted apps ----------------------------------------------------------------------------------------

GL = "https://generativelanguage.googleapis.com"
# The addon has no client key configured here: the client key's canary is one only for the front-end.
INTERCEPTED = {what: canary for what, canary in CANARIES.items() if what != "client key"}


def test_an_intercepted_apps_key_as_model_is_refused_and_recorded_nowhere(tmp_path) -> None:
    """An app behind mitmdump names a key as its model: Gemini's 400 without the key, nothing sent
    to Google, and neither the journal, the spans, the front-end's /metrics nor the log hold it."""
    collector = Collector()
    m = MitmStack(tmp_path, "--set", f"gtp_otlp_endpoint={collector.url}")
    try:
        async def go() -> list[tuple[int, bytes]]:
            out = []
            async with aiohttp.ClientSession() as s:
                for canary in INTERCEPTED.values():
                    for method in ("generateContent", "streamGenerateContent?alt=sse"):
                        async with s.post(f"{GL}/v1beta/models/{canary}:{method}",
                                          json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
                                          headers={"x-goog-api-key": "app-key"}, proxy=m.proxy_url,
                                          ssl=m.client_ssl()) as r:
                            out.append((r.status, await r.read()))
                async with s.post(f"{GL}/v1beta/models/{MODEL}:generateContent",
                                  json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
                                  headers={"x-goog-api-key": "app-key"}, proxy=m.proxy_url, ssl=m.client_ssl()) as r:
                    assert r.status == 200
                async with s.get(f"{m.frontend_url}/inspect/api/exchanges?limit=500") as r:
                    listing = await r.read()
                docs = []
                for row in json.loads(listing)["exchanges"]:
                    async with s.get(f"{m.frontend_url}/inspect/api/exchanges/{row['id']}") as r:
                        docs.append(await r.read())
                async with s.get(f"{m.frontend_url}/metrics") as r:
                    scraped = await r.read()
            out.append((0, listing + b"".join(docs)))
            out.append((0, scraped))
            return out

        accepted = m.accepted
        results = asyncio.run(go())
        refusals, journal, scraped = results[:-2], results[-2][1], results[-1][1]
        assert m.accepted == accepted + 1, "only the real model's request reached Google"
        for status, body in refusals:
            assert status == 400 and json.loads(body)["error"]["status"] == "INVALID_ARGUMENT", body
        assert journal.count(b'"status":400') >= len(refusals), "the refused flows are in the journal"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(collector.spans) < len(refusals):
            time.sleep(0.5)
        assert len(collector.spans) >= len(refusals), "the refused flows were traced"
        outputs = {"refusals": b"".join(b for _, b in refusals), "journal": journal, "metrics": scraped,
                   "spans": b"".join(collector.raw), "log": m.logs().encode()}
        for what, canary in INTERCEPTED.items():
            for name, data in outputs.items():
                assert canary[:16].encode() not in data, f"the {what} appears in the {name}"
    finally:
        m.close()
        collector.close()


def test_a_token_no_one_configured_is_in_no_log_line(tmp_path) -> None:
    """A random token (no credential's shape, no configured key) as the model in a Gemini path: the
    error's log line names the path, and the request's own secret is scrubbed from it (a fresh
    process: the log's repeat limit lets this first line through)."""
    mock, murl = mock_gemini(tmp_path)
    proc, url = proxy_instance(tmp_path, "proxy", murl, "--log-format", "json")
    try:
        canary = CANARIES["random token"]
        status, body = _post(url, f"/v1beta/models/{canary}:generateContent",
                             {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
        assert status == 400 and canary.encode() not in body, body
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and '"gtp.access"' not in proc.logs():
            time.sleep(0.1)
        lines = [json.loads(line) for line in proc.logs().splitlines() if line.startswith("{")]
        assert any("-> 400" in line["message"] and "generateContent" in line["message"] for line in lines), lines
        assert any(line.get("logger") == "gtp.access" and line.get("status") == 400 for line in lines), lines
        assert canary not in proc.logs()
    finally:
        proc.stop()
        mock.stop()
