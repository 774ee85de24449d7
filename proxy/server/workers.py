"""One worker process for CPU work that must not hold this process's GIL (the event loop's): made
on first use, with the `spawn` method (forking a process that runs threads is unsafe)."""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

_POOL: ProcessPoolExecutor | None = None


def worker_processes() -> ProcessPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    return _POOL


def shutdown_workers() -> None:
    """At exit: let the worker go (it holds nothing that needs saving)."""
    global _POOL
    if _POOL is not None:
        _POOL.shutdown(wait=False, cancel_futures=True)
        _POOL = None
