"""Make freed memory go back to the system (glibc only; elsewhere nothing happens).

glibc raises its mmap threshold each time a large block is freed (up to 32 MB), so after one long
answer every later multi-MB buffer comes from the heap, where a few live small objects pin whole
regions: batches of 5 MB streams then left RSS 300-600 MB higher for good. A fixed threshold keeps
large buffers in their own mappings (returned on free), a low trim threshold returns the heap's
top, and two arenas stop per-thread arenas (mitmproxy's and the resolver's) from multiplying it.
The threshold is 1 MB, not glibc's initial 128 KB: orjson.loads takes a working pool of about 12
times the text it parses (663 KB for the bench's 54 KB large body), and a pool in a mapping of its own was
mapped, faulted in page by page and unmapped on every large request (20 page faults per request,
4 % of its CPU; scripts/bench.sh's large rows).
Even so, freed pages inside the heap stay resident until `malloc_trim` hands them back: `trim_soon`
does that after large requests end, at most once per TRIM_INTERVAL. A whole (not streamed) answer
continuing a long stored history parses it into objects of 40 KB and less, which live in the heap
between the turns the store keeps: `transient` counts their bytes (and large request bodies') and `trim_if_due`,
called as each request ends, trims once TRIM_AFTER_BYTES of them were freed, or fewer when no other
request runs (a 150-turn chain of 40 KB turns held the last turn's 6 MB history resident until the
next long answer; a load's last requests, 35 MB of freed heap). A trim while others run leaves what
they hold, and free later, in the heap: only a trim with none running (idle) finds a load's memory
all freed, so the idle trim counts what was noted since the last idle trim, not since the last trim
of any kind (counted that way, a trim while 20 requests ran, 8 MB given back, set the count to 0 near
a load's end; nothing was noted after it, the idle trim was skipped and 35 MB of freed heap stayed
resident: RSS 2.1 times the budgets in tests/test_memory_chain.py, 1.21 times when trimmed).
"""

import asyncio
import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
MMAP_THRESHOLD = 1024 * 1024
TRIM_THRESHOLD = 1024 * 1024
ARENA_MAX = 2


TRIM_INTERVAL = 1.0  # seconds; a trim walks the heap (about a millisecond per 100 MB)
# Bytes of parsed history freed between two trims: parsing and sending 4 MB takes some 20 ms, a
# trim of a few hundred MB of heap a few.
TRIM_AFTER_BYTES = 4 * 1024 * 1024
IDLE_TRIM_BYTES = 256 * 1024  # ... and when the last request running ends (a load is over)
# transient: bytes noted since the last trim; since_idle: since the last trim with no request running
_state: dict[str, object] = {"libc": None, "pending": False, "transient": 0, "since_idle": 0}


def _libc() -> ctypes.CDLL | None:
    if _state["libc"] is None:
        name = ctypes.util.find_library("c")
        try:
            lib = ctypes.CDLL(name) if name else None
            usable = lib is not None and hasattr(lib, "mallopt") and hasattr(lib, "malloc_trim")
            _state["libc"] = lib if usable else False
        except OSError:
            _state["libc"] = False
    return _state["libc"] or None  # type: ignore[return-value]


def trim_soon() -> None:
    """Return freed heap pages to the system shortly (coalescing calls); a no-op without glibc."""
    libc = _libc()
    if libc is None or _state["pending"]:
        return
    _state["pending"] = True

    def trim() -> None:
        _state["pending"] = False
        libc.malloc_trim(0)

    asyncio.get_running_loop().call_later(TRIM_INTERVAL, trim)


def transient(nbytes: int, idle_only: bool = False) -> None:
    """Note that a request holds `nbytes` (a parsed history) that it frees when it ends. `idle_only`:
    counted for the idle trim alone (stored turns a walk parsed: noted so that a load whose histories
    all missed the cache is trimmed when it ends, without adding trims while it runs)."""
    if not idle_only:
        _state["transient"] += nbytes  # type: ignore[operator]
    _state["since_idle"] += nbytes  # type: ignore[operator]


def trim_if_due(idle: bool = False) -> None:
    """As a request ends: trim once TRIM_AFTER_BYTES of noted transient memory was freed, or, `idle`
    (no other request runs), once IDLE_TRIM_BYTES was. Soon: its own answer is written first, and
    what its end frees is freed by then (the journal lets go of the exchange's bodies in the next
    turn of the loop). When idle, also now: no other request waits on it (well under a millisecond
    for the 80 MB heap of tests/test_memory_chain.py's load), and the answer's client, reading the
    process's memory as soon as it has the answer, finds the request's memory given back. The idle
    count goes back to the last idle trim: what a trim while others ran left, they freed since."""
    noted: int = _state["since_idle" if idle else "transient"]  # type: ignore[assignment]
    if noted < (IDLE_TRIM_BYTES if idle else TRIM_AFTER_BYTES):
        return
    libc = _libc()
    if libc is None:
        return
    _state["transient"] = 0
    if idle:
        _state["since_idle"] = 0
        libc.malloc_trim(0)
    loop = asyncio.get_running_loop()
    loop.call_soon(loop.call_soon, libc.malloc_trim, 0)


def tune() -> bool:
    """Apply the settings; False where the C library is not glibc."""
    libc = _libc()
    if libc is None:
        return False
    mallopt = libc.mallopt
    ok = all(mallopt(opt, value) == 1 for opt, value in ((M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                                                         (M_TRIM_THRESHOLD, TRIM_THRESHOLD),
                                                         (M_ARENA_MAX, ARENA_MAX)))
    log.debug("malloc tuning %s", "applied" if ok else "partly refused")
    return ok
