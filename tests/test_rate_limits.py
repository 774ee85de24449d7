"""Issue 61 item 2, the core only: --limit's grammar, GCRA in-process and in a real Redis (one script,
shared by two clients as two instances would), and cost_of from genai-prices."""

import pytest

from proxy.usage.limits import Limit, limit_for, parse_limits


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
