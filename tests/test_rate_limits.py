"""Budgets and rate limits (proxy/usage/limits.py): --limit's grammar; the admission decision in-process
and in Redis's one script agreeing case by case (GCRA requests, the tokens' sliding window, USD per
day and month); two instances sharing one real Redis exactly; a charge sent again applied once."""

import asyncio
import subprocess
import sys

import openai
import pytest
import redis

from proxy.usage.limits import (
    Limit,
    MemoryLimiter,
    RedisLimiter,
    State,
    Verdict,
    _windows,
    limit_for,
    openai_reset,
    parse_limits,
)
from tests.servers import ROOT, Process, RedisServer

KID = "k-0123456789ab"


def test_limit_grammar() -> None:
    limits = parse_limits(["c-0123456789ab=rpm:60,tpm:100000,usd_day:5,usd_month:50", "*=rpm:2"])
    assert limits["k-0123456789ab"] == Limit(rpm=60, tpm=100000, usd_day=5.0, usd_month=50.0)
    assert limit_for(limits, "c-ffffffffffff") == Limit(rpm=2)


@pytest.mark.parametrize("bad", ["rpm:1", "sk-secret=rpm:1", "*=rpm:0", "*=rpm:1.5", "*=foo:1", "*=rpm:1,rpm:2",
                                 "*=usd_day:inf", "*=tpm:x"])
def test_malformed_limit_is_one_line(bad: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_limits([bad])
    assert "\n" not in str(e.value) and "--limit" in str(e.value)


def _serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "proxy", "serve", "--upstream", "mock", "--port", "0", *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


@pytest.mark.parametrize(("args", "words"), [
    (["--limit", "*=rpm:zero"], ("--limit", "rpm")),
    (["--prices", "/nonexistent/prices.json"], ("prices file", "/nonexistent/prices.json")),
    (["--admin-key", "the-admin-key-of-16-chars"], ("--admin-key", "client key")),
])
def test_a_bad_limit_prices_file_or_admin_key_exits_2_with_one_line_before_listening(args, words) -> None:
    done = _serve(*args)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and all(w in lines[0] for w in words), done.stderr
    assert "ready on" not in done.stdout + done.stderr


def test_limits_from_the_config_file_are_enforced_by_serve(tmp_path) -> None:
    """The config file's `limit` (as the command line's --limit) on a real `serve`."""
    config = tmp_path / "gtp.toml"
    config.write_text('limit = ["*=rpm:1"]\nadmin-key = ["the-admin-key-of-16-chars"]\n')
    proc = Process(tmp_path, "serve", [sys.executable, "-m", "proxy", "serve", "--upstream", "mock", "--port", "0",
                                        "--config", str(config), "--api-key", "a-client-key-of-16-chars",
                                        "--api-key", "the-admin-key-of-16-chars",
                                        "--carrier-keys-file", str(tmp_path / "keys")], "ready",
                   env={"GEMINI_API_KEY": "test-key"})
    try:
        c = openai.OpenAI(base_url=f"{proc.url()}/v1", api_key="a-client-key-of-16-chars", max_retries=0)
        c.responses.create(model="gemini-2.5-flash", input="hello")
        with pytest.raises(openai.RateLimitError) as e:
            c.responses.create(model="gemini-2.5-flash", input="hello")
        assert e.value.response.headers["x-ratelimit-limit-requests"] == "1"
    finally:
        proc.stop()


# -- the decision: in-process and in Redis's script, case by case ---------------------------------------

NOW = 1_800_000_030.25  # 30.25 s into a minute (UTC), mid-day, mid-month
CASES = [  # (limit, state before, expected kind)
    (Limit(rpm=2), State(), ""),
    (Limit(rpm=2), State(tat_ms=30_000), ""),          # one request in the burst: one more fits
    (Limit(rpm=2), State(tat_ms=60_000), "rpm"),       # the whole minute's worth taken
    (Limit(rpm=2), State(tat_ms=30_001), "rpm"),
    (Limit(tpm=100), State(tokens_now=99), ""),
    (Limit(tpm=100), State(tokens_now=100), "tpm"),
    (Limit(tpm=100), State(tokens_before=200, tokens_now=1), "tpm"),  # half the previous minute still counts
    (Limit(tpm=100), State(tokens_before=190, tokens_now=0), ""),     # (floor(190 * 29.75 / 60) = 94)
    (Limit(usd_day=1.0), State(spent_day=10**9), "usd_day"),
    (Limit(usd_day=1.0, usd_month=5.0), State(spent_day=1, spent_month=5 * 10**9), "usd_month"),
    (Limit(rpm=1, tpm=10, usd_day=1.0), State(tat_ms=60_000, tokens_now=10, spent_day=10**9), "usd_day"),
    (Limit(rpm=1, tpm=10), State(tat_ms=60_000, tokens_now=10), "tpm"),  # a token refusal takes no request place
]


def _seed_memory(limiter: MemoryLimiter, s: State) -> None:
    tat, cur, prev, day, month = _windows(KID, NOW, "")
    limiter.values.update({tat: NOW * 1000 + s.tat_ms, cur: s.tokens_now, prev: s.tokens_before, day: s.spent_day,
                           month: s.spent_month})


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server.url
    server.proc.terminate()
    server.proc.wait()


@pytest.mark.parametrize(("limit", "state", "kind"), CASES)
def test_memory_and_redis_decide_alike(redis_url: str, limit: Limit, state: State, kind: str) -> None:
    memory = MemoryLimiter()
    _seed_memory(memory, state)
    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    tat, cur, prev, day, month = _windows(KID, NOW, "gtp:")
    r.mset({tat: NOW * 1000 + state.tat_ms, cur: state.tokens_now, prev: state.tokens_before, day: state.spent_day,
            month: state.spent_month})

    async def both() -> tuple[Verdict, Verdict]:
        shared = RedisLimiter(redis_url)
        try:
            return await memory.admit(KID, limit, NOW), await shared.admit(KID, limit, NOW)
        finally:
            await shared.close()

    mem, red = asyncio.run(both())
    assert (mem.refused_by, red.refused_by) == (kind, kind)
    assert mem.retry_after == pytest.approx(red.retry_after) and (kind == "") == mem.allowed
    assert mem.state.tat_ms == pytest.approx(red.state.tat_ms, abs=1)  # the place taken (or not) alike
    if kind == "usd_day":
        assert mem.retry_after == pytest.approx(86400 - (NOW % 86400))  # until the next UTC day
    if kind == "rpm":
        assert 0 < mem.retry_after <= 30


def test_gcra_spaces_requests_and_redis_is_shared_exactly(redis_url: str) -> None:
    async def run() -> list[bool]:
        a, b = RedisLimiter(redis_url), RedisLimiter(redis_url)  # two instances
        await a.client.flushdb()
        try:
            out = [(await lim.admit(KID, Limit(rpm=3), NOW)).allowed for lim in (a, b, a, b)]
            out.append((await a.admit(KID, Limit(rpm=3), NOW + 20.0)).allowed)  # one interval later: a place
            return out
        finally:
            await a.close()
            await b.close()
    assert asyncio.run(run()) == [True, True, True, False, True]


def test_a_charge_is_applied_once_when_sent_again(redis_url: str) -> None:
    async def run() -> Verdict:
        lim = RedisLimiter(redis_url)
        await lim.client.flushdb()
        try:
            for _ in range(2):  # a retry after a lost reply: the same answer's id
                await lim.charge(KID, 60, 5, answer_id="answer-1", now=NOW)
            return await lim.admit(KID, Limit(tpm=100), NOW)
        finally:
            await lim.close()
    v = asyncio.run(run())
    assert v.state.tokens_now == 60 and v.state.spent_day == 5


def test_openai_reset_spelling() -> None:
    assert [openai_reset(x) for x in (0.017, 1, 59.2, 360, 3723)] == ["17ms", "1s", "1m0s", "6m0s", "1h2m3s"]
