"""Background runs (interactions, responses) that every instance sharing a store can poll, cancel
and delete.

One process runs a background interaction, as a task. So that other instances never answer for it
wrongly, the runner keeps two facts in the store (`put_mark`):

- a *lease* it renews every `lease / LEASE_BEATS` seconds. An interaction still in progress whose
  lease ran out was abandoned (its process killed, its host lost): it is reported failed, never
  left in progress forever;
- it reads, on each renewal, a *stop* request another instance may leave: `cancel` (the runner
  stops and stores the cancelled state, which the requester waits for) or `delete` (the runner
  stops and removes what it stored, so a deleted interaction never comes back).

Times are wall-clock seconds (`time.time()`), the one clock instances on different hosts share.

When the process stops (SIGTERM), a run gets the shutdown's grace period to finish (`stop_runs`); one
still running then is stopped and stored `failed` with SHUT_DOWN (`shut_down()` tells its handler
the cancellation was the shutdown's, not a client's), before the store closes: every instance reads
the same end at once, never `cancelled` nor `queued` until the lease runs out.
"""

import asyncio
import contextvars
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

from proxy import metrics
from proxy.errors import ProxyError
from proxy.journal import access_log, exchange
from proxy.journal.recorder import Recorder
from proxy.logs import REQUEST_ID, SESSION_ID
from proxy.server import recording
from proxy.server.fair_share import FAIR, client_of
from proxy.store.base import SessionStore

log = logging.getLogger(__name__)

LEASE_BEATS = 6  # renewals per lease: a few missed writes (a Redis blip) do not end a live run
STOP_POLL_SECONDS = 0.1  # how often a cancelling instance looks whether the runner has stopped
LEASE, STOP = "lease", "stop"
Stop = Literal["cancel", "delete"]
SHUT_DOWN = "The proxy shut down before this background run finished; create it again."
_STOPPED: weakref.WeakSet[asyncio.Task[None]] = weakref.WeakSet()  # runs the shutdown cancelled


def beat_seconds(lease: float) -> float:
    return lease / LEASE_BEATS


async def claim(store: SessionStore, session: str, iid: str, lease: float) -> None:
    """The lease, written before the run starts: an interaction is never in progress without one."""
    await store.put_mark(session, LEASE, iid, {"until": time.time() + lease})


async def lease_alive(store: SessionStore, session: str, iid: str) -> bool:
    mark = await store.get_mark(session, LEASE, iid)
    return mark is not None and isinstance(mark.get("until"), int | float) and mark["until"] > time.time()


async def request_stop(store: SessionStore, session: str, iid: str, how: Stop) -> None:
    await store.put_mark(session, STOP, iid, {"how": how})


async def stop_requested(store: SessionStore, session: str, iid: str) -> Stop | None:
    mark = await store.get_mark(session, STOP, iid)
    how = mark.get("how") if mark else None
    return how if how in ("cancel", "delete") else None


@dataclass
class RunRecord(metrics.RequestRecord):
    """A background run's own metrics record (its upstream time and tokens), and how it ended: the
    run's access line is written when it ends, the request's was written when it was answered."""
    status: int = 200


def failed(error: ProxyError) -> None:
    """The run failed with `error`: its exchange (exchange.failed) and its access line say so."""
    exchange.failed(error)
    record = metrics.CURRENT.get()
    if type(record) is RunRecord:
        record.status = error.status or 500


def reserve(request: web.Request) -> Callable[[], None]:
    """A place for one more background run of this client (fair_share.py; a 429 over its cap), before
    anything is stored; launch() gives it back when the run ends (call the result if it never starts)."""
    return request.app[FAIR].run(client_of(request))


def launch(request: web.Request, store: SessionStore, session: str, iid: str, work: Coroutine[Any, Any, None],
           lease: float, recorder: Recorder | None = None, release: Callable[[], None] | None = None
           ) -> asyncio.Task[None]:
    """Run `work` (it stores the interaction's end itself, cancelled included) while renewing the
    lease and watching for a stop request. With a `recorder`, the run is recorded as an exchange of
    its own (recording.begin_run), finished when the run ends; `work` notes its failures on it and
    on the run's access line (failed()). The access line, one more after the request's, has the
    run's tokens and upstream time, status 499 when it was cancelled."""
    run = recording.begin_run(recorder, iid)
    method, path, asked = request.method, request.path, metrics.CURRENT.get()  # (not the request: it is over soon)
    record = RunRecord(asked.route if asked is not None else path, client_model=asked.client_model if asked else "",
                       client=asked.client if asked else "")

    async def supervised() -> None:
        job = asyncio.current_task()
        assert job is not None
        beat = asyncio.create_task(_renew(store, session, iid, lease, job))
        cancelled = False
        try:
            await work
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            if run is not None:  # (begin_run made it: there is a recorder)
                recording.end_run(recorder, run, cancelled)
            if access_log.enabled():
                access_log.write(access_log.access_fields(method, path, 499 if cancelled else record.status, record,
                                                          REQUEST_ID.get(), SESSION_ID.get()), iid)
            beat.cancel()
            if release is not None:
                release()
            await asyncio.gather(beat, return_exceptions=True)
            # A delete may have landed while the end was being stored: the end must not bring it back.
            try:
                if await stop_requested(store, session, iid) == "delete":
                    await store.delete_response(session, iid)
            except ProxyError as e:
                log.warning("background interaction %s: could not check for a delete: %s", iid, e.message)

    context = contextvars.copy_context()  # the request's, but for its exchange and record: the run's are current
    context.run(exchange.CURRENT.set, run)
    context.run(metrics.CURRENT.set, record)
    return asyncio.get_running_loop().create_task(supervised(), context=context)


def shut_down() -> bool:
    """The current run's cancellation is the shutdown's (stop_runs): it ends `failed`, not `cancelled`."""
    task = asyncio.current_task()
    return task is not None and task in _STOPPED


def shutdown_error() -> ProxyError:
    return ProxyError(SHUT_DOWN, status=503, type="server_error", code="server_shutting_down")


async def stop_runs(runs: Iterable[asyncio.Task[None]], grace: float, final: float) -> None:
    """The shutdown: runs get `grace` seconds to finish; those still running are cancelled as the
    shutdown's (their handlers store them failed) and get `final` seconds to store that end."""
    running = [t for t in runs if not t.done()]
    if not running:
        return
    _, pending = await asyncio.wait(running, timeout=grace)
    if not pending:
        return
    log.info("shutdown: %d background run(s) still running are ended as failed", len(pending))
    for task in pending:
        _STOPPED.add(task)
        task.cancel(SHUT_DOWN)
    _, left = await asyncio.wait(pending, timeout=final)
    if left:
        log.warning("shutdown: %d background run(s) could not store their end in time", len(left))


async def _renew(store: SessionStore, session: str, iid: str, lease: float, job: asyncio.Task[None]) -> None:
    while True:
        await asyncio.sleep(beat_seconds(lease))
        try:
            if await stop_requested(store, session, iid):
                job.cancel()
                return
            await claim(store, session, iid, lease)
        except ProxyError as e:  # the store is down: the run goes on; the lease is renewed when it is back
            log.warning("background interaction %s: lease not renewed: %s", iid, e.message)


async def cancel_elsewhere[T](store: SessionStore, session: str, rid: str, lease: float,
                               ended: Callable[[], Awaitable[T | None]]) -> T | None:
    """Another instance runs `rid`: ask it to cancel, and wait until `ended()` finds its end stored (the
    runner looks on every lease renewal); None when it has not confirmed by the deadline."""
    await request_stop(store, session, rid, "cancel")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 2 * beat_seconds(lease) + 5
    while loop.time() < deadline:
        await asyncio.sleep(STOP_POLL_SECONDS)
        found = await ended()
        if found is not None:
            return found
    return None


async def delete(store: SessionStore, session: str, rid: str, running: bool, tasks: dict[str, asyncio.Task[None]]
                 ) -> None:
    """Delete a stored background run. The stop request goes first: the instance running it (this one
    or another) stops, and its end, stored meanwhile, is removed again (`launch`)."""
    if running:
        await request_stop(store, session, rid, "delete")
    task = tasks.get(rid)
    if task is not None:
        task.cancel()
        await asyncio.wait([task])
    await store.delete_response(session, rid)
