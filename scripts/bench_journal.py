"""The journal's cost (issue 28): CPU per request of `serve` with the journal on (the default) and
off, and with traces exported to a collector that is down (`--otlp-endpoint` to a closed port) and
to one that is up: small and large Responses and Chat requests against the same mock; and small
Responses requests on a Redis store, where the journal is also shared.

Each comparison is made inside one process, switched between its two states by a signal between two
measurements (PRELUDE, this script's own instrumentation): two processes of the same build, started
alike, measured 0.99, 1.06 and 1.01 of each other (A/A, small Chat, 10 alternations each), an offset
of their own as large as what is measured, where one process measured against itself read 0.99-1.01.
Per row, PROCESSES fresh processes, ROUNDS pairs each, the order turning every pair; the ratio is the
median over all pairs, and each process's own median is shown beside it.
With valgrind installed (bench.sh installs it), also the instructions per request, journal on and
off: a count that does not drift with the machine.
`--write` puts the table in docs/benchmarks-journal.md (bench.sh does)."""

import asyncio
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from statistics import median_high

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from scripts.bench import KEY, LATENCY_N, TURN, Process, free_port, measure, numbered  # noqa: E402
from scripts.bench import bodies as _bodies  # noqa: E402
from tests.otlp_collector import Collector  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

PROCESSES, ROUNDS = 2, 5  # per row: processes, and on/off pairs measured in each
# The traced process's exporter sends its spans this often (ms; the SDK's default is 5 s), so that
# they are sent while it is measured, not while it is idle; SETTLE seconds after a pair let the last
# of them arrive (the collector runs in this process, on the same two cores) and a switch take hold.
EXPORT_EVERY_MS, SETTLE = "200", 0.5
# Requests per instruction count (callgrind counts them one by one; two runs agree within 0.3 %),
# after uninstrumented warm-up requests that fill the journal, so that each request counted also evicts
# the oldest exchange, as in a server that has run a while. Counted with a journal of COUNT_JOURNAL
# bytes: filling the default 64 MiB takes some 13,000 small requests, hours under valgrind. At steady
# state the journal's work per request does not depend on its limit (one exchange kept, one let go),
# only the memory it holds does, which the wall-clock rows measure at the default.
COUNTED, COUNT_JOURNAL, COUNT_BATCH = 200, 8 * 1024 * 1024, 100
# The instruction rows: (workload, protocol, with a Redis store); the same bodies as the rows above.
COUNT_ROWS = (("small", "responses", False), ("small", "chat", False), ("large", "responses", False),
              ("large", "chat", False), ("small", "responses", True))
# Run in each measured process before the proxy: SIGUSR1 switches recording (the journal, when no
# traces are exported) off and on again, SIGUSR2 the export of traces (the journal stays on). The
# switches act on every Recorder the process makes; _checked() proves from outside that they do.
# Switched off, the journal is also emptied: left full and idle, it made the requests of the off state
# about 2 % dearer (full/emptied, one process, 18 alternations: mean 1.02), as the heap it leaves
# scattered does; switched on, FILL unmeasured loads fill it again before it is measured.
PRELUDE = """
import os
import signal
from proxy.journal import recorder as _recorder
_made, _init = [], _recorder.Recorder.__init__
def _register(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    _made.append(self)
_recorder.Recorder.__init__ = _register
def _journal(*_):
    for made in _made:
        made.active = not made.active
        if not made.active and made.journal is not None:
            made.journal.clear()
def _tracing(*_):
    for made in _made:
        made.tracing, made.bench_idle_tracing = getattr(made, "bench_idle_tracing", None), made.tracing
signal.signal(signal.SIGUSR1, _journal)
signal.signal(signal.SIGUSR2, _tracing)
if os.environ.get("GTP_BENCH_KEEP_ONE"):  # the journal's work without its memory (_KEEP_ONE)
    from proxy.journal import ring as _ring
    _add = _ring.Journal.add
    def _keep_one(self, ex):
        _add(self, ex)
        while len(self._entries) > 1:  # the one before goes at once, while its memory is still in the cache
            self.drop_oldest()
    _ring.Journal.add = _keep_one
"""
# A row whose journal keeps every exchange as usual but only until the next (PRELUDE, with this in
# its environment): the journal's work without the memory it keeps. The difference from the same row
# keeping everything is what holding the bodies costs: each byte kept is written to memory the cache
# no longer holds, where the off state's next request reuses what the last one freed.
_KEEP_ONE = {"GTP_BENCH_KEEP_ONE": "1"}
JOURNAL, TRACING = signal.SIGUSR1, signal.SIGUSR2
FILL = 2  # loads of LOAD_SECONDS that fill the default journal (64 MB) again: ~8,000 small exchanges


def bodies(kind: str, workload: str) -> tuple[str, dict]:
    """bench.bodies' request with one more user message, its number its own (bench.TURN): each
    request is the one before with a turn changed, as an agent's are (the journal keeps a large body as
    what it adds to the one before on its route: journal/splice.py)."""
    path, body = _bodies(kind, workload)
    items = "input" if kind == "responses" else "messages"
    return path, {**body, items: [*body[items], {"role": "user", "content": f"Turn {TURN}: the tool answered."}]}


def main(write: bool) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="gtp-bench-journal-"))
    mport = free_port()
    mock = Process(tmp, "mock", [sys.executable, "-m", "proxy", "mock", "--port", str(mport)], "ready")
    collector = Collector()  # a receiver on opentelemetry-proto (tests/otlp_collector.py), in this process
    try:
        dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        rows = []
        for workload in ("small", "large"):
            for kind in ("responses", "chat"):
                path, body = bodies(kind, workload)
                journal = _toggled(tmp, mport, path, body, JOURNAL, PROCESSES)
                down = _toggled(tmp, mport, path, body, TRACING, 1, "--otlp-endpoint", dead)
                up = _toggled(tmp, mport, path, body, TRACING, 1, "--otlp-endpoint", collector.url,
                              env={"OTEL_BSP_SCHEDULE_DELAY": EXPORT_EVERY_MS}, spans=collector.spans)
                rows.append((workload, kind, journal, down, up))
        rows.append(("large", "chat, keeping only the newest exchange (the journal's work without its memory)",
                     _toggled(tmp, mport, *bodies("chat", "large"), JOURNAL, PROCESSES, env=_KEEP_ONE), None, None))
        rows.append(_shared_row(tmp, mport))
        rows.append(("small", "chat, A/A: the journal on in both states (the method's noise)",
                     _toggled(tmp, mport, *bodies("chat", "small"), None, PROCESSES), None, None))
        counts = _counts(tmp, mport) if shutil.which("valgrind") else []
    finally:
        mock.stop()
        collector.close()
    lines = ["# The journal's cost", "", "Generated by `scripts/bench_journal.py --write` (run by scripts/bench.sh): "
             "CPU of the proxy process per request, the journal on (the default) against off, and traces exported "
             "to a collector that is down, and to one that is up, against none. Each comparison is made inside one "
             "process switched between its two states by a signal between measurements (two separate processes of "
             "the same build measured up to 6 % apart; one process against itself, within 1 %); switched off, the "
             "journal is also emptied, and filled again before it is measured on: "
             f"{PROCESSES} processes per journal row and one per collector row, {ROUNDS} pairs each, the order turning "
             "every pair. Each request is the one before with its last message changed (its own number), as an "
             "agent's turns are. The ratio is the median over all pairs; in brackets, each process's own median. "
             "The A/A row measures processes against themselves, changing nothing: what the method reads where "
             "there is nothing to find. "
             "Goal: on/off <= 1.05; a dead collector changes nothing (ratios near 1). The row keeping only the "
             "newest exchange seals each one as usual and drops the one before (this bench's instrumentation): "
             "the journal's work without the memory it holds (a large body is kept as a splice of the one before on "
             "its route: journal/splice.py). The Redis row runs on a Redis "
             "store, where the journal is also shared (journal/shared.py): each instance keeps its own exchanges "
             "and answers the others' questions through Redis when one lists or opens them, so no exchange goes "
             "to Redis unless another instance follows its scope live.", ""]
    lines += _table(("workload", "protocol", "CPU ms/request, journal off", "journal on", "on/off",
                     "dead collector/none, CPU", "dead collector/none, p50", "collector up/none, CPU"),
                    [(w, k, f"{j.off:.3f}", f"{j.on:.3f}", f"{j}", _cell(down and down.ratio()),
                      _cell(down and down.ratio("p50")), _cell(up and up.ratio())) for w, k, j, down, up in rows])
    if counts:
        lines += ["", f"Instructions per request (valgrind's callgrind): {COUNTED} sequential requests, each the one "
                  "before with its last message changed, counted after uncounted ones that fill the journal (a "
                  f"journal of {COUNT_JOURNAL // 2**20} MiB, so that it fills in minutes under valgrind: from then on "
                  "each request also lets the oldest exchange go, and the journal's work per request is what it is "
                  "at any limit), a process with the journal off and one with it on, one at a time, each given the "
                  "same requests. A count does not drift with the machine: the wall-clock rows above read the same "
                  "cost through the noise of a shared machine.", ""]
        lines += _table(("workload", "protocol", "requests before counting", "journal off", "journal on", "on/off",
                         "the journal's instructions"),
                        [(w, k, str(warm), f"{off / 1e6:.3f} M", f"{on / 1e6:.3f} M", f"{on / off:.3f}",
                          f"{(on - off) / 1e3:.0f} K") for w, k, warm, off, on in counts])
    text = "\n".join(lines) + "\n"
    print(text)
    if write:
        (ROOT / "docs" / "benchmarks-journal.md").write_text(text)


class Pairs:
    """measure()'s results for each of a process's two states, in pairs, per process."""

    def __init__(self) -> None:
        self.by_process: list[list[tuple[dict, dict]]] = []  # per pair, measure()'s (on, off)

    def _all(self) -> list[tuple[dict, dict]]:
        return [pair for pairs in self.by_process for pair in pairs]

    def ratio(self, key: str = "cpu_ms", pairs: list[tuple[dict, dict]] | None = None) -> float:
        """The median on/off of `pairs` (every process's, unless given)."""
        return median_high([on[key] / off[key] for on, off in (self._all() if pairs is None else pairs)])

    @property
    def on(self) -> float:
        return median_high([on["cpu_ms"] for on, _ in self._all()])

    @property
    def off(self) -> float:
        return median_high([off["cpu_ms"] for _, off in self._all()])

    def __format__(self, spec: str) -> str:
        if len(self.by_process) == 1:
            return f"{self.ratio():.3f}"
        own = ", ".join(f"{self.ratio(pairs=pairs):.3f}" for pairs in self.by_process)
        return f"{self.ratio():.3f} ({own})"


def _toggled(tmp: Path, mport: int, path: str, body: dict, switch: signal.Signals | None, processes: int, *extra: str,
             env: dict[str, str] | None = None, spans: list | None = None) -> Pairs:
    """ROUNDS pairs in each of `processes` fresh `serve` processes (started with `extra`): CPU per
    request (and, for traces, p50 latency) in the state the process starts in ("on") and with `switch`
    sent ("off"; the journal's switch empties it, and it is filled again before "on" is measured), the
    order turned each pair. What each state recorded is checked (_checked): a switch
    that did nothing would read 1. Without a switch, the process is measured against itself (A/A: what
    the method reads where there is nothing to find)."""
    got = Pairs()
    for n in range(processes):
        proc, url = _proxy(tmp, f"proxy-{switch.name if switch else 'aa'}-{n}", mport, *extra, env=env)
        state, pairs = "on", []
        try:
            asyncio.run(measure(url + path, body, [proc.proc.pid], sequential=0))  # warm-up: fills the journal
            for turn in range(ROUNDS):
                cpu = {}
                for want in ("on", "off") if turn % 2 == 0 else ("off", "on"):
                    if state != want:
                        if switch is not None:
                            os.kill(proc.proc.pid, switch)
                        state = want
                        time.sleep(SETTLE)
                        for _ in range(FILL if switch is JOURNAL and want == "on" else 0):
                            asyncio.run(measure(url + path, body, [proc.proc.pid], sequential=0))
                    before = _recorded(url, switch, spans) if switch is not None else None
                    cpu[want] = asyncio.run(measure(url + path, body, [proc.proc.pid],
                                                    sequential=LATENCY_N if switch is TRACING else 0))
                    time.sleep(SETTLE)
                    if switch is not None:
                        _checked(want, before, _recorded(url, switch, spans), switch)
                    if env is _KEEP_ONE and want == "on" and len(_listed(url, 2)) != 1:
                        raise RuntimeError("GTP_BENCH_KEEP_ONE: the journal keeps more than the newest exchange: "
                                           "the bench's PRELUDE no longer replaces Journal.add")
                pairs.append((cpu["on"], cpu["off"]))
        finally:
            proc.stop()
        got.by_process.append(pairs)
    return got


def _recorded(url: str, switch: signal.Signals, spans: list | None) -> object:
    """What shows that a state records: the newest exchange's id (journal), the spans received (a
    collector that is up); None where nothing shows it (a collector that is down)."""
    if switch is TRACING:
        return None if spans is None else len(spans)
    rows = _listed(url, 1)
    return rows[0]["id"] if rows else None


def _listed(url: str, limit: int) -> list[dict]:
    """The newest `limit` exchanges the process lists."""
    with urllib.request.urlopen(f"{url}/inspect/api/exchanges?limit={limit}", timeout=10) as r:
        return json.loads(r.read())["exchanges"]


def _checked(state: str, before: object, after: object, switch: signal.Signals) -> None:
    if before is None and after is None:
        return
    if (after != before) != (state == "on"):
        raise RuntimeError(f"{switch.name}: the process recorded {'nothing' if state == 'on' else 'something'} "
                           f"while {state}: the bench's switch (PRELUDE) no longer works")


def _shared_row(tmp: Path, mport: int) -> tuple:
    """On a Redis store the journal is shared (journal/shared.py): each instance listens to the
    others' questions on Redis. Small Responses requests, journal on against off."""
    redis = RedisServer(tmp / "redis", fsync="everysec")
    try:
        journal = _toggled(tmp, mport, *bodies("responses", "small"), JOURNAL, PROCESSES, "--store", redis.url)
    finally:
        redis.stop()
    return ("small", "responses, store on Redis (the journal shared)", journal, None, None)


def _proxy(tmp: Path, name: str, mport: int, *extra: str, env: dict[str, str] | None = None
           ) -> tuple[Process, str]:
    """A `serve` process in front of the mock, with the bench's switches (PRELUDE), and its URL."""
    port = free_port()
    start = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.argv[0] = 'gemini-tool-proxy'; exec({PRELUDE!r}); "
             "from proxy.cli import main; main()")
    return Process(tmp, name, [sys.executable, "-c", start, "--log-level", "WARNING", "serve", "--port", str(port),
                               "--upstream", f"http://127.0.0.1:{mport}", *extra], "ready",
                   env=env), f"http://127.0.0.1:{port}"


def _counts(tmp: Path, mport: int) -> list[tuple[str, str, int, float, float]]:
    """COUNT_ROWS' instructions per request: (workload, protocol, requests before counting, journal off,
    journal on). The process with the journal on warms up until its journal is full; the one with it
    off is then given as many requests before it is counted."""
    out = []
    for workload, kind, on_redis in COUNT_ROWS:
        redis = RedisServer(tmp / f"redis-count-{workload}-{kind}", fsync="everysec") if on_redis else None
        try:
            extra = ("--store", redis.url) if redis is not None else ()
            warm, on = _instructions(tmp, mport, workload, kind, None, *extra)
            _, off = _instructions(tmp, mport, workload, kind, warm, "--journal", "off", *extra)
        finally:
            if redis is not None:
                redis.stop()
        out.append((workload, f"{kind}, store on Redis (the journal shared)" if on_redis else kind, warm, off, on))
    return out


def _instructions(tmp: Path, mport: int, workload: str, kind: str, warm: int | None, *extra: str
                  ) -> tuple[int, float]:
    """Requests before counting, and instructions the proxy process runs per request: `serve` under
    callgrind with counting off while it starts and warms up, then on for COUNTED requests. `warm`: how
    many requests before counting; None: until the journal is full (COUNT_JOURNAL), read from /metrics."""
    name = f"callgrind-{workload}-{kind}-{len(extra)}"
    port, out = free_port(), tmp / f"{name}.out"
    proc = Process(tmp, name, [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", sys.executable, "-m",
        "proxy", "--log-level", "WARNING", "serve", "--port", str(port), "--upstream", f"http://127.0.0.1:{mport}",
        "--journal-max-bytes", str(COUNT_JOURNAL), *extra], "ready", timeout=300)
    path, body = bodies(kind, workload)
    url = f"http://127.0.0.1:{port}{path}"
    sent = [0]
    try:
        if warm is None:
            while _journal_bytes(f"http://127.0.0.1:{port}") < COUNT_JOURNAL * 0.9:
                asyncio.run(_sequential(url, body, COUNT_BATCH, sent))
            asyncio.run(_sequential(url, body, COUNT_BATCH, sent))  # (full: each of these let one go)
        else:
            asyncio.run(_sequential(url, body, warm, sent))
        warm = sent[0]
        subprocess.run(["callgrind_control", "--instr=on", str(proc.proc.pid)], check=True, capture_output=True)
        asyncio.run(_sequential(url, body, COUNTED, sent))
        subprocess.run(["callgrind_control", "--instr=off", str(proc.proc.pid)], check=True, capture_output=True)
    finally:
        proc.stop()  # callgrind writes its counts as the process ends
    total = 0
    for name in glob.glob(f"{out}*"):
        for line in Path(name).read_text().splitlines():
            if line.startswith("totals:"):
                total += int(line.split()[1])
    return warm, total / COUNTED


def _journal_bytes(base: str) -> float:
    """The journal's bytes, as /metrics reports them."""
    with urllib.request.urlopen(urllib.request.Request(f"{base}/metrics", headers=KEY), timeout=60) as r:
        text = r.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "gtp_journal_bytes":
                return sample.value
    raise RuntimeError(f"{base}/metrics reports no gtp_journal_bytes")


async def _sequential(url: str, body: dict, n: int, sent: list[int]) -> None:
    """`n` requests one at a time, bench.TURN in the body replaced by each one's number (`sent` counts
    them across calls)."""
    content_of = numbered(body)
    headers = {**KEY, "content-type": "application/json"}
    async with aiohttp.ClientSession() as s:
        for _ in range(n):
            sent[0] += 1
            async with s.post(url, data=content_of(sent[0]), headers=headers) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{url}: {r.status}")


def _table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """A Markdown table's lines."""
    return [f"| {' | '.join(columns)} |", "|" + "---|" * len(columns), *(f"| {' | '.join(row)} |" for row in rows)]


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    main("--write" in sys.argv)
