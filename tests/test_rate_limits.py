"""Issue 61 item 2, the core only: --limit's grammar, GCRA in-process and in a real Redis (one script,
shared by two clients as two instances would), and cost_of from genai-prices."""

import pytest
import redis

from proxy.server.rate_limits import GCRA_LUA, Limit, MemoryGCRA, cost_of, limit_for, parse_limits
from tests.servers import RedisServer


def test_limit_grammar() -> None:
    limits = parse_limits(["c-0123456789ab=rpm:60,tpm:100000,usd_day:5,usd_month:50", "*=rpm:2"])
    assert limits["c-0123456789ab"] == Limit(rpm=60, tpm=100000, usd_day=5.0, usd_month=50.0)
    assert limit_for(limits, "c-ffffffffffff") == Limit(rpm=2)


@pytest.mark.parametrize("bad", ["rpm:1", "sk-secret=rpm:1", "*=rpm:0", "*=rpm:1.5", "*=foo:1", "*=rpm:1,rpm:2",
                                 "*=usd_day:inf", "*=tpm:x"])
def test_malformed_limit_is_one_line(bad: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_limits([bad])
    assert "\n" not in str(e.value) and "--limit" in str(e.value)


def test_memory_gcra_refuses_the_third_of_two_per_minute_and_serves_after_the_window() -> None:
    g = MemoryGCRA()
    assert g.take("c", 2, now=0.0)[0] and g.take("c", 2, now=0.0)[0]
    allowed, retry = g.take("c", 2, now=0.0)
    assert not allowed and retry == pytest.approx(30.0)
    assert g.take("c", 2, now=30.0)[0]


def test_redis_gcra_is_shared_exactly(tmp_path) -> None:
    server = RedisServer(tmp_path)
    try:
        a, b = (redis.Redis.from_url(server.url) for _ in range(2))  # two instances' connections
        script_a, script_b = a.register_script(GCRA_LUA), b.register_script(GCRA_LUA)
        interval, tolerance = 60_000 / 3, 60_000 / 3 * 2  # rpm 3
        results = [s(keys=["gtp:rl:c-x"], args=[1_000_000, interval, tolerance])[0]
                   for s in (script_a, script_b, script_a, script_b)]
        assert results == [1, 1, 1, 0]  # the 4th of 3 per minute refused, across both
        allowed, retry_ms, _ = script_b(keys=["gtp:rl:c-x"], args=[1_000_000, interval, tolerance])
        assert allowed == 0 and 0 < retry_ms <= interval
        assert script_a(keys=["gtp:rl:c-x"], args=[1_000_000 + interval, interval, tolerance])[0] == 1
    finally:
        server.proc.terminate()
        server.proc.wait()


def test_cost_of_prices_gemini() -> None:
    assert cost_of("gemini-2.5-flash", {"input_tokens": 1000, "output_tokens": 1000}) > 0
    assert cost_of("no-such-model-xyz", {"input_tokens": 1000, "output_tokens": 1000}) == 0.0


def test_malformed_limit_exits_2_with_one_line_before_listening() -> None:
    import subprocess
    import sys
    from pathlib import Path
    cli = str(Path(sys.executable).with_name("gemini-tool-proxy"))
    done = subprocess.run([cli, "serve", "--upstream", "mock", "--port", "0", "--limit", "*=rpm:zero"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--limit" in lines[0] and "rpm" in lines[0], done.stderr
    assert "ready on" not in done.stdout
