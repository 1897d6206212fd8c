"""The timers of ``nebula serve``: polling each project when due, the reconcile tick, approval
expiry, drift checks and outbox delivery, on an APScheduler 3 background scheduler.

- Polling: every second, the projects whose ``next_poll_at`` has come are polled, at most
  ``poll_batch`` at once. After a poll the next one is set a little *before* the interval
  (``interval * U(1 - jitter, 1)``), so projects registered together drift apart instead of
  polling in the same second forever, and no project waits longer than its interval.
- A push notification (``poll_soon``) polls that project at once, in a worker thread. A poll
  already running for it is not doubled: it is repeated when it ends, since it may have
  listed the heads just before the push.
- The tick runs every second; it repeats at once while deployments keep moving and after a
  short pause while one waits on the cluster, so a stage costs its own time, not a second.
- Several replicas (PostgreSQL) share the work: deployments carry their own leases
  (``engine.ticking``); a project's poll and each timer (expiry, drift checks) take a lease.

Stopping (SIGTERM) lets the step in progress finish, then releases this replica's leases.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Sized
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Protocol

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from notifiers import outbox
from reconciler import reconciling
from reconciler.admin import projects as project_rows
from reconciler.context import Context
from reconciler.engine import drifting, ticking
from reconciler.errors import StoreError
from reconciler.gitops import polling
from reconciler.store import failures, leases, schema

log = logging.getLogger("nebula.scheduler")

# A poll's lease is short and renewed while the poll runs: a replica killed mid-poll holds its
# projects for POLL_LEASE at most, however long a slow remote could keep a live one polling.
POLL_LEASE = timedelta(seconds=30)
POLL_RENEW = timedelta(seconds=10)
WRITER_LEASE = timedelta(seconds=20)
WRITER_RENEW = timedelta(seconds=5)
TIMER_LEASE = timedelta(seconds=30)
DELIVERIES_KEPT = timedelta(days=7)


class Observer(Protocol):
    """What the scheduler reports as it works (the server's metrics implement it)."""

    def polled(self, report: polling.PollReport, seconds: float) -> None: ...

    def ticked(self, seconds: float, moved: int) -> None: ...

    def notified(self, channel_kind: str, outcome: str) -> None: ...


class _Quiet:
    def polled(self, report: polling.PollReport, seconds: float) -> None: ...

    def ticked(self, seconds: float, moved: int) -> None: ...

    def notified(self, channel_kind: str, outcome: str) -> None: ...


@dataclass(frozen=True)
class Timings:
    """Seconds between runs of each timer, and how much a tick or a poll round takes on."""

    tick: float = 1.0
    tick_budget: float = 30.0  # a tick repeats within this while deployments move
    busy_pause: float = 0.05  # ...and pauses at least this long while one waits (``pause``)
    wait_share: float = 0.1  # ...or this share of the wait so far (up to 1 s)
    poll_check: float = 1.0
    poll_batch: int = 50
    jitter: float = 0.1
    expire: float = 10.0
    drift: float = 10.0
    outbox: float = 2.0

    def pause(self, spent: float, waited: float) -> float:
        """Seconds between ticks while nothing moves, after a pass of ``spent`` seconds and
        ``waited`` since anything moved. A short stage is noticed within 50 ms wherever in the
        pause it ended (at 0.2 s, a quarter of a 0.4 s rollout was lost on average); a long one
        within a tenth of its time, so a 10-minute rollout costs a pass a second, not twenty;
        and the tick holds the store a third of the time at most."""
        return min(1.0, max(self.busy_pause, 2 * spent, self.wait_share * waited))


def claim_writer(ctx: Context, owner: str) -> str | None:
    """On SQLite one server at a time: None if this one may run, else why it may not.

    SQLite has one writer, so a second live server would only queue behind the first and
    double every poll; several replicas need PostgreSQL. A holder that died on this host
    (SIGKILL) is taken over at once rather than after its lease expires."""
    if not ctx.db.is_sqlite:
        return None
    name = leases.SQLITE_WRITER
    if leases.claim(ctx.db, ctx.clock, [name], owner, WRITER_LEASE):
        return None
    with ctx.db.reading() as session:
        other = leases.holder(session, ctx.clock, name) or "another server"
    if leases.gone(other) and leases.take_over(ctx.db, ctx.clock, name, owner, other, WRITER_LEASE):
        log.info("took over from a server that is gone", extra={"previous": other})
        return None
    return (
        f"Another Nebula server ({other}) is running on this SQLite database. SQLite has one "
        "writer: stop that server, or run several replicas on PostgreSQL "
        "(NEBULA_DATABASE_URL=postgresql+psycopg://...)."
    )


class Scheduler:
    def __init__(
        self,
        ctx: Context,
        *,
        observer: Observer | None = None,
        timings: Timings = Timings(),
        workers: int = 8,
        rng: random.Random | None = None,
    ) -> None:
        self.ctx = ctx
        self.owner = ticking.replica_id(ctx)
        self.observer: Observer = observer or _Quiet()
        self.timings = timings
        self._rng = rng or random.Random()
        self._aps = BackgroundScheduler(
            timezone=UTC,
            executors={"default": ThreadPoolExecutor(max_workers=workers)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 30},
        )
        self._stopping = threading.Event()
        self._tick_wanted = threading.Event()
        self._moved_at = time.monotonic()  # when a tick last moved something
        self._lock = threading.Condition()
        self._running = 0  # jobs in progress
        self._polling: set[str] = set()  # projects being polled by this process
        self._again: set[str] = set()  # ...and to poll once more when that ends
        self._outage = failures.Outage(log)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        now = datetime.now(UTC)
        jobs: list[tuple[str, Callable[[], object], float]] = [
            ("tick", self.run_tick, self.timings.tick),
            ("poll", self.poll_due, self.timings.poll_check),
            ("expire", self.expire, self.timings.expire),
            ("drift", self.check_drift, self.timings.drift),
            ("outbox", self.deliver_outbox, self.timings.outbox),
        ]
        if self.ctx.db.is_sqlite:
            jobs.append(("writer", self.renew_writer, WRITER_RENEW.total_seconds()))
        for name, func, seconds in jobs:
            self._aps.add_job(
                self._guarded(name, func), "interval", seconds=seconds, id=name, next_run_time=now
            )
        self._aps.start()
        log.info("scheduler started", extra={"replica": self.owner})

    def begin_stop(self) -> None:
        """Stop starting new work; what runs now finishes (non-blocking, signal-safe)."""
        self._stopping.set()
        self._tick_wanted.set()  # ends the tick's pause

    def stop(self, timeout: float = 6.0) -> bool:
        """Wait up to ``timeout`` for the work in progress; True when it all finished."""
        self.begin_stop()
        if self._aps.running:
            self._aps.shutdown(wait=False)
        with self._lock:
            finished = self._lock.wait_for(lambda: self._running == 0, timeout)
        if finished:
            try:
                with self.ctx.db.transaction() as session:
                    session.execute(delete(schema.Lease).where(schema.Lease.owner == self.owner))
            except Exception as exc:  # they expire by themselves anyway
                log.warning("could not release leases", extra={"reason": str(exc)})
        log.info("scheduler stopped", extra={"clean": finished})
        return finished

    @property
    def running(self) -> bool:
        return bool(self._aps.running)

    def _guarded(self, name: str, func: Callable[[], object]) -> Callable[[], None]:
        """A job that never takes the scheduler down and is counted while it runs. The store
        failing (a database restarting) is one warning for the whole outage, not a traceback
        per job per second."""

        def run() -> None:
            with self._lock:
                if self._stopping.is_set():
                    return
                self._running += 1
            try:
                func()
                self._outage.answered(name)
            except StoreError as exc:
                self._outage.failed(name, exc)
            except Exception as exc:  # one failed run must not stop the timers
                if (store := failures.store_error(exc)) is not None:
                    self._outage.failed(name, store)
                    return
                log.warning(
                    f"{name} failed", extra={"job": name, "reason": str(exc)}, exc_info=True
                )
            finally:
                with self._lock:
                    self._running -= 1
                    self._lock.notify_all()

        return run

    # -- the reconcile tick -------------------------------------------------------------------

    def run_tick(self) -> int:
        """Tick; again at once while something moved, or after a pause while a deployment is
        waiting on the cluster (a stage's time: ``Timings.pause``), within ``tick_budget``."""
        deadline = time.monotonic() + self.timings.tick_budget
        total = 0
        while not self._stopping.is_set():
            with self._lock:  # polls first: a push's detection is what people wait on
                self._lock.wait_for(lambda: not self._polling or self._stopping.is_set(), 1.0)
            self._tick_wanted.clear()
            started = time.perf_counter()
            moved, busy = reconciling.advance(self.ctx)
            spent = time.perf_counter() - started
            self.observer.ticked(spent, moved)
            total += moved
            now = time.monotonic()
            self._moved_at = now if moved else self._moved_at
            if now >= deadline or not (moved or busy or self._tick_wanted.is_set()):
                break
            if not moved:
                # Waiting: polls and pages get the store; a wake-up cuts the pause short.
                self._tick_wanted.wait(self.timings.pause(spent, now - self._moved_at))
        return total

    def wake_tick(self) -> None:
        """Something may move now (a change set was staged, an approval decided)."""
        self._tick_wanted.set()
        if self._aps.running and not self._stopping.is_set():
            # JobLookupError (a LookupError): not started yet, or already shut down.
            with contextlib.suppress(LookupError):
                self._aps.modify_job("tick", next_run_time=datetime.now(UTC))

    # -- polling ------------------------------------------------------------------------------

    def poll_due(self) -> polling.PollReport:
        when = schema.Project.next_poll_at
        query = select(schema.Project.slug).where(or_(when.is_(None), when <= self.ctx.clock.now()))
        with self.ctx.db.transaction() as session:
            due = list(session.scalars(query.order_by(when).limit(self.timings.poll_batch)))
        return self._poll_now(due)

    def poll_soon(self, slug: str) -> None:
        """Poll ``slug`` now, in a worker thread: the caller (a webhook) answers at once."""
        with self._lock:
            if slug in self._polling:
                self._again.add(slug)
                return
        if self._aps.running and not self._stopping.is_set():
            self._aps.add_job(self._guarded(f"poll {slug}", lambda: self._poll_now([slug])))

    def _poll_now(self, slugs: Iterable[str]) -> polling.PollReport:
        with self._lock:
            batch = [s for s in dict.fromkeys(slugs) if s not in self._polling]
            self._polling.update(batch)
        held = set(batch)
        total = polling.PollReport()
        try:
            while batch and not self._stopping.is_set():
                report = self._poll_claimed(batch)
                total.add(report)
                # Checked and released under one lock, so a push noticed meanwhile is never lost.
                with self._lock:
                    batch = [s for s in batch if s in self._again]
                    self._again.difference_update(batch)
                    self._polling.difference_update(held - set(batch))
                    held = set(batch)
        finally:
            with self._lock:
                self._polling.difference_update(held)
                self._lock.notify_all()
        return total

    def _poll_claimed(self, slugs: list[str]) -> polling.PollReport:
        claimed = [
            name.removeprefix("poll:")
            for name in self._claim([f"poll:{s}" for s in slugs], POLL_LEASE)
        ]
        if not claimed:
            return polling.PollReport()
        started = time.perf_counter()
        renew = partial(self._claim, [f"poll:{s}" for s in claimed], POLL_LEASE)
        try:
            with leases.renewing(renew, POLL_RENEW, "nebula-poll-lease"):
                report = polling.poll(self.ctx, claimed)
        finally:
            self._spread_and_release(claimed)
        seconds = time.perf_counter() - started
        self.observer.polled(report, seconds)
        if report.moved or report.blocked:
            counts: dict[str, Sized] = {"moved": report.moved, "staged": report.staged}
            counts["blocked"] = report.blocked
            extra = {k: len(v) for k, v in counts.items()} | {"seconds": round(seconds, 3)}
            log.info("polled", extra={"projects": len(claimed), **extra})
        if report.staged:
            self.wake_tick()
        return report

    def _spread_and_release(self, slugs: list[str]) -> None:
        """Set each project's next poll a little before its interval; free the leases."""
        with self.ctx.db.transaction() as session:
            for project in session.scalars(
                select(schema.Project).where(schema.Project.slug.in_(slugs))
            ):
                if project.last_polled_at is None:
                    continue
                factor = 1 - self.timings.jitter * self._rng.random()
                project_rows.schedule_next(
                    project, timedelta(seconds=project.interval_seconds * factor)
                )
            self._release(session, [f"poll:{s}" for s in slugs])

    # -- timers that one replica runs at a time -----------------------------------------------

    def expire(self) -> int:
        if not self._claim(["timer:expire"], TIMER_LEASE):
            return 0
        try:
            expired = reconciling.expire(self.ctx)
        finally:
            with self.ctx.db.transaction() as session:
                session.execute(
                    delete(schema.WebhookDelivery).where(
                        schema.WebhookDelivery.received_at < self.ctx.clock.now() - DELIVERIES_KEPT
                    )
                )
                self._release(session, ["timer:expire"])
        if expired:
            log.info("approvals expired", extra={"count": expired})
            self.wake_tick()
        return expired

    def check_drift(self) -> int:
        """Units due a drift check (``engine.drifting``); a long round stops halfway to its lease."""
        if not self._claim(["timer:drift"], TIMER_LEASE):
            return 0
        until = time.monotonic() + TIMER_LEASE.total_seconds() / 2
        try:
            stop = lambda: self._stopping.is_set() or time.monotonic() > until  # noqa: E731
            return drifting.check_due(self.ctx, stopping=stop)
        finally:
            with self.ctx.db.transaction() as session:
                self._release(session, ["timer:drift"])

    def renew_writer(self) -> bool:
        """Keep this server the one writer of its SQLite database (see ``claim_writer``)."""
        if leases.claim(
            self.ctx.db, self.ctx.clock, [leases.SQLITE_WRITER], self.owner, WRITER_LEASE
        ):
            return True
        log.error("another server took over this SQLite database; stopping work here")
        self.begin_stop()
        return False

    def deliver_outbox(self) -> int:
        return outbox.deliver_due(self.ctx, observe=self.observer.notified)

    # -- leases -------------------------------------------------------------------------------

    def _claim(self, names: list[str], ttl: timedelta) -> list[str]:
        return leases.claim(self.ctx.db, self.ctx.clock, names, self.owner, ttl)

    def _release(self, session: Session, names: list[str]) -> None:
        leases.release(session, names, self.owner)
