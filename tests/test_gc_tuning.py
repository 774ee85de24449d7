"""gc_tuning: serve collects its youngest generation every GEN0 allocations, not Python's 2,000, and
freezes what startup left alive, so that collections under load walk the requests in flight 25 times
less often and a full collection no longer walks the modules (scripts/bench.sh's CPU rows)."""

import json
import subprocess
import sys
from pathlib import Path

from proxy import gc_tuning
from tests.servers import Process

PROBE = ("import gc, json; from proxy import gc_tuning; import proxy.front.app; before = gc.get_threshold(); "
         "gc_tuning.tune(); gc_tuning.freeze_startup(); "
         "print(json.dumps([before, gc.get_threshold(), gc.get_freeze_count()]))")


def test_tune_raises_the_young_threshold_and_freezes_what_startup_made() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    before, after, frozen = json.loads(out.stdout)
    assert before[0] in (700, 2000)  # Python's own (3.12's, 3.13's)
    assert after == [gc_tuning.GEN0, *before[1:]]  # the older generations keep their ratios
    assert frozen > 10_000  # the modules, classes and functions of the server


def test_serve_applies_it_once_it_is_up(tmp_path: Path) -> None:
    proc = Process(tmp_path, "serve", [sys.executable, "-m", "proxy", "--log-level", "DEBUG", "serve", "--port", "0",
                                       "--upstream", "mock"], "ready")
    try:
        proc.url()
        logs = proc.logs()
    finally:
        proc.stop()
    assert f"startup objects frozen, young generation collected every {gc_tuning.GEN0} allocations" in logs
