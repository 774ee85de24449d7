"""The journal, /inspect's API and sign-in, `gemini-tool-proxy inspect`, the access log and OTLP
traces, against a real `serve` process, the strict mock, the openai SDK and a trace collector built
on opentelemetry-proto. A canary key sits in every header and body position a client can use: it
must appear nowhere the proxy shows or exports."""

import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import google.genai
import openai
import pytest

from tests.otlp_collector import Collector
from tests.servers import free_port, mock_gemini, proxy_instance

KEY = "client-key-canary-7f3e9a1b2c4d"          # the client key: every header and body position
OTHER = "other-client-key-0123456789abcdef"     # another client, who must see none of KEY's exchanges
GEMINI_KEY = "AIzaSyCanaryGeminiKey0123456789abcdefgh"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                           "days": {"type": "integer", "exclusiveMinimum": 0}},
                          "required": ["city"], "additionalProperties": False}}
MODEL = "gemini-3-flash-preview"  # signs its calls: the second turn restores the signature


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("inspect")
    collector = Collector()
    mock, murl = mock_gemini(tmp)
    proc, url = proxy_instance(tmp, "proxy", murl, "--api-key", KEY, "--api-key", OTHER, "--gemini-key", GEMINI_KEY,
                               "--otlp-endpoint", collector.url, "--log-format", "json")
    yield proc, url, collector
    proc.stop()
    mock.stop()
    collector.close()


def api(url: str, path: str, key: str | None = KEY, cookie: str | None = None):
    headers = {"authorization": f"Bearer {key}"} if key else {}
    if cookie:
        headers["cookie"] = cookie
    with urllib.request.urlopen(urllib.request.Request(url + path, headers=headers), timeout=10) as r:
        return r.status, r.headers, r.read()


def tool_loop(url: str, **extra) -> tuple:
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, **extra)
    r1 = client.responses.create(model=MODEL, input="call get_weather city=Paris", tools=[WEATHER])
    call = r1.output[-1]
    assert call.type == "function_call"
    r2 = client.responses.create(model=MODEL, tools=[WEATHER], previous_response_id=r1.id,
                                 input=[{"type": "function_call_output", "call_id": call.call_id, "output": "18C"}])
    assert r2.status == "completed" and "18C" in r2.output_text
    return r1, r2, call


def exchanges(url: str, key: str = KEY, query: str = "") -> list[dict]:
    return json.loads(api(url, "/inspect/api/exchanges" + query, key)[2])["exchanges"]


def test_a_tool_loop_is_in_the_journal_with_the_proxys_decisions(served):
    proc, url, _ = served
    r1, r2, call = tool_loop(url)
    rows = exchanges(url)
    first = next(r for r in rows if r["calls"] and r["calls"][0]["name"] == "get_weather")
    assert first["protocol"] == "responses" and first["status"] == 200 and first["gemini_model"] == MODEL
    assert first["tools"] == ["get_weather"] and first["input_tokens"] > 0 and first["upstream_ms"] > 0
    second = rows[0]
    doc = json.loads(api(url, f"/inspect/api/exchanges/{second['id']}")[2])
    kinds = {(n["kind"], n.get("keyword") or n.get("source")) for n in doc["decisions"]}
    assert ("schema", "exclusiveMinimum") in kinds and ("schema", "additionalProperties") in kinds
    restored = [n for n in doc["decisions"] if n["kind"] == "signature" and n["call_id"] == call.call_id]
    assert restored and restored[0]["source"] == "store" and restored[0]["signed"] is True
    # The four bodies: as the client sent it, as Gemini got it (with the signature back on the call),
    # Gemini's answer and the client's.
    assert doc["client_request"]["body"]["previous_response_id"] == r1.id
    sent = doc["upstream"][0]["request"]
    model_turn = next(c for c in sent["contents"] if c["role"] == "model")
    assert model_turn["parts"][0]["thoughtSignature"] and "functionCall" in model_turn["parts"][0]
    assert doc["upstream"][0]["answer"]["candidates"][0]["content"]["parts"]
    assert doc["client_answer"]["body"]["id"] == r2.id
    assert doc["upstream"][0]["attempts"][0]["status"] == 200
    assert doc["upstream"][0]["attempts"][0]["key"].startswith("k-")
    # A filter, and another client's view: nothing of this one's.
    assert all(r["status"] < 400 for r in exchanges(url, query="?status=ok"))
    assert exchanges(url, OTHER) == []
    with pytest.raises(urllib.error.HTTPError) as e:
        api(url, f"/inspect/api/exchanges/{second['id']}", OTHER)
    assert e.value.code == 404


def test_a_failed_request_says_why(served):
    _, url, _ = served
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model=MODEL, input="hi", previous_response_id="resp_missing")
    row = exchanges(url, query="?status=error")[0]
    assert row["status"] == 400 and "resp_missing" in row["error"]
    doc = json.loads(api(url, f"/inspect/api/exchanges/{row['id']}")[2])
    assert doc["error_detail"]["param"] == "previous_response_id"
    assert any(n["kind"] == "error" for n in doc["decisions"])


def settled(client: openai.OpenAI, rid: str):
    deadline = time.monotonic() + 20
    while (r := client.responses.retrieve(rid)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline, r
        time.sleep(0.05)
    return r


def run_of(url: str, rid: str) -> tuple[dict, dict]:
    """The row and document of the background run of `rid` (its exchange is finished once the run ends)."""
    deadline = time.monotonic() + 20
    while True:
        for row in exchanges(url, query="?limit=50"):
            if row["kind"] == "background":
                doc = json.loads(api(url, f"/inspect/api/exchanges/{row['id']}")[2])
                if any(n["kind"] == "background" and rid in n["message"] for n in doc["decisions"]):
                    return row, doc
        assert time.monotonic() < deadline, f"no exchange for the run of {rid}"
        time.sleep(0.1)


def test_a_background_run_is_an_exchange_of_its_own(served):
    """A background response calls Gemini after the request that started it was answered (and its
    exchange kept): the run is recorded as an exchange of its own, with Gemini's side and how it
    ended, and each of the two names the other. Before, the run's call was cut off at the request's
    end: no answer, no finish reason, no tokens, and a failure or a cancel nowhere."""
    _, url, _ = served
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    started = client.responses.create(model=MODEL, input="call get_weather city=Paris", tools=[WEATHER],
                                      background=True)
    assert settled(client, started.id).output[-1].type == "function_call"
    row, doc = run_of(url, started.id)
    assert row["protocol"] == "responses" and row["method"] == "POST" and row["status"] == 200
    assert row["client_model"] == MODEL and row["gemini_model"] == MODEL and row["tools"] == ["get_weather"]
    assert row["calls"][0]["name"] == "get_weather" and row["finish_reasons"] == ["STOP"]
    assert row["input_tokens"] > 0 and row["error"] is None
    assert doc["client_request"]["body"]["background"] is True  # the request that started it
    assert doc["upstream"][0]["answer"]["candidates"][0]["content"]["parts"][0]["functionCall"]
    parent_id = next(n["started_by"] for n in doc["decisions"] if n["kind"] == "background")
    parent = json.loads(api(url, f"/inspect/api/exchanges/{parent_id}")[2])
    assert parent["kind"] == "frontend" and parent["upstream"] == []
    assert parent["client_answer"]["body"]["status"] == "queued"
    assert [n["run"] for n in parent["decisions"] if n["kind"] == "background"] == [row["id"]]
    assert any(n["kind"] == "schema" for n in parent["decisions"])  # the request's decisions stay on it

    failing = client.responses.create(model=MODEL, input="[[mock:error 400]] hi", background=True)
    assert settled(client, failing.id).status == "failed"
    row, doc = run_of(url, failing.id)
    assert row["status"] == 400 and row["error"] and doc["upstream"][0]["attempts"][0]["status"] == 400

    slow = client.responses.create(model=MODEL, input="[[mock:slow 3]] tell me a story", background=True)
    assert client.responses.cancel(slow.id).status == "cancelled"
    row, _ = run_of(url, slow.id)
    assert row["status"] == 499 and "cancelled" in row["error"]
    cli = subprocess.run([sys.executable, "-m", "proxy", "inspect", "--url", url, "--key", KEY, "-n", "20"],
                         capture_output=True, text=True, timeout=60).stdout
    assert f"{row['id']} 499 POST /v1/responses [responses · background]" in cli

    genai = google.genai.Client(api_key=KEY, http_options={"base_url": url, "api_version": "v1beta"})
    interaction = genai.interactions.create(model=MODEL, input="hello there", background=True)
    deadline = time.monotonic() + 20
    while genai.interactions.get(interaction.id).status == "in_progress":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    row, _ = run_of(url, interaction.id)
    assert row["protocol"] == "interactions" and row["status"] == 200 and row["finish_reasons"] == ["STOP"]


def access_lines(proc, done, seconds: float = 20) -> list[dict]:
    """The access log's JSON lines, once `done(lines)` holds (within `seconds`)."""
    deadline = time.monotonic() + seconds
    while True:
        lines = [json.loads(line) for line in proc.logs().splitlines() if line.startswith("{")]
        lines = [line for line in lines if line.get("logger") == "gtp.access"]
        if done(lines) or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def test_a_background_run_has_an_access_line_when_it_ends(served):
    """The request that starts a background run is answered (and logged) before the run calls
    Gemini: the run's tokens, upstream time and end were in no access line (an access log summed
    for tokens missed every background run). The run has a line of its own when it ends: the
    request's id, the run's id, status and tokens; the request's line keeps only its own. A run whose
    answer is a failure (Gemini's empty answer) is a 500 on its line and in its exchange (was 200)."""
    proc, url, _ = served
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    started = client.responses.create(model=MODEL, input="hello there", background=True)
    settled(client, started.id)
    failing = client.responses.create(model=MODEL, input="[[mock:error 400]] hi", background=True)
    settled(client, failing.id)
    empty = client.responses.create(model=MODEL, input="[[mock:empty parts]] hi", background=True)
    assert settled(client, empty.id).status == "failed"  # an empty answer is never a success
    slow = client.responses.create(model=MODEL, input="[[mock:slow 3]] tell me a story", background=True)
    assert client.responses.cancel(slow.id).status == "cancelled"
    genai = google.genai.Client(api_key=KEY, http_options={"base_url": url, "api_version": "v1beta"})
    interaction = genai.interactions.create(model=MODEL, input="hello there", background=True)
    runs = (started.id, failing.id, empty.id, slow.id, interaction.id)
    lines = access_lines(proc, lambda lines: set(runs) <= {line.get("run") for line in lines})
    run = {line["run"]: line for line in lines if "run" in line}
    assert set(runs) <= set(run), [line["message"] for line in lines[-8:]]
    ran = run[started.id]
    asked = next(line for line in lines if line["request_id"] == started._request_id and "run" not in line)
    assert ran["request_id"] == started._request_id and ran["method"] == "POST" and ran["route"] == "/v1/responses"
    assert ran["status"] == 200 and ran["input_tokens"] > 0 and ran["output_tokens"] > 0 and ran["upstream_ms"] > 0
    assert ran["client_model"] == MODEL and ran["gemini_model"] == MODEL
    assert ran["message"].endswith(f"(background run {started.id})") and "POST /v1/responses 200" in ran["message"]
    assert asked["status"] == 200 and "input_tokens" not in asked  # the run's tokens are the run's line's
    assert run[failing.id]["status"] == 400 and run[slow.id]["status"] == 499
    assert run[empty.id]["status"] == 500 and run_of(url, empty.id)[0]["status"] == 500
    assert run[interaction.id]["status"] == 200 and run[interaction.id]["input_tokens"] > 0
    assert "interactions" in run[interaction.id]["path"]


def test_each_websocket_message_is_an_exchange_once_answered(served):
    """Codex's default transport: one socket, open up to an hour, carrying every turn. Each
    response.create is an exchange of its own, in the journal as soon as it is answered -- the
    message as the client sent it, the events it got, Gemini's side -- while the socket stays open.
    Before, the socket was one exchange, recorded when it closed, with no client side at all."""
    _, url, _ = served
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0, _strict_response_validation=True)
    headers = {"OpenAI-Beta": "responses_websockets=2026-02-06", "x-gtp-session": "ws-journal"}

    def until_end(conn) -> list[dict]:
        events = []
        while not events or events[-1]["type"] not in ("response.completed", "response.failed", "error"):
            events.append(json.loads(conn.recv_bytes()))
        return events

    def rows(count: int) -> list[dict]:
        deadline = time.monotonic() + 10
        while len(found := exchanges(url, query="?session=ws-journal")) < count:
            assert time.monotonic() < deadline, found
            time.sleep(0.05)
        return found

    with client.responses.connect(extra_headers=headers) as conn:
        conn.send({"type": "response.create", "model": MODEL, "store": False, "tools": [WEATHER],
                   "input": "call get_weather city=Paris"})
        first = until_end(conn)
        assert first[-1]["type"] == "response.completed"
        (row,) = rows(1)  # the socket is still open
        assert (row["method"], row["path"], row["protocol"], row["status"]) == ("WS", "/v1/responses", "responses", 200)
        assert row["calls"][0]["name"] == "get_weather" and row["client_model"] == MODEL and row["input_tokens"] > 0
        doc = json.loads(api(url, f"/inspect/api/exchanges/{row['id']}")[2])
        assert doc["client_request"]["body"]["input"] == "call get_weather city=Paris"
        answered = [json.loads(line) for line in doc["client_answer"]["body"].splitlines()]
        assert answered == first  # every event, as the client got it
        assert doc["upstream"][0]["request"]["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
        assert any(n["kind"] == "schema" for n in doc["decisions"])

        conn.send({"type": "response.processed", "response_id": first[-1]["response"]["id"]})  # Codex's ack
        conn.send({"type": "response.create", "model": MODEL, "previous_response_id": "resp_missing", "input": "hi"})
        refused = until_end(conn)
        assert refused[-1]["type"] == "error" and refused[-1]["status"] == 400
        newest = rows(2)[0]  # the acknowledgement is no exchange
        assert newest["method"] == "WS" and newest["status"] == 400 and "resp_missing" in newest["error"]
        conn.send({"type": "response.create", "model": MODEL, "input": "[[mock:stream_error]] hi"})
        assert until_end(conn)[-1]["type"] == "response.failed"
        newest = rows(3)[0]  # it failed after it started: its 200, and its error
        assert newest["status"] == 200 and newest["error"]
    deadline = time.monotonic() + 10
    while len(found := exchanges(url, query="?session=ws-journal")) < 4:  # the socket's own, once closed
        assert time.monotonic() < deadline, found
        time.sleep(0.05)
    assert (found[0]["method"], found[0]["status"], found[0]["attempts"]) == ("GET", 101, 0)


def test_a_gemini_clients_schema_repairs_are_noted(served):
    """A Gemini REST client's own `parameters` schemas are repaired as an intercepted app's are: each
    repair is a decision of the exchange, with the keyword and where (as for OpenAI clients' tools)."""
    _, url, _ = served
    tools = [{"functionDeclarations": [{"name": "lookup", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 0, "default": 1}},
        "additionalProperties": False}}]}]
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hello"}]}], "tools": tools}).encode()
    request = urllib.request.Request(f"{url}/v1beta/models/{MODEL}:generateContent", data=body, method="POST",
                                     headers={"x-goog-api-key": KEY, "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as r:
        rid = r.headers["x-request-id"]
    row = next(r for r in exchanges(url) if r["request_id"] == rid)
    doc = json.loads(api(url, f"/inspect/api/exchanges/{row['id']}")[2])
    repairs = {(n["tool"], n["keyword"], n["path"]) for n in doc["decisions"] if n["kind"] == "schema"}
    assert repairs == {("lookup", "exclusiveMinimum", "/properties/n"), ("lookup", "default", "/properties/n"),
                       ("lookup", "additionalProperties", "/")}
    sent = json.dumps(doc["upstream"][0]["request"]["tools"])
    assert "\"exclusiveMinimum\"" not in sent and "additionalProperties" not in sent  # (as a keyword)


def test_a_browser_signs_in_once_and_the_key_is_in_no_url(served):
    _, url, _ = served
    with pytest.raises(urllib.error.HTTPError) as e:
        api(url, "/inspect", key=None)
    assert e.value.code == 401 and b'<form method="post"' in e.value.read()  # the sign-in page
    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as e:
        opener.open(urllib.request.Request(url + "/inspect", data=urllib.parse.urlencode({"key": KEY}).encode()),
                    timeout=10)
    assert e.value.code == 303 and e.value.headers["location"] == "/inspect"
    cookie = e.value.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and KEY not in cookie
    jar = cookie.split(";", 1)[0]
    status, _, html = api(url, "/inspect", key=None, cookie=jar)
    assert status == 200 and b"inspect.js" in html and KEY.encode() not in html
    assert api(url, "/inspect/api/exchanges", key=None, cookie=jar)[0] == 200
    with pytest.raises(urllib.error.HTTPError) as e:
        api(url, "/inspect/api/exchanges", key=None, cookie="gtp_inspect=forged")
    assert e.value.code == 401


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_the_inspect_command_prints_the_journal(served):
    _, url, _ = served
    for _ in range(3):  # six exchanges of its own, whatever ran before on this server
        tool_loop(url)
    run = subprocess.run([sys.executable, "-m", "proxy", "inspect", "--url", url, "--key", KEY, "-n", "5"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 5 and "POST /v1/responses [responses]" in lines[-1] and f"-> {MODEL}" in lines[-1]
    last_id = lines[-1].split()[1]
    one = subprocess.run([sys.executable, "-m", "proxy", "inspect", last_id, "--url", url, "--key", KEY],
                         capture_output=True, text=True, timeout=60)
    assert one.returncode == 0 and "decisions:" in one.stdout and "[signature]" in one.stdout
    assert "--- Gemini request ---" in one.stdout and "exclusiveMinimum" in one.stdout
    bad = subprocess.run([sys.executable, "-m", "proxy", "inspect", "--url", url, "--key", "wrong-key-0123456789"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "401" in bad.stderr


def test_each_request_has_one_access_log_line(served):
    """Every request of a burst, more than the log's repeat limit lets through (log_limits.BURST)."""
    proc, url, _ = served
    ids = []
    for _ in range(4):
        r1, r2, _ = tool_loop(url)
        ids += [r1._request_id, r2._request_id]
    lines = access_lines(proc, lambda lines: set(ids) <= {line["request_id"] for line in lines}, seconds=10)
    access = {line["request_id"]: line for line in lines}
    assert [i for i in ids if i not in access] == []
    last = access[ids[-1]]
    assert last["method"] == "POST" and last["route"] == "/v1/responses" and last["status"] == 200
    assert last["client_model"] == MODEL and last["gemini_model"] == MODEL and last["input_tokens"] > 0
    assert last["proxy_ms"] >= 0 and last["upstream_ms"] > 0


def test_spans_reach_a_collector_with_the_genai_conventions(served):
    _, url, collector = served
    parent = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
    tool_loop(url, default_headers={"traceparent": parent})
    deadline = time.monotonic() + 20  # the batch processor exports every 5 s
    while time.monotonic() < deadline and not any(s["trace_id"] == TRACE_ID for s in collector.spans):
        time.sleep(0.2)
    mine = [s for s in collector.spans if s["trace_id"] == TRACE_ID]
    servers = [s for s in mine if s["kind"] == 2]  # SERVER
    clients = [s for s in mine if s["kind"] == 3]  # CLIENT: one per upstream attempt
    assert len(servers) == 2 and servers[0]["parent"] == "00f067aa0ba902b7"
    a = servers[0]["attributes"]
    assert a["gen_ai.system"] == "gemini" and a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.request.model"] == MODEL and a["gen_ai.response.model"]
    assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] >= 0
    assert a["gen_ai.response.finish_reasons"] and a["gtp.request_id"].startswith("req_")
    assert {c["parent"] for c in clients} <= {s["span_id"] for s in servers} and len(clients) >= 2
    assert clients[0]["attributes"]["gtp.upstream.key"].startswith("k-")
    events = [e for s in servers for e in s["events"]]
    calls = [e for e in events if e["name"] == "gen_ai.tool.call"]
    assert calls and calls[0]["attributes"]["gen_ai.tool.name"] == "get_weather"
    assert calls[0]["attributes"]["gen_ai.tool.call.id"]
    assert any(e["name"] == "gtp.schema" for e in events) and any(e["name"] == "gtp.signature" for e in events)
    assert servers[0]["resource"]["service.name"] == "gemini-tool-proxy"


def test_the_canary_key_appears_nowhere(served, tmp_path):
    """The client key in every header and body position; the Gemini key in text: after a tool loop,
    a streamed turn and an error, neither is in the list, any exchange, the live stream, the page,
    the CLI's output, the spans or the log."""
    proc, url, collector = served
    live = urllib.request.urlopen(urllib.request.Request(url + "/inspect/api/live",
                                                         headers={"authorization": f"Bearer {KEY}"}), timeout=30)
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY,
                           default_headers={"x-goog-api-key": KEY, "x-api-key": KEY, "x-canary": KEY,
                                            "cookie": f"session={KEY}"},
                           default_query={"key": KEY})
    tool = {**WEATHER, "description": f"Weather (token {KEY}, Bearer {KEY})"}
    r1 = client.responses.create(model=MODEL, input=f"call get_weather city=Paris {KEY} {GEMINI_KEY}", tools=[tool],
                                 instructions=f"Secret {KEY}", metadata={"k": KEY}, user=KEY)
    call = r1.output[-1]
    with client.responses.stream(model=MODEL, tools=[tool], previous_response_id=r1.id,
                                 input=[{"type": "function_call_output", "call_id": call.call_id,
                                         "output": f"18C {KEY}"}]) as s:
        s.get_final_response()
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model=MODEL, input=KEY, previous_response_id=f"resp_{KEY}")
    # The exchanges of their own: a background run, a WebSocket message, a countTokens call.
    settled(client, client.responses.create(model=MODEL, input=f"hello {KEY}", background=True).id)
    with client.responses.connect(extra_headers={"OpenAI-Beta": "responses_websockets=2026-02-06"}) as conn:
        conn.send({"type": "response.create", "model": MODEL, "input": f"hello {KEY}", "metadata": {"k": KEY}})
        while json.loads(conn.recv_bytes())["type"] not in ("response.completed", "response.failed", "error"):
            pass
    assert client.responses.input_tokens.count(model=MODEL, input=f"count {KEY}").input_tokens > 0
    seen = [live.read1(65536) for _ in range(3)]
    live.close()
    time.sleep(6)  # one more batch of spans
    rows = exchanges(url, query="?limit=50")
    docs = [api(url, f"/inspect/api/exchanges/{r['id']}")[2] for r in rows[:12]]
    kinds = {(r["kind"], r["method"], r["path"].split("?")[0]) for r in rows[:12]}
    assert {("background", "POST", "/v1/responses"), ("frontend", "WS", "/v1/responses")} <= kinds, kinds
    assert [r for r in rows[:12] if r["path"].startswith("/v1/responses/input_tokens")][0]["gemini_model"] == MODEL
    page = api(url, "/inspect")[2] + b"".join(api(url, f"/inspect/static/{n}")[2] for n in ("inspect.js",
                                                                                          "inspect.css"))
    cli = subprocess.run([sys.executable, "-m", "proxy", "inspect", "--url", url, "--key", KEY, rows[0]["id"]],
                         capture_output=True, timeout=60).stdout
    outputs = {"list": json.dumps(rows).encode(), "exchanges": b"".join(docs), "live": b"".join(seen),
               "page": page, "cli": cli, "spans": b"".join(collector.raw), "log": proc.logs().encode()}
    assert len(docs) >= 3 and b"get_weather" in outputs["exchanges"] and b"[redacted]" in outputs["exchanges"]
    for name, data in outputs.items():
        assert KEY.encode() not in data, f"the client key appears in the {name}"
        assert GEMINI_KEY.encode() not in data, f"the Gemini key appears in the {name}"


def test_the_journal_stays_within_its_bytes_under_load(tmp_path):
    mock, murl = mock_gemini(tmp_path)
    proc, url = proxy_instance(tmp_path, "small-journal", murl, "--journal-max-bytes", "256K")
    try:
        client = openai.OpenAI(base_url=url + "/v1", api_key="x")
        big = "lorem ipsum " * 2000  # 24 KB a request, 3 copies an exchange

        def one(i: int) -> None:
            client.responses.create(model="gemini-2.5-flash", input=f"{big} {i}", store=False)

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(one, range(200)))  # each is cut (> 64K): about 2 KB kept, 200 of them overflow
        metrics = api(url, "/metrics", key=None)[2].decode()
        held = next(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith("gtp_journal_bytes"))
        assert 0 < held <= 256 * 1024
        assert 3 <= len(exchanges(url, key=None, query="?limit=1000")) < 200
    finally:
        proc.stop()
        mock.stop()


def test_with_the_collector_down_requests_are_unaffected(tmp_path):
    mock, murl = mock_gemini(tmp_path)
    proc, url = proxy_instance(tmp_path, "dead-collector", murl, "--otlp-endpoint", f"http://127.0.0.1:{free_port()}",
                               "--journal", "off")
    try:
        client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
        start = time.monotonic()
        for _ in range(20):
            assert client.responses.create(model="gemini-2.5-flash", input="hi").status == "completed"
        assert time.monotonic() - start < 20  # no request waits on the exporter (5 s timeout) even once
        deadline = time.monotonic() + 20  # the batch processor's first export (after 5 s), refused
        while time.monotonic() < deadline and "does not take spans" not in proc.logs():
            time.sleep(0.2)
        for _ in range(20):  # while it is down, no span is made
            assert client.responses.create(model="gemini-2.5-flash", input="hi").status == "completed"
        log = proc.logs()
        assert log.count("does not take spans") == 1 and "Queue full" not in log, log[-2000:]
        with pytest.raises(urllib.error.HTTPError) as e:
            api(url, "/inspect/api/exchanges", key=None)
        assert e.value.code == 404  # --journal off
    finally:
        proc.stop()
        mock.stop()


def test_instances_on_one_redis_share_the_journal(tmp_path):
    """Two instances on one Redis: B lists, opens and follows live what A served; only scrubbed
    summaries and documents pass through Redis, none stays there, and an instance that stopped is
    not waited for."""
    import redis

    from proxy.journal.shared import ASK_TIMEOUT
    from tests.servers import RedisServer, monitored

    server = RedisServer(tmp_path)
    mock, murl = mock_gemini(tmp_path)
    a, aurl = proxy_instance(tmp_path, "a", murl, "--store", server.url, "--api-key", KEY, "--api-key", OTHER)
    b, burl = proxy_instance(tmp_path, "b", murl, "--store", server.url, "--api-key", KEY, "--api-key", OTHER)
    try:
        with server.monitor() as seen:
            live = urllib.request.urlopen(urllib.request.Request(
                burl + "/inspect/api/live", headers={"authorization": f"Bearer {KEY}"}), timeout=30)
            assert live.read1(100).startswith(b": live")
            client = openai.OpenAI(base_url=aurl + "/v1", api_key=KEY)
            client.responses.create(model=MODEL, input=f"call get_weather city=Paris {KEY}", tools=[WEATHER])
            announced = live.read1(65536)
            assert b"event: exchange" in announced and b"get_weather" in announced
            [row] = exchanges(burl)
            assert row["calls"][0]["name"] == "get_weather" and exchanges(burl, OTHER) == []
            doc = api(burl, f"/inspect/api/exchanges/{row['id']}")[2]
            assert b"exclusiveMinimum" in doc and KEY.encode() not in doc
            assert json.loads(doc)["client_request"]["body"]["tools"][0]["name"] == "get_weather"
            native = urllib.request.Request(  # the key in the query, a credential header and another header too
                aurl + f"/v1beta/models/gemini-2.5-flash:generateContent?key={KEY}",
                json.dumps({"contents": [{"role": "user", "parts": [{"text": KEY}]}]}).encode(),
                headers={"x-goog-api-key": KEY, "x-note": KEY, "content-type": "application/json"})
            assert urllib.request.urlopen(native, timeout=30).status == 200
            newest = exchanges(burl)[0]
            assert newest["path"] == "/v1beta/models/gemini-2.5-flash:generateContent?key=[redacted]"
            assert KEY.encode() not in api(burl, f"/inspect/api/exchanges/{newest['id']}")[2]
        journal = monitored(seen, b"gtp:jk:")
        assert b"get_weather" in journal and b"generateContent" in journal  # the exchanges went through Redis...
        assert KEY.encode() not in journal  # ...scrubbed (the session store holds the conversation, as it must)
        r = redis.Redis.from_url(server.url)
        assert [k for k in r.scan_iter("gtp:jk:*")] == []  # and nothing of them stays there
        r.close()
        a.stop()
        start = time.monotonic()
        assert exchanges(burl) == []  # B served none; A is gone with its own
        assert time.monotonic() - start < ASK_TIMEOUT  # nobody waited for A
    finally:
        a.stop()
        b.stop()
        mock.stop()
        server.stop()
