"""The throughput path of ``bench/tick.py``: what a state change costs when the tick makes it.

Pending deployments (``--path-projects`` projects of 25 services, registered and polled from
real git repositories, the shape ``bench/throughput.py`` uses) are ticked to healthy on the
simulated cluster with zero delay, every SQL statement counted on the store's engine:

- statements: cursor executions (an ``executemany`` is one: the driver sends it as one batch);
- round trips: statements, plus each transaction's end, plus its start where the driver sends
  one of its own (PostgreSQL's ``BEGIN``; SQLite's ``BEGIN IMMEDIATE`` is already a statement);
  a connection in autocommit mode sends neither.

Each is told apart as the engine's or the simulated cluster's (whose objects live in the same
store) by the thread it runs in while a cluster call is under way (or while a batch of calls
stores its writes, as ``Cluster.batch`` ends), and divided by the transitions made (the
deployments' events after ``pending``). On SQLite the simulated cluster's reads go to the
store's reading engine, which is not counted. Works against any revision of
the engine that ticks through ``ctx.clusters.for_environment`` (to measure a before).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event, func, select
from throughput import nebula_toml

from reconciler import bootstrap
from reconciler.admin import projects as project_rows
from reconciler.clock import FakeClock
from reconciler.context import Context
from reconciler.engine import ticking
from reconciler.gitops import polling
from reconciler.settings import Settings
from reconciler.store import schema
from tests.plugins.git import GitRepo

SERVICES = 25
_inside = threading.local()  # .depth > 0 while this thread is in a cluster call


@dataclass
class Counts:
    statements: dict[str, int] = field(default_factory=lambda: {"engine": 0, "cluster": 0})
    round_trips: dict[str, int] = field(default_factory=lambda: {"engine": 0, "cluster": 0})

    def seen(self, statements: int, round_trips: int) -> None:
        who = "cluster" if getattr(_inside, "depth", 0) else "engine"
        self.statements[who] += statements
        self.round_trips[who] += round_trips


@dataclass
class PathFigures:
    transitions: int
    counts: Counts

    def per(self, kind: str, who: str) -> float:
        figures = self.counts.statements if kind == "statements" else self.counts.round_trips
        total = sum(figures.values()) if who == "total" else figures[who]
        return total / self.transitions


@contextmanager
def _marked(inner: AbstractContextManager[None]) -> Iterator[None]:
    """A batch of calls whose end (where the simulated cluster stores its writes) is marked."""
    inner.__enter__()
    try:
        yield
    except BaseException as exc:
        inner.__exit__(type(exc), exc, exc.__traceback__)
        raise
    _inside.depth = getattr(_inside, "depth", 0) + 1
    try:
        inner.__exit__(None, None, None)
    finally:
        _inside.depth -= 1


class _Marked:
    """A cluster whose calls mark their thread while they run (what the counts tell apart)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def batch(self) -> AbstractContextManager[None]:
        return _marked(self._inner.batch())

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            _inside.depth = getattr(_inside, "depth", 0) + 1
            try:
                return attribute(*args, **kwargs)
            finally:
                _inside.depth -= 1

        return call


class _MarkedClusters:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def for_environment(self, contexts: dict[str, str] | None, environment: str) -> Any:
        return _Marked(self._inner.for_environment(contexts, environment))

    def simulated(self) -> Any:
        return self._inner.simulated()

    def close(self) -> None:
        self._inner.close()


def _listen(ctx: Context, counts: Counts) -> None:
    sends_begin = not ctx.db.is_sqlite

    def autocommit(conn: Any) -> bool:
        return bool(conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT")

    def statement(*args: Any) -> None:
        counts.seen(1, 1)

    def begin(conn: Any) -> None:
        if sends_begin and not autocommit(conn):
            counts.seen(0, 1)

    def end(conn: Any) -> None:
        if not autocommit(conn):
            counts.seen(0, 1)

    listeners: list[tuple[str, Callable[..., None]]] = [
        ("before_cursor_execute", statement),
        ("begin", begin),
        ("commit", end),
        ("rollback", end),
    ]
    for name, listener in listeners:
        event.listen(ctx.db.engine, name, listener)


def measure_path(url: str, workdir: Path, projects: int) -> PathFigures:
    """Seed ``projects`` x 25 pending deployments in the store at ``url``, tick them healthy,
    and count what it took."""
    settings = Settings(
        database_url=url, state_dir=workdir, secret_key="", simulated_delay=timedelta(0)
    )
    ctx = bootstrap.open_context(settings, FakeClock())
    try:
        slugs = []
        with ctx.db.transaction() as session:
            for p in range(projects):
                slug = f"path-{p}"
                repo = GitRepo(workdir / "repos" / slug, bare=True)
                repo.commit({"nebula.toml": nebula_toml(slug, SERVICES)}, "First version")
                project_rows.add(session, ctx.clock, slug, str(repo.path))
                slugs.append(slug)
        polling.poll(ctx, slugs)
        counts = Counts()
        ctx.clusters = _MarkedClusters(ctx.clusters)  # type: ignore[assignment]
        _listen(ctx, counts)
        while True:
            moved, busy = ticking.tick(ctx)
            if not moved and not busy:
                break
        with ctx.db.transaction() as session:
            transitions = session.scalar(
                select(func.count(schema.Event.id)).where(
                    schema.Event.kind == "deployment", schema.Event.state != "pending"
                )
            )
            unfinished = session.scalar(
                select(func.count(schema.Deployment.id)).where(schema.Deployment.state != "healthy")
            )
        if unfinished:
            raise RuntimeError(f"{unfinished} deployments did not go healthy")
        return PathFigures(int(transitions or 0), counts)
    finally:
        ctx.db.dispose()
        if ctx.git is not None:
            ctx.git.close()


def report_path(results: list[tuple[str, PathFigures]]) -> None:
    print()
    print("The throughput path (pending -> healthy by the tick, simulated cluster): per transition")
    print(f"  {'db':<9} {'transitions':>11} {'':>11} {'engine':>7} {'cluster':>8} {'total':>7}")
    for name, figures in results:
        for kind in ("statements", "round trips"):
            shown = [figures.per(kind, who) for who in ("engine", "cluster", "total")]
            print(
                f"  {name:<9} {figures.transitions:>11} {kind:>11}"
                f" {shown[0]:>7.2f} {shown[1]:>8.2f} {shown[2]:>7.2f}"
            )
