"""Usage per key and budgets (issue 61 items 1 and 2) through the front-end, with the official SDKs over
the strict mock: every protocol's answers are counted per key id x model x day with the tokens the
mock billed and genai-prices' cost; a key over its --limit gets its protocol's own rate-limit error
(OpenAI 429 + Retry-After + x-ratelimit-*, Anthropic rate_limit_error, Gemini RESOURCE_EXHAUSTED with
RetryInfo) before Gemini is asked, never a cut stream; two instances on one real Redis share both the
counters and the limits; a Redis outage refuses limited keys (503 store_unavailable) while the others
keep working."""

import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import genai_prices
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gtypes

from proxy.server.auth import scope_of
from proxy.usage.ledger import Ledger
from proxy.usage.limits import key_id, parse_limits
from proxy.usage.meter import Prices
from tests.conftest import WEATHER
from tests.harness import Stack
from tests.servers import RedisServer

KEY, OTHER, ADMIN = "a-client-key-of-16-chars", "another-client-key-16", "the-admin-key-of-16-chars"
KID, OTHER_KID = key_id(scope_of(KEY)), key_id(scope_of(OTHER))
FLASH = "gemini-2.5-flash"


def usage(stack: Stack, auth: str = ADMIN, **query: str) -> tuple[int, dict[str, Any]]:
    q = "&".join(f"{k}={v}" for k, v in query.items())
    req = urllib.request.Request(f"{stack.url}/v1/usage?{q}", headers={"Authorization": f"Bearer {auth}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def oai(stack: Stack, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.url}/v1", api_key=key, max_retries=0, _strict_response_validation=True)


def rows_by_model(stack: Stack, auth: str = KEY) -> dict[str, dict[str, Any]]:
    status, body = usage(stack, auth, group_by="model")
    assert status == 200, body
    return {r["model"]: r for r in body["data"]}


def mock_usages(stack: Stack, since: int) -> list[dict[str, int]]:
    """The usageMetadata the mock billed for each request since `since` (its last chunk's)."""
    return [r["usage"] for r in stack.received[since:]]


# -- usage ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def counted():
    s = Stack(keys=[KEY, OTHER, ADMIN], usage=Ledger(admins=[scope_of(ADMIN)]))
    yield s
    s.close()


def test_every_protocol_is_counted_with_the_tokens_gemini_billed_and_their_cost(counted: Stack) -> None:
    before = len(counted.received)
    c = oai(counted)
    c.responses.create(model=FLASH, input="Weather in Paris? (get_weather)", tools=[WEATHER])
    list(c.responses.create(model=FLASH, input="hello", stream=True))
    c.chat.completions.create(model=FLASH, messages=[{"role": "user", "content": "hello"}])
    anthropic.Anthropic(base_url=counted.url, api_key=KEY, max_retries=0).messages.create(
        model=FLASH, max_tokens=100, messages=[{"role": "user", "content": "hello"}])
    g = genai.Client(api_key=KEY, http_options=gtypes.HttpOptions(base_url=counted.url))
    g.models.generate_content(model=FLASH, contents="hello")
    with c.responses.connect() as conn:  # the WebSocket: one connection, its own answers
        conn.send({"type": "response.create", "model": FLASH, "store": False, "input": "hello"})
        for event in conn:
            if event.type in ("response.completed", "response.failed", "error"):
                break
    billed = mock_usages(counted, before)
    assert len(billed) == 6
    row = rows_by_model(counted)[FLASH]
    assert row["requests"] == 6 and row["errors"] == 0 and row["tool_calls"] == 1
    assert row["input_tokens"] == sum(u["promptTokenCount"] for u in billed)
    assert row["output_tokens"] == sum(u["candidatesTokenCount"] for u in billed)
    assert row["thinking_tokens"] == sum(u.get("thoughtsTokenCount", 0) for u in billed)
    cost = sum(genai_prices.calc_price(genai_prices.Usage(
        input_tokens=u["promptTokenCount"], output_tokens=u["candidatesTokenCount"] + u.get("thoughtsTokenCount", 0)),
        FLASH, provider_id="google").total_price for u in billed)
    assert row["cost_usd"] == pytest.approx(float(cost), rel=1e-6)


def test_a_stream_that_broke_is_an_error_with_what_was_billed(counted: Stack) -> None:
    def row() -> dict[str, Any]:
        _, body = usage(counted, ADMIN, key=OTHER_KID)
        return next((r for r in body["data"] if r["model"] == FLASH), {"requests": 0, "errors": 0, "input_tokens": 0})

    before, sent = row(), len(counted.received)
    events = list(oai(counted, OTHER).responses.create(model=FLASH, input="[[mock:stream_error 500]] hello",
                                                        stream=True))
    assert events[-1].type in ("response.failed", "error")
    after, billed = row(), mock_usages(counted, sent)
    assert after["requests"] - before["requests"] == 1 and after["errors"] - before["errors"] == 1
    # the usage of the chunk Gemini sent before it failed
    assert after["input_tokens"] - before["input_tokens"] == billed[0]["promptTokenCount"] > 0


def test_a_key_reads_only_its_own_usage_and_an_admin_every_key(counted: Stack) -> None:
    oai(counted, OTHER).responses.create(model=FLASH, input="hello")
    _, mine = usage(counted, KEY)
    assert {r["key"] for r in mine["data"]} == {KID}
    status, refused = usage(counted, KEY, key=OTHER_KID)
    assert status == 403 and refused["error"]["param"] == "key"
    _, everyone = usage(counted, ADMIN)
    assert {KID, OTHER_KID} <= {r["key"] for r in everyone["data"]}
    assert everyone["totals"]["requests"] == sum(r["requests"] for r in everyone["data"])
    assert "genai-prices" in everyone["price_source"]
    assert not any(k in json.dumps(everyone) for k in (KEY, OTHER, ADMIN))  # ids, never keys


@pytest.mark.parametrize(("query", "param"), [({"from": "2026-13-01"}, "from"), ({"to": "yesterday"}, "to"),
                                              ({"from": "2026-12-02", "to": "2026-12-01"}, "from"),
                                              ({"from": "2020-01-01", "to": "2026-12-01"}, "from"),
                                              ({"group_by": "key,colour"}, "group_by")])
def test_a_bad_query_is_a_400_naming_the_parameter(counted: Stack, query: dict[str, str], param: str) -> None:
    status, body = usage(counted, **query)
    assert status == 400 and body["error"]["param"] == param, body


def test_the_fallback_model_that_answered_is_the_one_counted() -> None:
    from proxy.model_rules import ModelRules
    pro = "gemini-3.1-pro-preview"
    s = Stack(rules=ModelRules.parse(fallback=[f"{pro}={FLASH}"]), usage=Ledger())
    try:
        oai(s, "test-key").responses.create(model=pro, input=f"[[mock:error_on {pro} 429]] hello")
        _, body = usage(s, "test-key", group_by="model")
        by_model = {r["model"]: r for r in body["data"]}
        assert by_model[FLASH]["requests"] == 1 and by_model[FLASH]["errors"] == 0
        # The pro model's 429: under its name once an answer made it known in this process, else "other".
        refused = by_model.get(pro) or by_model["other"]
        assert refused["errors"] == 1 and refused["output_tokens"] == 0
    finally:
        s.close()


# -- limits ---------------------------------------------------------------------------------------------

def limited(spec: list[str], **kwargs: Any) -> Stack:
    return Stack(keys=[KEY, OTHER, ADMIN], usage=Ledger(limits=parse_limits(spec), admins=[scope_of(ADMIN)],
                                                        **kwargs))


def test_rpm_openai_429_with_its_headers_then_streams_refused_before_any_event() -> None:
    s = limited([f"{KID}=rpm:2"])
    try:
        c = oai(s)
        first = c.responses.with_raw_response.create(model=FLASH, input="hello")
        assert first.headers["x-ratelimit-limit-requests"] == "2"
        assert first.headers["x-ratelimit-remaining-requests"] == "1"
        assert first.headers["x-ratelimit-reset-requests"].endswith("s")
        c.chat.completions.create(model=FLASH, messages=[{"role": "user", "content": "hello"}])
        before = len(s.received)
        with pytest.raises(openai.RateLimitError) as e:
            c.responses.create(model=FLASH, input="hello", stream=True)  # a 429, not a stream that fails
        assert e.value.status_code == 429 and e.value.code == "rate_limit_exceeded"
        assert 25 <= int(e.value.response.headers["retry-after"]) <= 31
        assert "rpm" in e.value.message and e.value.response.headers["x-ratelimit-remaining-requests"] == "0"
        with pytest.raises(openai.RateLimitError):
            c.chat.completions.create(model=FLASH, messages=[{"role": "user", "content": "hello"}], stream=True)
        assert len(s.received) == before  # Gemini was not asked
        oai(s, OTHER).responses.create(model=FLASH, input="hello")  # another key has no limit
    finally:
        s.close()


def test_rpm_anthropic_rate_limit_error_and_gemini_resource_exhausted() -> None:
    s = limited(["*=rpm:1"])
    try:
        ant = anthropic.Anthropic(base_url=s.url, api_key=KEY, max_retries=0)
        ok = ant.messages.with_raw_response.create(model=FLASH, max_tokens=50,
                                                   messages=[{"role": "user", "content": "hello"}])
        assert ok.headers["anthropic-ratelimit-requests-limit"] == "1"
        assert ok.headers["anthropic-ratelimit-requests-reset"].endswith("Z")
        with pytest.raises(anthropic.RateLimitError) as e:
            ant.messages.create(model=FLASH, max_tokens=50, messages=[{"role": "user", "content": "hello"}],
                                stream=True)
        assert e.value.body["error"]["type"] == "rate_limit_error" and e.value.response.headers["retry-after"]
        g = genai.Client(api_key=OTHER, http_options=gtypes.HttpOptions(base_url=s.url, retry_options=None))
        g.models.generate_content(model=FLASH, contents="hello")
        with pytest.raises(genai_errors.ClientError) as ge:
            g.models.generate_content(model=FLASH, contents="hello")
        assert ge.value.code == 429 and ge.value.status == "RESOURCE_EXHAUSTED"
        details = {d["@type"].rsplit(".", 1)[1]: d for d in ge.value.details["error"]["details"]}
        assert details["RetryInfo"]["retryDelay"].endswith("s")
        assert details["QuotaFailure"]["violations"][0]["quotaId"] == "rpm"
    finally:
        s.close()


def test_tokens_per_minute_are_charged_with_what_gemini_billed() -> None:
    s = limited([f"{KID}=tpm:40"])
    try:
        c = oai(s)
        before = len(s.received)
        ok = c.responses.with_raw_response.create(model=FLASH, input="hello " * 40)  # > 40 tokens billed
        assert ok.headers["x-ratelimit-remaining-tokens"] == "40"  # (checked before this answer was charged)
        billed = mock_usages(s, before)[0]
        assert billed["promptTokenCount"] + billed["candidatesTokenCount"] > 40
        s.lt.run(_flush(s))
        with pytest.raises(openai.RateLimitError) as e:
            c.responses.create(model=FLASH, input="hello")
        assert "tokens per minute" in e.value.message
        assert e.value.response.headers["x-ratelimit-remaining-tokens"] == "0"
    finally:
        s.close()


async def _flush(s: Stack) -> None:
    from proxy.server.context import CONTEXT
    await s.app[CONTEXT].usage.flush()


def test_usd_per_day_budget_refuses_until_the_next_utc_day(tmp_path) -> None:
    prices = tmp_path / "prices.json"  # a contract price that makes one answer cost more than the budget
    prices.write_text(json.dumps({"source": "our contract", "models": {FLASH: {"input_mtok": 100000}}}))
    s = limited([f"{KID}=usd_day:0.5"], prices=Prices.load(str(prices)))
    try:
        c = oai(s)
        c.responses.create(model=FLASH, input="hello " * 10)
        s.lt.run(_flush(s))
        with pytest.raises(openai.RateLimitError) as e:
            c.responses.create(model=FLASH, input="hello")
        assert "USD per day" in e.value.message
        assert 0 < int(e.value.response.headers["retry-after"]) <= 86400
        _, body = usage(s, ADMIN)
        assert body["totals"]["cost_usd"] > 0.5 and "our contract" in body["price_source"]
    finally:
        s.close()


def test_two_instances_on_one_redis_share_limits_and_counters_and_an_outage_fails_closed(tmp_path) -> None:
    redis = RedisServer(tmp_path)
    a = b = None
    try:
        spec = parse_limits([f"{KID}=rpm:3"])
        a = Stack(keys=[KEY, OTHER, ADMIN], usage=Ledger.open(redis.url, limits=spec, admins=[scope_of(ADMIN)]))
        b = Stack(keys=[KEY, OTHER, ADMIN], usage=Ledger.open(redis.url, limits=spec, admins=[scope_of(ADMIN)]))
        served = []
        for stack in (a, b, a, b):
            try:
                oai(stack).responses.create(model=FLASH, input="hello")
                served.append(True)
            except openai.RateLimitError:
                served.append(False)
        assert served == [True, True, True, False]  # the 4th of 3 per minute, across both instances
        oai(b, OTHER).responses.create(model=FLASH, input="hello")
        _, from_a = usage(a, ADMIN)
        _, from_b = usage(b, ADMIN)
        mine = [r for r in from_a["data"] if r["key"] == KID]
        assert mine[0]["requests"] == 3 and from_a["data"] == from_b["data"]  # added up, read from either
        redis.proc.terminate()
        redis.proc.wait()
        with pytest.raises(openai.InternalServerError) as e:
            oai(a).responses.create(model=FLASH, input="hello")
        assert e.value.status_code == 503 and e.value.code == "store_unavailable"
        oai(a, OTHER).responses.create(model=FLASH, input="hello")  # no limit: still served
    finally:
        for stack in (a, b):
            if stack is not None:
                stack.close()
        if redis.proc.poll() is None:
            redis.proc.terminate()


def test_rpm_on_the_websocket_is_an_error_event_and_the_socket_stays_open() -> None:
    s = limited([f"{KID}=rpm:1"])
    try:
        ends = []
        with oai(s).responses.connect() as conn:
            for _ in range(2):
                conn.send({"type": "response.create", "model": FLASH, "store": False, "input": "hello"})
                for event in conn:
                    if event.type in ("response.completed", "response.failed", "error"):
                        ends.append(event)
                        break
        assert ends[0].type == "response.completed"
        assert ends[1].type == "error" and ends[1].error.code == "rate_limit_exceeded"
        assert "requests per minute" in ends[1].error.message
    finally:
        s.close()
