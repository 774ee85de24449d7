"""The addon's work on a flow the CPU's caches no longer hold (issue 62): at an app's pace every flow is
one, and each step then costs several times what it does in a loop. What depends only on a few values
an app sends again and again (its paths, host names, URLs, the rewritten tools' text) is looked up,
not worked out again; these tests hold each lookup to the answer the work gives, and to not keeping
what must not be kept (a key in a query)."""

import pytest
from mitmproxy import http
from mitmproxy.test import tflow, tutils

from proxy.intercept import capture, flow_selection, journal_addon, targets, text_history
from proxy.intercept.targets import classify

GL = "generativelanguage.googleapis.com"


def test_a_path_is_classified_once(monkeypatch: pytest.MonkeyPatch) -> None:
    worked: list[str] = []
    real = targets._classify
    monkeypatch.setattr(targets, "_SEEN", {})
    monkeypatch.setattr(targets, "_classify", lambda path: worked.append(path) or real(path))
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    first = classify(path + "?alt=sse")
    assert first == targets.Target("generativelanguage", "gemini-2.5-flash", "streamGenerateContent")
    assert classify(path + "?alt=sse&key=SECRET") is first and classify(path) is first
    assert classify("/v1/other") is None and classify("/v1/other?x=1") is None
    assert worked == [path, "/v1/other"]
    assert not any("?" in p for p in targets._SEEN)  # a query (a key, maybe) is never kept


def test_classify_stops_remembering_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targets, "_SEEN", {})
    monkeypatch.setattr(targets, "_SEEN_MAX", 3)
    for i in range(10):
        assert classify(f"/v1beta/models/m{i}:generateContent").model == f"m{i}"
    assert len(targets._SEEN) == 3


def test_a_host_is_matched_again_when_the_hosts_change(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flow_selection, "_HOSTS", {})
    every, only_cc = ("*.googleapis.com",), ("cloudcode-pa.googleapis.com",)
    assert flow_selection._intercepted(GL, every) is True
    assert flow_selection._intercepted(GL, every) is True
    assert flow_selection._intercepted(GL, only_cc) is False  # new options: matched again
    assert flow_selection._intercepted(GL, ("*.googleapis.com",)) is True  # an equal tuple, another object
    monkeypatch.setattr(flow_selection, "_HOSTS_MAX", 1)
    assert flow_selection._intercepted("other.googleapis.com", every) is True
    assert list(flow_selection._HOSTS) == [GL]


@pytest.mark.parametrize(("method", "scheme", "host", "port", "path"), [
    (b"POST", b"https", GL, 443, b"/v1beta/models/m:generateContent"),
    (b"POST", b"http", GL, 80, b"/v1beta/models/m:generateContent?alt=sse"),
    (b"POST", b"https", GL, 8443, b"/x"),
    (b"CONNECT", b"", GL, 443, b""),
    (b"OPTIONS", b"https", GL, 443, b"*"),
])
def test_a_url_is_what_mitmproxy_makes_of_the_request(monkeypatch: pytest.MonkeyPatch, method: bytes, scheme: bytes,
                                                      host: str, port: int, path: bytes) -> None:
    monkeypatch.setattr(journal_addon, "_URLS", {})
    req = tutils.treq(method=method, scheme=scheme, host=host, port=port, path=path, authority=b"")
    assert journal_addon._url(req) == req.url
    assert journal_addon._url(req) == req.url  # from the lookup
    assert len(journal_addon._URLS) == 1
    other = tutils.treq(method=method, scheme=scheme, host=host, port=port, path=path + b"2", authority=b"")
    assert journal_addon._url(other) == other.url


def test_a_url_holding_a_key_is_never_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_addon, "_URLS", {})
    req = tutils.treq(method=b"POST", scheme=b"https", host=GL, port=443,
                      path=b"/v1beta/models/m:generateContent?key=AIzaSECRET")
    assert journal_addon._url(req) == req.url
    assert journal_addon._URLS == {}


def test_the_journal_records_the_url_through_the_lookup() -> None:
    """JournalStart's exchange names the URL mitmproxy would (the lookup is on its path)."""
    from proxy.intercept.journal_addon import JournalStart, RecorderRef
    from proxy.journal.recorder import Recorder

    ref = RecorderRef()
    ref.recorder = Recorder.from_options("on")
    flow = tflow.tflow(req=tutils.treq(host=GL, port=443, scheme=b"https", method=b"POST",
                                       path=b"/v1beta/models/m:generateContent", content=b"{}"))
    JournalStart(ref).request(flow)
    assert flow.metadata[journal_addon.EXCHANGE].path == flow.request.url


@pytest.mark.parametrize("rest", [b"{}", b' {"a":1}', b'{"a":1,"b":[2]}', b" { } ", b'{"tools":[{"x":"}"}]}'])
@pytest.mark.parametrize("key", ["contents", "request"])
def test_a_tail_made_beforehand_joins_as_join_does(rest: bytes, key: str) -> None:
    value = b'[{"role":"user","parts":[{"text":"hi"}]}]'
    assert text_history.joined(value, text_history.tail(rest), key) == text_history.join(rest, value, key)


def test_the_rewrite_keeps_the_tail_not_the_rest() -> None:
    """The rewritten members are kept as the tail a body is joined with (one copy of them per flow)."""
    import orjson

    from proxy.intercept.rewrite import Rewrite, _rewritten_rests
    from proxy.session.session_tools import ToolContext

    class _Opts:
        class flow:  # noqa: N801 (the Options' attribute)
            merge_tools = False

    decl = {"name": "t", "description": "d", "parameters": {"type": "object"}}
    ctx = ToolContext(declarations=[decl], tool_config=None, client_names={}, rounds=[], version=b"v1")
    raw = orjson.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [
        {"functionDeclarations": [{"name": "app", "description": "a", "parameters": {"type": "object"}}]}]})
    targets_ = targets.Target("generativelanguage", "gemini-2.5-flash", "generateContent")
    req = flow_selection._split(targets_, None, "gemini-2.5-flash", *text_history.members(raw), "Placeholder")
    assert req is not None and req.contents_raw is not None
    _rewritten_rests.clear()
    after = Rewrite(None, _Opts())._rest(req, ctx)  # type: ignore[arg-type]
    assert after is not None and after.startswith(b",") and after.endswith(b"}")
    sent = orjson.loads(text_history.joined(req.contents_raw, after))
    assert sent["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert [d["name"] for d in sent["tools"][0]["functionDeclarations"]] == ["t"]
    assert Rewrite(None, _Opts())._rest(req, ctx) is after  # the kept one


@pytest.mark.parametrize(("body", "ok"), [
    (b'{"candidates":[]}', True), (b'{"a":"\\ud800"}', True), (b"[1, 2]", True),
    (b'{"a":}', False), (b'{"a":1', False), (b'{"a":1}x', False), (b"", False),
])
def test_an_answer_is_readable_as_the_full_parse_says(body: bytes, ok: bool) -> None:
    from proxy import fast_json

    def full() -> bool:
        try:
            fast_json.loads(body)
        except ValueError:
            return False
        return True

    assert full() is ok
    if ok:
        capture.readable(body)
    else:
        with pytest.raises(ValueError):
            capture.readable(body)


def test_an_unreadable_answer_is_still_told(caplog: pytest.LogCaptureFixture) -> None:
    """Capture.response warns about an answer that is not JSON, through readable()."""
    import asyncio

    from proxy.intercept.capture import Capture
    from proxy.intercept.flow_selection import META, FlowState

    flow = tflow.tflow(resp=True)
    flow.response = http.Response.make(200, b'{"candidates": [', {"content-type": "application/json"})
    flow.metadata[META] = FlowState(targets.Target("generativelanguage", "m", "generateContent"), "m", None)
    with caplog.at_level("WARNING"):
        asyncio.run(Capture(None).response(flow))  # type: ignore[arg-type]
    assert "could not read Gemini's answer" in caplog.text


def _journal_exchange(i: int):
    from proxy.journal.exchange import Exchange

    ex = Exchange(id=f"ex_{i}", kind="mitm", method="POST", path="/v1beta/models/m:generateContent",
                  protocol="gemini")
    ex.request_body, ex.status = b'{"contents":[]}', 200
    return ex


def test_the_interceptor_finishes_exchanges_together_and_a_reader_sees_them_all() -> None:
    """finish_later(): not sealed in the response hook (before the app has its answer), but within
    LATER_SECONDS, at once when LATER_MOST wait, and before anyone reads the journal."""
    import asyncio

    from proxy.journal import recorder as recorder_module
    from proxy.journal.recorder import Recorder
    from proxy.journal.ring import Journal

    async def main() -> None:
        rec = Recorder(Journal())
        rec.finish_later(_journal_exchange(1))
        assert len(rec.journal) == 0  # not on the hook's path
        await asyncio.sleep(recorder_module.LATER_SECONDS + 0.1)
        assert len(rec.journal) == 1  # the timer finished it
        rec.finish_later(_journal_exchange(2))
        assert [s["id"] for s in rec.journal.list("")][0] == "ex_2"  # a reader finishes what waits
        for i in range(3, 3 + recorder_module.LATER_MOST):
            rec.finish_later(_journal_exchange(i))
        assert len(rec.journal) == 2 + recorder_module.LATER_MOST  # a full batch at once
        rec.finish_soon(_journal_exchange(100))  # the front-end's, in the same process: the next turn
        rec.finish_later(_journal_exchange(101))
        await asyncio.sleep(0)
        assert len(rec.journal) == 4 + recorder_module.LATER_MOST
        rec.finish_later(_journal_exchange(102))
        rec.close()  # shutting down keeps what waits
        assert len(rec.journal) == 5 + recorder_module.LATER_MOST

    asyncio.run(main())


def test_the_addon_seals_no_exchange_in_the_response_hook_and_keeps_them_when_mitmdump_stops() -> None:
    import asyncio

    from proxy.intercept.journal_addon import EXCHANGE, JournalEnd, RecorderRef
    from proxy.journal.recorder import Recorder

    async def main() -> None:
        ref = RecorderRef()
        ref.recorder = Recorder.from_options("on")
        flow = tflow.tflow(resp=True)
        flow.metadata[EXCHANGE] = _journal_exchange(1)
        end = JournalEnd(ref)
        end.response(flow)
        assert len(ref.recorder.journal) == 0
        end.done()
        assert len(ref.recorder.journal) == 1

    asyncio.run(main())
