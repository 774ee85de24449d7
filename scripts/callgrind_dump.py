"""What callgrind_mitm.py and callgrind_serve.py read from a callgrind dump: its totals, by the names
their tables show. With CACHE's options, callgrind also simulates the first-level caches and the
branch predictor (about 2x slower): the misses a process pays for the data and code it touches, which
the instructions it runs do not show."""

import re
import subprocess
import time
from pathlib import Path

CACHE = ("--cache-sim=yes", "--branch-sim=yes")
# The counts the tables show, each the sum of callgrind's events of that name (the last three: with CACHE)
SHOWN = {"Ir": ("Ir",), "D1 misses": ("D1mr", "D1mw"), "I1 misses": ("I1mr",), "mispredicts": ("Bcm", "Bim")}


def parse_counts(dump: str) -> dict[str, int]:
    """A dump's totals by SHOWN's names: its `events:` line names the columns of its `summary:` (or
    `totals:`) line; a name whose events the run did not record is left out. ValueError: neither
    line, or a summary that does not match its events."""
    events, values = re.search(r"^events: (.+)$", dump, re.M), re.search(r"^(?:summary|totals): (.+)$", dump, re.M)
    if events is None or values is None:
        raise ValueError("not a callgrind dump's head: no events or no summary line")
    total = dict(zip(events.group(1).split(), map(int, values.group(1).split()), strict=True))
    return {name: sum(total[e] for e in parts) for name, parts in SHOWN.items() if all(e in total for e in parts)}


def dump(pid: int, out: Path, label: str) -> tuple[dict[str, int], Path]:
    """Have the process under callgrind (`--callgrind-out-file=out`) dump its counts since the last
    zeroing (`callgrind_control -d`), and read them once the new dump is whole: the counts by
    SHOWN's names, and the dump's path (`callgrind_annotate` it)."""
    before = set(out.parent.glob(out.name + ".*"))
    subprocess.run(["callgrind_control", "-d", label, str(pid)], check=True, capture_output=True)
    for _ in range(600):
        new = sorted(set(out.parent.glob(out.name + ".*")) - before, key=lambda p: p.stat().st_mtime)
        if new:
            try:
                return parse_counts(new[-1].read_text(errors="replace")), new[-1]
            except ValueError:  # not all written yet
                pass
        time.sleep(0.1)
    raise RuntimeError(f"process {pid}: no dump for {label}")
