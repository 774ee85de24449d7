"""Issue 12 items 4-5: the upstream key pool, /metrics read with Prometheus's own parser, JSON logs
with request and session ids — on a real `serve` process in front of the mock."""

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import urllib3
from prometheus_client.parser import text_string_to_metric_families

from proxy import metrics
from proxy.upstream.gemini.credentials import ApiKey
from proxy.upstream.gemini.key_pool import KeyPool
from tests.servers import Process, free_port, mock_gemini

GOOD, EXHAUSTED = "good-key-0001", "exhausted-key-0002"
CLIENT = "client-key-0123456789"  # clients present this; Gemini is called with the server's pool


class Served:
    def __init__(self, tmp: Path) -> None:
        self.mock, mock_url = mock_gemini(tmp)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = Process(tmp, "serve", [sys.executable, "-m", "proxy", "--log-format", "json", "serve",
                                           "--port", str(port), "--upstream", mock_url,
                                           "--gemini-key", EXHAUSTED, "--gemini-key", GOOD,
                                           "--api-key", CLIENT], "ready")
        self.client = openai.OpenAI(base_url=f"{self.url}/v1", api_key=CLIENT, max_retries=0,
                                    _strict_response_validation=True)

    def metrics(self) -> dict[tuple[str, tuple], float]:
        body = self.scrape()
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(body) for s in family.samples}

    def scrape(self) -> str:
        auth = {"authorization": f"Bearer {CLIENT}"}
        return urllib3.request("GET", f"{self.url}/metrics", headers=auth).data.decode()

    def stop(self) -> None:
        self.proc.stop()
        self.mock.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = Served(tmp_path_factory.mktemp("ops"))
    yield s
    s.stop()


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_a_rate_limited_key_rests_and_the_next_one_serves(served: Served) -> None:
    r = served.client.responses.create(model="gemini-2.5-flash", input="hello")
    assert r.status == "completed"
    m = served.metrics()
    bad, good = metrics.key_label(EXHAUSTED), metrics.key_label(GOOD)
    assert value(m, "gtp_key_requests_total", key=bad, outcome="rate_limited") == 1
    assert value(m, "gtp_key_requests_total", key=good, outcome="ok") == 1
    assert 25 < value(m, "gtp_key_cooling_seconds", key=bad) <= 30, "cooled for the 30s Gemini asked"
    for _ in range(3):  # while it rests, the exhausted key is not tried again
        served.client.responses.create(model="gemini-2.5-flash", input="again")
    m = served.metrics()
    assert value(m, "gtp_key_requests_total", key=bad, outcome="rate_limited") == 1
    assert value(m, "gtp_key_requests_total", key=good, outcome="ok") == 4
    assert EXHAUSTED not in served.scrape() and GOOD not in served.scrape(), "keys never shown"


def test_every_key_cooling_is_a_429_with_retry_after() -> None:
    now = [0.0]
    pool = KeyPool(["a" * 16, "b" * 16, "a" * 16], clock=lambda: now[0])
    a, b = pool.pick(), pool.pick()
    assert isinstance(a, ApiKey) and isinstance(b, ApiKey) and (a.key, b.key) == ("a" * 16, "b" * 16)
    assert pool.pick() is a and len(pool) == 2, "a key given twice is one key"
    pool.cool(a, 10)
    pool.cool(b, None)  # no hint: the default minute
    assert pool.pick() is None and pool.soonest() == 10
    now[0] = 10
    assert pool.pick() is a


def test_metrics_move_as_requests_flow(served: Served) -> None:
    before = served.metrics()
    served.client.responses.create(model="gemini-2.5-flash", input="call get_weather city=Paris",
                                   tools=[{"type": "function", "name": "get_weather", "parameters": {
                                       "type": "object", "properties": {"city": {"type": "string"}}}}])
    with served.client.responses.stream(model="gemini-2.5-flash", input="stream please") as s:
        list(s)
    with pytest.raises(openai.BadRequestError):
        served.client.responses.create(model="gemini-2.5-flash", input="x", previous_response_id="resp_nope")
    served.client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": "hi"}])
    after = served.metrics()

    def grew(name: str, by: float = 1, **labels: str) -> None:
        assert value(after, name, **labels) - value(before, name, **labels) == by, (name, labels)

    grew("gtp_requests_total", 2, route="/v1/responses", model="gemini-2.5-flash", outcome="ok")
    grew("gtp_requests_total", 1, route="/v1/responses", model="none", outcome="client_error")
    grew("gtp_requests_total", 1, route="/v1/chat/completions", model="gemini-2.5-flash", outcome="ok")
    grew("gtp_tool_calls_total", 1, route="responses")
    grew("gtp_added_seconds_count", 3, route="/v1/responses")
    grew("gtp_upstream_seconds_count", 3, route="/v1/responses")
    assert value(after, "gtp_tokens_total", key=metrics.key_label(GOOD), model="gemini-2.5-flash", kind="input") > \
        value(before, "gtp_tokens_total", key=metrics.key_label(GOOD), model="gemini-2.5-flash", kind="input")
    assert value(after, "gtp_store_entries") > 0 and value(after, "gtp_store_bytes") > 0
    assert value(after, "process_resident_memory_bytes") > 0


def test_cached_metric_children_are_the_exposed_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """metrics.child caches labels(); what it counts must show in the exposition, also after the
    cache starts over at its bound."""
    monkeypatch.setattr(metrics, "MAX_CHILDREN", 3)
    monkeypatch.setattr(metrics, "_CHILDREN", {})

    def count(route: str) -> float:
        return value(exposed(), "gtp_tool_calls_total", route=route)

    def exposed() -> dict:
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in text_string_to_metric_families(metrics.exposition().decode()) for s in f.samples}

    routes = [f"child-test-{i}" for i in range(5)]
    start = {r: count(r) for r in routes}
    for _ in range(2):
        for r in routes:
            metrics.child(metrics.TOOL_CALLS, r).inc(2)
            assert metrics.child(metrics.TOOL_CALLS, r) is metrics.TOOL_CALLS.labels(r)
    assert len(metrics._CHILDREN) <= 3
    assert {r: count(r) - start[r] for r in routes} == dict.fromkeys(routes, 4)


def test_logs_are_json_with_request_and_session_ids(served: Served) -> None:
    r = urllib3.request("POST", f"{served.url}/v1/responses", json={"model": "gemini-2.5-flash", "input": "hello",
                                                                     "stream": False},
                        headers={"x-request-id": "trace-42", "x-gtp-session": "logged-session",
                                 "authorization": f"Bearer {CLIENT}"})
    assert r.status == 200 and r.headers["x-request-id"] == "trace-42"
    urllib3.request("POST", f"{served.url}/v1/responses", json={"model": "gemini-2.5-flash", "input": "x",
                                                                 "previous_response_id": "resp_missing"},
                    headers={"x-request-id": "trace-43", "x-gtp-session": "logged-session",
                             "authorization": f"Bearer {CLIENT}"})
    lines = [json.loads(line) for line in served.proc.logs().splitlines() if line.startswith("{")]
    assert lines, served.proc.logs()
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    tagged = [line for line in lines if line.get("request_id") == "trace-43"]
    assert tagged and tagged[0]["session_id"] == "logged-session", lines[-5:]
    assert all(k not in served.proc.logs() for k in (GOOD, EXHAUSTED, CLIENT)), "keys never logged"
