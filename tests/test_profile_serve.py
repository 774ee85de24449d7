"""scripts/profile_serve.py's summary of py-spy's raw samples: microseconds per request per function,
inclusive (a function counted once per sample, recursion included) and self (the innermost frame)."""

from pathlib import Path

from scripts.profile_serve import RATE, report


def test_samples_become_microseconds_per_request(tmp_path: Path, capsys) -> None:
    raw = tmp_path / "samples.txt"
    run, handle = "run (asyncio/runners.py:118)", "handle (proxy/front/app.py:76)"
    raw.write_text(f"{run};{handle};parse (proxy/wire/json_body.py:52) 30\n"
                   f"{run};{handle};handle (proxy/front/app.py:80) 10\n"
                   f"{run} 60\n"
                   "not a sample line\n")
    report(raw, requests=100, top=10, title="t")
    out = capsys.readouterr().out
    per = 1e6 / RATE / 100  # one sample is 20 us; over 100 requests, 0.2 us per request
    inclusive, own = out.split("self, us per request:")
    assert f"100 samples, {100 * per:.0f} us sampled per request" in out
    assert f"{100 * per:9.1f}  run runners.py" in inclusive
    assert f"{40 * per:9.1f}  handle app.py" in inclusive  # the recursive frame counted once
    assert f"{30 * per:9.1f}  parse json_body.py" in inclusive
    assert f"{60 * per:9.1f}  run runners.py" in own and f"{10 * per:9.1f}  handle app.py" in own
