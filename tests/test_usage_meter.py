"""Usage counters and cost (issue 61 item 1): cost from genai-prices per answer, the long-context
tier and cached prices as genai-prices computes them, a --prices override, and two writers on one
real Redis adding up exactly, also across a Redis restart mid-load."""

import asyncio
import json
import random

import genai_prices
import pytest

from proxy.usage.counters import MemoryCounters, RedisCounters
from proxy.usage.meter import NANO, AnswerUsage, PriceError, Prices, increments
from tests.servers import RedisServer


def _expected(model, u):
    usage = genai_prices.Usage(input_tokens=u.input, cache_read_tokens=u.cached, output_tokens=u.output + u.thinking)
    return int(genai_prices.calc_price(usage, model, provider_id="google").total_price * 10**9)


@pytest.mark.parametrize("u", [AnswerUsage(1000, 0, 50, 100), AnswerUsage(1000, 800, 0, 100),
                               AnswerUsage(250_000, 0, 0, 100), AnswerUsage(250_000, 200_000, 10, 100)])
def test_cost_is_genai_prices(u):
    assert Prices().cost_nusd("gemini-2.5-pro", u) == _expected("gemini-2.5-pro", u)


def test_long_context_and_cached_tiers_differ():
    p = Prices()
    short = p.cost_nusd("gemini-2.5-pro", AnswerUsage(199_999))
    long_ = p.cost_nusd("gemini-2.5-pro", AnswerUsage(200_001))
    assert long_ > 1.9 * short  # the whole long request at the long-context rate (a cliff, as Google bills)
    assert p.cost_nusd("gemini-2.5-pro", AnswerUsage(1000, 1000)) < p.cost_nusd("gemini-2.5-pro", AnswerUsage(1000))


def test_unknown_model_is_counted_unpriced():
    inc = increments("no-such-model", AnswerUsage(10, 0, 0, 5), False, Prices())
    assert inc["unpriced"] == 1 and "cost_nusd" not in inc and inc["input"] == 10


def test_prices_file_overrides(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"source": "contract", "models": {"gemini-2.5-pro": {
        "input_mtok": {"base": 1, "tiers": [{"start": 200000, "price": 2}]}, "output_mtok": 10}}}))
    p = Prices.load(str(f))
    assert p.cost_nusd("gemini-2.5-pro", AnswerUsage(1_000_000, 0, 0, 0)) == 2 * 10**9
    assert p.cost_nusd("models/gemini-2.5-pro", AnswerUsage(100_000, 0, 0, 100_000)) == 10**8 + 10**9
    assert p.cost_nusd("gemini-2.5-flash", AnswerUsage(1000)) == _expected("gemini-2.5-flash", AnswerUsage(1000))
    assert "contract" in p.source and "genai-prices" in p.source


def _calc_price(prices: Prices, model: str, u: AnswerUsage) -> int | None:
    """Prices.cost_nusd as it was before it kept the resolved prices: genai-prices' calc_price (or
    the override's ModelPrice.calc_price) on every call."""
    usage = genai_prices.Usage(input_tokens=u.input, cache_read_tokens=u.cached, output_tokens=u.output + u.thinking)
    bare = model.removeprefix("models/")
    try:
        if bare in prices.overrides:
            total = prices.overrides[bare].calc_price(usage)["total_price"]
        else:
            total = genai_prices.calc_price(usage, bare, provider_id="google").total_price
    except Exception:  # noqa: BLE001 - unpriced, as cost_nusd counts it
        return None
    return int((total * NANO).to_integral_value())


def _usages(rnd: random.Random, n: int) -> list[AnswerUsage]:
    """Zeros, tier edges (200k), cached above input (an error genai-prices raises), and random counts."""
    edges = [0, 1, 2, 999, 128_000, 199_999, 200_000, 200_001, 1_000_000, 3_000_001]
    out = [AnswerUsage(i, c, t, o) for i in (0, 5, 200_001) for c in (0, 5, 6) for t in (0, 3) for o in (0, 7)]
    for _ in range(n):
        out.append(AnswerUsage(*(rnd.choice(edges) if rnd.random() < 0.4 else rnd.randrange(0, 400_000)
                                 for _ in range(4)), tool_calls=rnd.randrange(3)))
    return out


def test_cost_is_calc_price_exactly_for_every_google_model_and_many_usages():
    """The kept per-model prices add up to genai-prices' calc_price to the nano-dollar, for every
    model genai-prices prices for google: tiered ones (gemini-2.5-pro's long context), ones whose
    price changes on a date (conditional prices), ones with audio and web-search prices."""
    snapshot = genai_prices.data_snapshot.get_snapshot()
    models = [m.id for p in snapshot.providers if p.id == "google" for m in p.models]
    assert "gemini-2.5-pro" in models and len(models) > 20
    tiered = [m.id for p in snapshot.providers if p.id == "google" for m in p.models
              if isinstance(m.prices, genai_prices.types.ModelPrice)
              and any(isinstance(v, genai_prices.types.TieredPrices) for v in m.prices.__dict__.values())]
    assert "gemini-2.5-pro" in tiered
    rnd, prices, seen = random.Random(62), Prices(), set()
    for model in [*models, "models/gemini-2.5-flash", "no-such-model"]:
        for u in _usages(rnd, 80):
            got, want = prices.cost_nusd(model, u), _calc_price(prices, model, u)
            assert got == want, (model, u)
            seen.add(want is None)
            if want is not None:  # the sum itself, not only its nano-dollars
                usage = genai_prices.Usage(input_tokens=u.input, cache_read_tokens=u.cached,
                                           output_tokens=u.output + u.thinking)
                total = genai_prices.calc_price(usage, model.removeprefix("models/"), provider_id="google").total_price
                assert prices._plan(model.removeprefix("models/")).total(u.input, u.cached,
                                                                         u.output + u.thinking) == total, (model, u)
    assert seen == {True, False}  # priced ones, and unpriced ones (cached above input, an unknown model)


def test_override_cost_is_calc_price_exactly(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"models": {
        "gemini-2.5-pro": {"input_mtok": {"base": 1.25, "tiers": [{"start": 200000, "price": 2.5},
                                                                  {"start": 1000000, "price": 3}]},
                           "cache_read_mtok": {"base": 0.125, "tiers": [{"start": 200000, "price": 0.25}]},
                           "output_mtok": 10.5},
        "gemini-2.5-flash": {"output_mtok": 2.5},
        "my-tuned-model": {"input_mtok": 0.3, "cache_read_mtok": 0.03, "output_mtok": 2.5}}}))
    prices, rnd = Prices.load(str(f)), random.Random(61)
    for model in ("gemini-2.5-pro", "models/gemini-2.5-flash", "my-tuned-model", "gemini-2.5-flash-lite"):
        for u in _usages(rnd, 300):
            assert prices.cost_nusd(model, u) == _calc_price(prices, model, u), (model, u)


def test_day_of_is_the_utc_date():
    from datetime import UTC, datetime

    from proxy.usage.meter import day_of
    rnd = random.Random(3)
    stamps = [0.0, 86_399.999, 86_400.0, 1_767_225_599.5, 1_767_225_600.0, 951_782_400.0 - 1e-6]
    stamps += [rnd.uniform(0, 4e9) for _ in range(2000)]
    for ts in sorted(stamps, key=lambda _: rnd.random()):
        assert day_of(ts) == datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d"), ts
    midnight = 1_767_225_600.0
    for ts in (midnight - 3600, midnight - 4e-7, midnight - 6e-7, midnight - 1e-6, midnight, midnight + 1):
        day_of(midnight - 3600)  # the day before, remembered
        assert day_of(ts) == datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d"), ts
    assert day_of() == datetime.now(UTC).strftime("%Y-%m-%d")


@pytest.mark.parametrize("text", ["{", "[]", '{"models": {}}', '{"models": {"m": {"input": 1}}}',
                                  '{"models": {"m": {"input_mtok": -1}}}'])
def test_bad_prices_file_is_one_line(tmp_path, text):
    f = tmp_path / "p.json"
    f.write_text(text)
    with pytest.raises(PriceError) as e:
        Prices.load(str(f))
    assert "\n" not in str(e.value) and str(f) in str(e.value)


async def test_memory_counters_scope_by_key():
    c = MemoryCounters()
    await c.add("k-a", "gemini-2.5-pro", "2026-12-02", {"requests": 1, "input": 5})
    await c.add("k-b", "gemini-2.5-pro", "2026-12-02", {"requests": 1, "input": 7})
    assert [r["input"] for r in await c.rows("2026-12-01", "2026-12-03", "k-a")] == [5]
    assert len(await c.rows("2026-12-01", "2026-12-03")) == 2


async def _load(counters, key, n):
    for i in range(n):
        await counters.add(key, "gemini-2.5-pro", "2026-12-02", {"requests": 1, "input": 3, "cost_nusd": 7},
                           answer_id=f"{key}-{id(counters)}-{i}")


async def test_two_instances_on_one_redis_add_up_exactly_across_a_restart(tmp_path):
    redis = RedisServer(tmp_path)
    try:
        a, b = RedisCounters(redis.url), RedisCounters(redis.url)
        load = asyncio.gather(_load(a, "k-a", 3000), _load(b, "k-a", 3000), _load(b, "k-b", 1000))
        await asyncio.sleep(0.2)
        assert not load.done()
        redis.proc.terminate()
        redis.proc.wait()
        redis.start()  # appendonly: what was applied survives; what failed is retried by the client
        await load
        assert a.retries + b.retries > 0  # the restart did hit increments in flight
        rows = {r["key"]: r for r in await a.rows("2026-12-02", "2026-12-02")}
        assert rows["k-a"]["requests"] == 6000 and rows["k-a"]["input"] == 18000 and rows["k-a"]["cost_nusd"] == 42000
        assert rows["k-b"]["requests"] == 1000
        assert [r["key"] for r in await b.rows("2026-12-02", "2026-12-02", "k-b")] == ["k-b"]
    finally:
        redis.proc.terminate()
