"""The journal's pieces as plain data: the byte bound, scopes, redaction, schema repairs."""

import orjson

from proxy.fast_json import held
from proxy.journal.exchange import Exchange, pairs
from proxy.journal.kept import FROZEN, kept_headers, seal, thaw
from proxy.journal.ring import Journal, summarize
from proxy.redact import REDACTED, Redactor, headers, path
from proxy.schema.repairs import schema_repairs


def exchange(i: int, scope: str = "", body: bytes = b'{"input":"hi"}') -> Exchange:
    ex = Exchange(id=f"ex_{i}", kind="frontend", method="POST", path="/v1/responses", protocol="responses",
                  scope=scope)
    ex.request_body = body
    call = ex.upstream("gemini-2.5-flash", {"contents": [], "tools": [{"functionDeclarations": [{"name": "f"}]}]},
                       stream=False)
    call.answer = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "id": "c1"}}]},
                                   "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 5}}
    call.learn(call.answer)
    ex.status = 200
    return ex


def test_the_journal_holds_no_more_than_its_bytes() -> None:
    journal = Journal(max_bytes=200_000)
    for i in range(300):
        journal.add(exchange(i, body=orjson.dumps({"input": "x" * 5000})))
        assert journal.total <= 200_000
    assert 10 < len(journal) < 300
    assert journal.get("", "ex_299") is not None and journal.get("", "ex_0") is None


def test_a_finished_exchange_lets_go_of_its_bodies_the_journal_keeps_them() -> None:
    """A connection to the upstream (or a timer) opened while a request ran keeps a copy of its
    context, exchange.CURRENT with it, for as long as it lives: a finished exchange holds no bodies
    (21 pooled connections kept 4 MB of their first requests' past the journal's budget, issue 62)."""
    from proxy.journal.recorder import Recorder

    recorder = Recorder(Journal())
    ex = exchange(1, body=orjson.dumps({"input": "kept " * 100}))
    recorder.finish(ex)
    assert ex.request_body is None and ex.answer_body is None and ex.upstreams == []
    doc = recorder.journal.get("", "ex_1")
    assert doc is not None and b"kept kept" in doc  # the journal's own copy: the request body
    assert b"gemini-2.5-flash" in doc and b'"promptTokenCount"' in doc  # and its upstream call


def test_one_huge_exchange_keeps_its_summary_not_its_bodies() -> None:
    journal = Journal(max_bytes=100_000)
    journal.add(exchange(1, body=orjson.dumps({"input": "x" * 60_000})))
    doc = orjson.loads(journal.get("", "ex_1"))
    assert doc["calls"] == [{"name": "f", "id": "c1"}] and "cut" in doc["client_request"]["body"]
    assert journal.total <= 100_000


def test_scopes_never_see_each_other() -> None:
    journal = Journal()
    journal.add(exchange(1, scope="c-aaaaaaaaaaaa"))
    journal.add(exchange(2, scope="c-bbbbbbbbbbbb"))
    assert [r["id"] for r in journal.list("c-aaaaaaaaaaaa")] == ["ex_1"]
    assert journal.get("c-aaaaaaaaaaaa", "ex_2") is None and journal.list("") == []


def test_summaries_say_what_happened() -> None:
    journal = Journal()
    journal.add(exchange(1))
    [s] = journal.list("")
    assert s["tools"] == ["f"] and s["calls"] == [{"name": "f", "id": "c1"}] and s["finish_reasons"] == ["STOP"]
    assert s["input_tokens"] == 5 and s["gemini_model"] == "gemini-2.5-flash"
    assert journal.list("", status="error") == [] and len(journal.list("", model="2.5-flash")) == 1


def test_secrets_are_scrubbed_by_value_and_by_shape() -> None:
    r = Redactor(["known-secret-value-123"])
    doc = (b'{"a":"known-secret-value-123","b":"AIzaSyA1234567890123456789012345678901","c":"Bearer abcdefghijkl",'
           b'"d":"ya29.a0AfH6SMB","e":"gtp.v3.sealed.carrier","f":"sk-proj-abcdefghijklmnop1234"}')
    clean = r.scrub(doc, ["per-request-key-xyz"])
    assert orjson.loads(clean) == dict.fromkeys("abcdef", REDACTED)
    assert r.scrub(b"per-request-key-xyz", ["per-request-key-xyz"]) == REDACTED.encode()
    assert headers([("Authorization", "Bearer x"), ("X-Goog-Api-Key", "k"), ("Accept", "*/*")]) == {
        "authorization": REDACTED, "x-goog-api-key": REDACTED, "accept": "*/*"}
    assert path("/v1beta/models/m:generateContent?key=AIza123&alt=sse") == \
        f"/v1beta/models/m:generateContent?key={REDACTED}&alt=sse"


def test_a_journal_document_is_redacted_when_it_leaves() -> None:
    journal = Journal(redactor=Redactor(["canary-0123456789"]))
    ex = exchange(1, body=b'{"input":"canary-0123456789"}')
    ex.secrets = ["presented-key-abcdef"]
    ex.answer_body = b'{"note":"presented-key-abcdef"}'
    ex.answer_headers = {"content-type": "application/json"}
    journal.add(ex)
    out = journal.get("", "ex_1")
    assert b"canary-0123456789" not in out and b"presented-key-abcdef" not in out and out.count(b"[redacted]") == 2


def test_schema_repairs_name_the_keyword_and_where() -> None:
    schema = {"type": "object", "$defs": {"P": {"type": "string"}}, "additionalProperties": False,
              "properties": {"a": {"$ref": "#/$defs/P"}, "b": {"type": ["string", "null"], "const": "x"},
                             "c": {"type": "array", "items": {"type": "integer", "multipleOf": 2}}}}
    got = {(r["path"], r["keyword"]) for r in schema_repairs(schema)}
    assert got == {("/", "$defs"), ("/", "additionalProperties"), ("/properties/a", "$ref"),
                   ("/properties/b", "type"), ("/properties/b", "const"), ("/properties/c/items", "multipleOf")}
    assert schema_repairs({"type": "object", "properties": {"x": {"type": "string"}}}) == []


def _recorded(fn):
    """The notes `fn` leaves on an exchange being recorded."""
    from proxy.journal.exchange import CURRENT
    ex = Exchange(id="ex_n", kind="frontend", method="POST", path="/", protocol="responses")
    token = CURRENT.set(ex)
    try:
        fn()
    finally:
        CURRENT.reset(token)
    return ex.notes


def test_a_call_parsed_from_text_is_noted_with_the_text() -> None:
    from proxy.dialects import ToolSpec, dialect
    from proxy.dialects.parse_answer import AnswerParser

    text = 'Sure. <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'

    def parse() -> None:
        parser = AnswerParser(dialect("hermes"), [ToolSpec("f")])
        parser.chunk({"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": text[:20]}]}}]})
        parser.chunk({"candidates": [{"index": 0, "finishReason": "STOP",
                                      "content": {"role": "model", "parts": [{"text": text[20:]}]}}]})

    [note] = _recorded(parse)
    assert note["kind"] == "dialect" and note["calls"] == ["f"] and note["text"] == text
    assert note["message"] == "1 call(s) parsed from the model's hermes text: f"


def test_history_repairs_are_noted() -> None:
    from proxy.to_gemini.repair_history import repair_history

    contents = [{"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"text": "a"}]}, {"role": "model", "parts": [{"text": "b"}]},
                {"role": "user", "parts": [{"text": "more"}]}]
    notes = _recorded(lambda: repair_history(contents, "gemini-2.5-flash"))
    assert [n["kind"] for n in notes] == ["history"] and "4 turns became 3" in notes[0]["message"]
    assert _recorded(lambda: repair_history([{"role": "user", "parts": [{"text": "hi"}]}], "gemini-2.5-flash")) == []


def test_a_long_stream_keeps_its_summary_not_all_its_chunks() -> None:
    from proxy.journal.exchange import BODY_CAP

    ex = exchange(1)
    call = ex.upstream("gemini-2.5-flash", {}, stream=True)
    for _ in range(2000):
        call.chunk({"candidates": [{"content": {"parts": [{"text": "x" * 1000}]}}]})
    call.chunk({"candidates": [{"content": {"parts": [{"functionCall": {"name": "g", "id": "c9"}}]},
                                "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 7}})
    assert call.chunk_bytes <= BODY_CAP and call.dropped_chunks > 1500
    journal = Journal()
    journal.add(ex)
    [summary] = journal.list("")
    assert {"name": "g", "id": "c9"} in summary["calls"] and summary["input_tokens"] == 7


class StubExporter:
    """An OTLP exporter answering `result` (a SpanExportResult) to each export, counted in `calls`."""

    def __init__(self, result) -> None:
        self.result, self.calls = result, 0

    def export(self, spans):
        self.calls += 1
        return self.result

    def shutdown(self):
        pass


def stub_tracing(exporter: StubExporter, now: list[float]):
    """Tracing to `exporter`, its breaker's clock reading now[0]."""
    from proxy.journal.tracing import Tracing

    tracing = Tracing("http://127.0.0.1:9/v1/traces", exporter=exporter)
    tracing.breaker.clock = lambda: now[0]
    return tracing


def test_a_dead_collector_costs_one_log_line_and_no_spans() -> None:
    from opentelemetry.sdk.trace.export import SpanExportResult

    from proxy.journal.tracing import Breaker

    now = [0.0]
    dead = StubExporter(SpanExportResult.FAILURE)
    tracing = stub_tracing(dead, now)
    assert tracing.breaker.export(["span"]) == SpanExportResult.FAILURE and tracing.breaker.down
    ex = exchange(1)

    def unwanted(ex):
        raise AssertionError("summarized while the collector is down")

    tracing.export(ex, unwanted)  # while it is down: no span is made, nor even the exchange's summary
    assert tracing.breaker.export(["span"]) == SpanExportResult.FAILURE and dead.calls == 1
    now[0] += 2.5  # its wait is over: tried again, and down for longer
    tracing.breaker.export(["span"])
    assert dead.calls == 2 and tracing.breaker.down_until == now[0] + 4
    assert isinstance(tracing.breaker, Breaker)
    tracing.shutdown()


def test_after_its_wait_a_dead_collector_is_probed_with_one_exchange_only() -> None:
    """Spans for every request while a collector that failed is tried again cost as much as tracing
    to a live one: one exchange's spans probe it, the rest are not made until the probe was tried."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    now = [0.0]
    flaky = StubExporter(SpanExportResult.FAILURE)
    tracing = stub_tracing(flaky, now)
    made: list = []

    def counted(ex):
        made.append(ex)
        return summarize(ex)

    tracing.breaker.export(["span"])  # it fails: down for 2 s
    now[0] += 2.5
    for i in range(5):
        tracing.export(exchange(i), counted)
    assert len(made) == 1  # the probe
    tracing.breaker.export(["span"])  # the probe's batch fails: down for 4 s, and nothing is made meanwhile
    tracing.export(exchange(9), counted)
    assert len(made) == 1
    now[0] += 4.5
    flaky.result = SpanExportResult.SUCCESS  # the collector is back
    for i in range(3):
        tracing.export(exchange(i), counted)
    assert len(made) == 2
    tracing.breaker.export(["span"])  # the probe's batch goes through: every exchange's spans again
    for i in range(3):
        tracing.export(exchange(i), counted)
    assert len(made) == 5 and tracing.breaker.failures == 0
    tracing.shutdown()


def test_hostile_answers_never_break_the_record() -> None:
    from proxy.journal.exchange import UpstreamCall

    call = UpstreamCall("m", {}, stream=True)
    for answer in ({"candidates": [{"content": "x"}]}, {"candidates": [{"content": {"parts": "x"}}]},
                   {"candidates": "x"}, {"usageMetadata": "x", "modelVersion": 3}, [], None,
                   {"candidates": [{"finishReason": {"a": 1}, "content": {"parts": [None, {"functionCall": None}]}}]}):
        call.chunk(answer)
    assert call.calls == [] and call.finish == [] and call.usage is None and call.version is None


CLIENT_HEADERS = {"host": "127.0.0.1:8080", "user-agent": "OpenAI/Python 1.99.9", "accept": "application/json",
                  "content-type": "application/json", "authorization": "Bearer sk-test-0123456789abcdef",
                  "x-stainless-lang": "python", "x-stainless-package-version": "1.99.9", "x-stainless-os": "Linux",
                  "x-stainless-arch": "x64", "x-stainless-runtime": "CPython", "x-stainless-runtime-version": "3.13.0",
                  "content-length": "24100", "accept-encoding": "gzip, deflate", "connection": "keep-alive"}


def realistic(i: int, text: int) -> Exchange:
    """An exchange as the front-end leaves it: aiohttp's raw request headers and its answer's headers,
    bodies as bytes (orjson's for what the proxy made), one attempt, a note, a usage with its details."""
    from multidict import CIMultiDict

    raw_headers = tuple((k.encode(), v.encode()) for k, v in CLIENT_HEADERS.items())
    ex = Exchange(id=f"ex_{i:020d}", kind="frontend", method="POST", path="/v1/responses?x=1",
                  request_headers=raw_headers, request_id=f"req_{i:024d}")
    ex.request_body = held(orjson.dumps({"input": "x" * text}))  # as aiohttp reads it: its own size
    body = {"contents": [{"parts": [{"text": "x" * text}]}], "tools": [{"functionDeclarations": [{"name": "f"}]}]}
    call = ex.upstream("gemini-2.5-flash", body, stream=False)
    call.raw, call.body = True, orjson.dumps(body)
    answer = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "id": "c1"}}]},
                              "finishReason": "STOP"}], "modelVersion": "gemini-2.5-flash",
              "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 7,
                                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 5}]}}
    call.answer, call.parsed = held(orjson.dumps(answer)), answer  # as read: its own size
    call.attempts.append({"start": 1.0, "key": "k-0123456789ab", "status": 200, "end": 2.0})
    ex.note("schema", "tool 'f': exclusiveMinimum at /properties/days moved into the description", tool="f")
    ex.answer_body = orjson.dumps({"id": "resp_x", "output": "x" * text})
    ex.answer_headers = CIMultiDict({"content-type": "application/json", "x-request-id": "req_x"})
    ex.status = 200
    return ex


def test_the_journal_counts_what_it_holds_and_hides_it_from_the_collector() -> None:
    """The byte bound is honest (tracemalloc's count of what the kept exchanges hold stays within what
    the journal counts), and what it keeps is invisible to the garbage collector: a kept exchange is
    one tuple of plain values (its headers one block of text in it), untracked by the collector,
    so a full journal adds nothing to the collections every request pays for (kept as objects,
    exchanges cost a third of the journal's CPU)."""
    import gc
    import tracemalloc

    for text, most in ((100, 1 << 30), (24_000, 256 * 1024)):  # small exchanges; exchanges cut to their summary
        journal = Journal(max_bytes=most)
        gc.collect()
        tracemalloc.start()  # before the exchanges are made: what the journal keeps of them is what stays
        made = [realistic(i, text) for i in range(300)]
        for ex in made:
            journal.add(ex)
        del made, ex
        gc.collect()  # a tuple is untracked by the first pass that sees it hold only plain values
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert held <= journal.total <= 2 * held, (text, held, journal.total)
        assert not any(gc.is_tracked(kept) for kept in journal._entries.values())
    [row] = journal.list("", limit=1)
    assert row["calls"] == [{"name": "f", "id": "c1"}] and row["tools"] == ["f"] and row["input_tokens"] == 5
    doc = orjson.loads(journal.get("", row["id"]))
    assert doc["client_request"]["headers"]["authorization"] == REDACTED and doc["decisions"][0]["tool"] == "f"


def test_kept_headers_read_back_as_they_came() -> None:
    """Headers are kept as one block of lines, each name then its value (one object, no pairs to walk):
    a value holding ": ", empty values (the last one too), repeated names and non-ASCII bytes come back
    as they were sent, from the server's raw pairs and from a mapping alike."""
    from multidict import CIMultiDict

    raw = ((b"Host", b"127.0.0.1"), (b"X-Note", b"a: b: c"), (b"X-Empty", b""), (b"Cookie", b"a=1"),
           (b"Cookie", b"b=2"), (b"X-Name", "Zo\u00eb".encode()), (b"X-Last", b""))
    assert pairs(kept_headers(raw)) == tuple((k.decode(), v.decode()) for k, v in raw)
    answer = CIMultiDict([("Content-Type", "application/json"), ("X-Note", "x: y"), ("Set-Cookie", "s=1")])
    assert pairs(kept_headers(answer)) == tuple(answer.items())
    assert pairs(kept_headers({"x-count": 3})) == (("x-count", "3"),)  # values that are not text
    assert pairs(kept_headers(None)) == () and pairs(kept_headers(())) == ()
    for given, want in ((answer, tuple(answer.items())), (CIMultiDict({"x-count": 3}), (("x-count", "3"),))):
        ex = Exchange(1, "frontend", "POST", "/v1/chat/completions")  # seal keeps aiohttp's answer headers itself
        ex.answer_headers = given
        assert pairs(thaw(seal(ex, 1 << 30)[FROZEN]).answer_headers) == want


def test_a_cloud_code_exchange_is_read_through_its_wrappers() -> None:
    """Cloud Code wraps the request in {"request": ...} and the answer in {"response": ...}; the
    addon keeps both as they went, and the summary reads the tools and calls inside them."""
    journal = Journal()
    ex = Exchange(id="ex_cc", kind="mitm", method="POST", path="https://cloudcode-pa.googleapis.com/v1internal:x",
                  protocol="gemini")
    sent = orjson.dumps({"model": "gemini-2.5-pro", "request": {"contents": [], "tools": [
        {"functionDeclarations": [{"name": "read_file"}]}]}})
    call = ex.upstream("gemini-2.5-pro", sent, stream=False)
    call.answer = orjson.dumps({"response": {"candidates": [{"content": {"parts": [
        {"functionCall": {"name": "read_file", "args": {}}}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 9}}})
    ex.status = 200
    journal.add(ex)
    [row] = journal.list("")
    assert row["tools"] == ["read_file"] and row["calls"][0]["name"] == "read_file"
    assert row["finish_reasons"] == ["STOP"] and row["input_tokens"] == 9



def test_seal_keeps_every_field_where_thaw_reads_it() -> None:
    """seal() names its fields in the code (faster than attrgetter): each must land where thaw() reads
    it by _FROZEN's and _FROZEN_CALL's names, for one call and for several, after the filters' head."""
    from proxy.journal import kept as k
    from proxy.journal.exchange import UpstreamCall

    values = {"id": "ex_1", "kind": "frontend", "method": "POST", "path": "/v1/responses", "protocol": "responses",
              "scope": "team", "session": "s1", "request_id": "req_1", "client_model": "gpt-5", "time": 1.5,
              "start": 2.5, "status": 201, "answer_stream_bytes": 4, "traceparent": "00-ab-cd-01", "end": 3.5,
              "cut": False, "identified": True, "request_body": b'{"input":"hi"}', "answer_body": b'{"ok":1}'}
    ex = Exchange.__new__(Exchange)
    for name, value in values.items():
        setattr(ex, name, value)
    ex.answer_stream = [b"da", b"ta"]  # joined
    ex.request_headers, ex.answer_headers = ((b"a", b"1"),), {"b": "2"}  # blocks, read back as pairs
    ex.notes, ex.error, ex.secrets = [{"kind": "k", "message": "m"}], {"message": "x"}, ("s",)
    ex.shared_notes, ex.upstreams = None, []
    for n in range(3):
        call = UpstreamCall(f"model-{n}", f'{{"n":{n}}}'.encode(), stream=bool(n % 2))
        call.raw, call.answer, call.learnt, call.tools = True, f'{{"a":{n}}}'.encode(), True, ["f"]
        call.first_byte, call.last_byte, call.error, call.version = n + 0.25, n + 0.75, f"e{n}", f"v{n}"
        call.dropped_chunks, call.chunk_bytes = n, 10 * n
        call.attempts, call.finish, call.usage = [{"n": n}], ["STOP"], {"u": n}
        ex.upstreams.append(call)
        kept = k.seal(ex, 1 << 30)
        assert kept[k.SCOPE] == "team" and kept[k.FILTERS] == ("s1", "responses", "frontend", 201, "gpt-5",
                                                                f"model-{n}", True)
        assert kept[k.SIZE] > len(kept[k.FROZEN][k.META])
        back = k.thaw(kept[k.FROZEN])
        assert all(getattr(back, name) == value for name, value in values.items())
        assert back.answer_stream == b"data"
        assert (back.request_headers, back.answer_headers) == ((("a", "1"),), (("b", "2"),))
        assert (back.notes, back.error, back.secrets) == (ex.notes, ex.error, ex.secrets)
        for got, want in zip(back.upstreams, ex.upstreams, strict=True):
            assert all(getattr(got, name) == getattr(want, name) for name in k._FROZEN_CALL if name != "chunks")
            assert (got.attempts, got.usage, got.tools, got.chunks) == (want.attempts, want.usage, want.tools, None)


def test_many_known_secrets_are_all_scrubbed_in_one_pass() -> None:
    """Hundreds of client keys, some starting another, some with a pattern's special characters: each
    is replaced whole wherever it appears, with the per-exchange secret and the credential shapes."""
    keys = [f"client-key-{i:04d}-abcdef" for i in range(300)]
    odd = ["a.b*c+d(e)f[g]h", "key-aaaaaaaa", "key-aaaaaaaa-longer", "back\\slash|pipe"]
    r = Redactor([*keys, *odd, "short"])
    doc = orjson.dumps({"k": keys[::37], "odd": odd, "mid": f"x{keys[5]}y", "own": "per-exchange-key-1",
                        "shape": "AIzaSyA1234567890123456789012345678901", "short": "short"})
    clean = r.scrub(doc, ["per-exchange-key-1"])
    assert not any(k.encode() in clean for k in (*keys, *odd, "per-exchange-key-1", "AIzaSy"))
    out = orjson.loads(clean)
    assert out["odd"] == [REDACTED] * 4 and out["mid"] == f"x{REDACTED}y" and out["own"] == REDACTED
    assert out["short"] == "short"  # below MIN_SECRET: ordinary text


def test_a_secret_is_found_as_json_spells_it() -> None:
    """A key holding a quote or a backslash appears escaped in a JSON document: found there too, in the
    document and in a summary, known to the instance or the exchange's own."""
    known, own = 'known"key\\0123', 'own\\key"4567\n'
    r = Redactor([known])
    doc = orjson.dumps({"a": known, "b": own, "error": None})
    assert orjson.loads(r.scrub(doc, [own])) == {"a": REDACTED, "b": REDACTED, "error": None}
    summary = orjson.dumps({"session": own, "error": None})
    assert r.scrub_summary(summary, [own])[1] == {"session": REDACTED, "error": None}


def test_a_body_sent_as_the_app_sent_it_is_kept_once() -> None:
    """The addon forwards an app's body unchanged when it has nothing to change: the journal keeps
    that one object for both the client's request and the upstream's, and copies a body the proxy
    made (orjson's output holds a larger buffer than its length)."""
    from proxy.journal import kept as k

    raw = held(orjson.dumps({"contents": [{"parts": [{"text": "x" * 5000}]}]}))
    made = orjson.dumps({"contents": []})
    for sent, shared, own_bytes in ((raw, True, False), (made, False, False), (made, False, True)):
        ex = Exchange(id="ex_1", kind="mitm", method="POST", path="/v1beta/models/m:generateContent",
                      request_headers=((b"a", b"1"),))
        ex.request_body = raw
        call = ex.upstream("m", sent, stream=False)  # as the addon records it (JournalEnd)
        call.raw = own_bytes  # as the front-end's upstream records the bytes it made
        entry = k.seal(ex, 1 << 30)
        frozen = entry[k.FROZEN]
        kept_body = frozen[k.META + 1 + k._BODY]
        assert (kept_body is raw) is shared and kept_body == sent
        assert frozen[k._FROZEN.index("request_body")] is raw
        alone = k.seal(Exchange(id="ex_1", kind="mitm", method="POST", path="/v1beta/models/m:generateContent",
                                request_headers=((b"a", b"1"),)), 1 << 30)
        extra = entry[k.SIZE] - alone[k.SIZE] - len(raw)  # beyond the request body
        assert extra < len(raw) if shared else extra >= len(sent), "held once: counted once"


def test_shared_notes_are_kept_as_if_made_for_the_exchange() -> None:
    """A tool list's schema repairs are noted on every exchange that uses it, their JSON made once
    (note_all's `json`): seal embeds it where the notes are, between the exchange's own, and the entry
    is the one the notes themselves make, byte for byte; past MAX_NOTES, or not plain JSON, the
    notes are kept as any others."""
    from proxy.journal import kept as k
    from proxy.journal.exchange import MAX_NOTES, SHARED_JSON_MIN, notes_json

    shared = [{"kind": "schema", "message": f"tool 'f': $ref at /properties/p{i} inlined", "path": f"/p{i}"}
              for i in range(20)]
    items = notes_json(shared)
    assert items is not None and orjson.loads(b"[" + items + b"]") == shared

    def sealed(own_before: int, json: bytes | None, own_after: int = 1) -> tuple:
        ex = exchange(1)
        for i in range(own_before):
            ex.note("warning", f"before {i}")
        ex.note_all(shared, json)
        for i in range(own_after):
            ex.note("signature", f"after {i}", call_id=f"c{i}")
        return ex, k.seal(ex, 1 << 30)

    for before in (0, 3):
        ex, with_json = sealed(before, items)
        assert ex.shared_notes == (before, len(shared), items)
        _, without = sealed(before, None)
        assert with_json[k.FROZEN][k.META] == without[k.FROZEN][k.META]
        assert k.thaw(with_json[k.FROZEN]).notes == ex.notes
    once = notes_json([{"kind": "schema", "message": f"made once {i}"} for i in range(SHARED_JSON_MIN)])
    _, trusted = sealed(0, once)  # embedded as it is, not made again from the notes
    assert [n["message"] for n in k.thaw(trusted[k.FROZEN]).notes][-2:] == [f"made once {SHARED_JSON_MIN - 1}",
                                                                            "after 0"]
    ex, full = sealed(MAX_NOTES - 5, items, own_after=0)  # only 5 of them fit: no shared JSON
    assert ex.shared_notes is None and k.thaw(full[k.FROZEN]).notes == ex.notes
    assert len(ex.notes) == MAX_NOTES
    assert notes_json([{"kind": "x", "message": "m", "detail": object()}] * SHARED_JSON_MIN) is None
    assert notes_json(shared[:SHARED_JSON_MIN - 1]) is None  # too few to be worth it
