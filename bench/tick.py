"""The cost of a reconcile tick with nothing to do, and of a state change, against baselines.

    python bench/tick.py [--db sqlite|postgres|both] [--services 1000] [--deployments 100000]
                         [--events 1000000] [--ticks 15] [--transitions 1000] [--strict]

For each database (a SQLite file; a throwaway PostgreSQL server from Debian's binaries, as
the tests start it):

1. **Idle tick.** 1,000 services (10 projects of 100, one environment each), every one with
   an active release and nothing in flight. One tick of ``nebula serve`` (expire approvals,
   then ``reconciling.advance``: promotion gates and the engine's tick; drift checks have a
   timer of their own, and the seeded releases are not real enough to check) is timed
   (median of ``--ticks`` after a warm-up) and its SQL statements counted (a SQLAlchemy
   ``before_cursor_execute`` listener): first with an empty history, then again after bulk
   inserts of 100k finished deployments (with their releases) and 1M events. Targets: the
   ratio history/empty <= 1.1x, and the same statement count (it must not grow with history).
2. **Transitions per second.** A state change and its event (``recording.move``: pending ->
   admitted through the transition table, writing the event), committed one per transaction
   and 100 per transaction, against raw ``sqlite3`` / ``psycopg`` running the same statements
   (the SELECT of the row, the UPDATE, the INSERT of the event, the same BEGIN/COMMIT) with the
   same batching, in the same run. The engine's statements are printed so the comparison can
   be checked. Targets: >= 0.5x raw on SQLite, >= 0.7x on PostgreSQL.
3. **The throughput path.** Statements and round trips per transition when the tick makes
   them: ``--path-projects`` x 25 pending deployments ticked to healthy on the simulated
   cluster, the engine's and the simulated cluster's counted apart (``tickpath``).

Rounds alternate engine and raw. ``--strict`` exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import Engine, event

from reconciler import bootstrap, reconciling
from reconciler.clock import FakeClock
from reconciler.context import Context
from reconciler.core.transitions import Trigger
from reconciler.engine import recording
from reconciler.settings import Settings
from reconciler.store import schema
from tests.infra.postgres import PostgresServer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tickpath import PathFigures, measure_path, report_path
from tickraw import raw_postgres_transitions, raw_sqlite_transitions
from tickseed import (
    IMAGE,
    PROJECTS,
    T0,
    count_rows,
    naive,
    seed_history,
    seed_services,
)

TICK_RATIO = 1.1
RAW_RATIO = {"sqlite": 0.5, "postgres": 0.7}
BATCHES = (1, 100)


# -- counting and timing ---------------------------------------------------------------------


class Statements:
    """Counts (and optionally keeps) every SQL statement an engine sends to its driver."""

    def __init__(self, engine: Engine) -> None:
        self.count = 0
        self.kept: list[str] | None = None
        event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.count += 1
        if self.kept is not None:
            self.kept.append(" ".join(statement.split()))

    @contextmanager
    def keeping(self) -> Iterator[list[str]]:
        self.kept = []
        try:
            yield self.kept
        finally:
            self.kept = None


# -- 1. the idle tick --------------------------------------------------------------------------


@dataclass
class TickFigures:
    seconds: float
    statements: int
    rows: dict[str, int]


def measure_ticks(
    stores: list[tuple[Context, Statements]], ticks: int, warmup: int = 3
) -> list[TickFigures]:
    """Ticks on each store in turn, round after round, so both see the same machine load."""

    def one(ctx: Context) -> None:
        reconciling.expire(ctx)
        moved, busy = reconciling.advance(ctx)
        assert moved == 0 and not busy, "the bench expects nothing to do"

    counted = []
    for ctx, statements in stores:
        one(ctx)
        before = statements.count
        one(ctx)
        counted.append(statements.count - before)
    samples: list[list[float]] = [[] for _ in stores]
    for round_ in range(warmup + ticks):
        for (ctx, _), series in zip(stores, samples, strict=True):
            start = time.perf_counter()
            one(ctx)
            if round_ >= warmup:
                series.append(time.perf_counter() - start)
    return [
        TickFigures(statistics.median(series), count, count_rows(ctx))
        for (ctx, _), series, count in zip(stores, samples, counted, strict=True)
    ]


# -- 2. transitions ----------------------------------------------------------------------------


_NUMBERS = itertools.count(1_000_000)


def make_pending(ctx: Context, units: list[int], n: int) -> list[int]:
    """``n`` pending deployments (one per unit, round robin) with their releases."""
    now = naive(T0)
    ids = []
    with ctx.db.transaction() as session:
        for i in range(n):
            unit = units[i % len(units)]
            release = schema.Release(
                unit_id=unit,
                number=next(_NUMBERS),
                image=IMAGE,
                config={},
                status="created",
                source="bench",
                created_at=now,
            )
            session.add(release)
            session.flush()
            deployment = schema.Deployment(
                project_id=(unit - 1) // (len(units) // PROJECTS) + 1,
                environment_id=(unit - 1) // (len(units) // PROJECTS) + 1,
                unit_id=unit,
                release_id=release.id,
                kind="deploy",
                state="pending",
                requested_by="bench",
                attempts=0,
                created_at=now,
                stage_started_at=now,
                queued_at=now,
            )
            session.add(deployment)
            session.flush()
            ids.append(deployment.id)
    return ids


def engine_transitions(ctx: Context, ids: list[int], batch: int) -> None:
    """The engine's way: load the row, move it through the table, its event; commit."""
    for start in range(0, len(ids), batch):
        with ctx.db.transaction() as session:
            for deployment_id in ids[start : start + batch]:
                deployment = session.get(schema.Deployment, deployment_id)
                assert deployment is not None
                recording.move(session, ctx.clock, deployment, Trigger.ADMIT)


@dataclass
class Rate:
    engine: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(self.engine) / statistics.median(self.raw)


def measure_transitions(
    ctx: Context, raw: Callable[[list[int], int], None], units: list[int], n: int, rounds: int
) -> dict[int, Rate]:
    rates = {batch: Rate() for batch in BATCHES}
    for _ in range(rounds):
        for batch in BATCHES:
            for contender in ("engine", "raw"):
                ids = make_pending(ctx, units, n)
                start = time.perf_counter()
                if contender == "engine":
                    engine_transitions(ctx, ids, batch)
                else:
                    raw(ids, batch)
                getattr(rates[batch], contender).append(n / (time.perf_counter() - start))
    return rates


def engine_statements(ctx: Context, statements: Statements, units: list[int]) -> list[str]:
    ids = make_pending(ctx, units, 1)
    with statements.keeping() as kept:
        engine_transitions(ctx, ids, 1)
    return kept


# -- running -----------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    empty: TickFigures
    history: TickFigures
    rates: dict[int, Rate]
    statements: list[str]
    path: PathFigures

    @property
    def tick_ratio(self) -> float:
        return self.history.seconds / self.empty.seconds

    def misses(self) -> list[str]:
        out = []
        if self.tick_ratio > TICK_RATIO:
            out.append(
                f"{self.name}: idle tick {self.tick_ratio:.2f}x with history (target <= {TICK_RATIO}x)"
            )
        if self.history.statements != self.empty.statements:
            out.append(
                f"{self.name}: {self.history.statements} statements per tick with history, {self.empty.statements} without"
            )
        for batch, rate in self.rates.items():
            if rate.ratio < RAW_RATIO[self.name]:
                out.append(
                    f"{self.name}: transitions {rate.ratio:.2f}x raw at {batch}/transaction (target >= {RAW_RATIO[self.name]}x)"
                )
        return out


def open_store(name: str, url: str, workdir: Path) -> tuple[Context, Statements]:
    settings = Settings(database_url=url, state_dir=workdir / name, secret_key="")
    ctx = bootstrap.open_context(settings, FakeClock(T0), git=False)
    return ctx, Statements(ctx.db.engine)


def run(
    name: str,
    urls: tuple[str, str, str],
    raw: Callable[[list[int], int], None],
    args: argparse.Namespace,
    workdir: Path,
) -> Result:
    """``urls``: an empty store, one that gets the history (``raw`` acts on it), and one for
    the throughput path."""
    empty, history = (
        open_store(f"{name}-empty", urls[0], workdir),
        open_store(name, urls[1], workdir),
    )
    try:
        print(f"[{name}] seeding {args.services} services in two stores", flush=True)
        units = seed_services(empty[0], args.services)
        seed_services(history[0], args.services)
        started = time.perf_counter()
        seed_history(history[0], args.services, args.deployments, args.events)
        print(
            f"[{name}] history inserted in {time.perf_counter() - started:.1f}s: "
            f"{count_rows(history[0])}",
            flush=True,
        )
        without, with_history = measure_ticks([empty, history], args.ticks)
        print(
            f"[{name}] idle tick: {without.seconds * 1000:.2f} ms empty, {with_history.seconds * 1000:.2f} ms with history",
            flush=True,
        )
        shown = engine_statements(history[0], history[1], units)
        rates = measure_transitions(history[0], raw, units, args.transitions, args.rounds)
        print(f"[{name}] the throughput path: {args.path_projects * 25} deployments", flush=True)
        path = measure_path(urls[2], workdir / f"{name}-path", args.path_projects)
        return Result(name, without, with_history, rates, shown, path)
    finally:
        empty[0].db.dispose()
        history[0].db.dispose()


def report(results: list[Result]) -> None:
    print()
    print("Idle tick (1 reconcile pass without polling; median)")
    print(
        f"  {'db':<9} {'empty':>10} {'history':>10} {'ratio':>7} {'target':>7} {'statements':>11}"
    )
    for r in results:
        print(
            f"  {r.name:<9} {r.empty.seconds * 1000:>8.2f}ms {r.history.seconds * 1000:>8.2f}ms"
            f" {r.tick_ratio:>6.2f}x {'<=' + str(TICK_RATIO) + 'x':>7} {r.empty.statements:>5} -> {r.history.statements}"
        )
    print()
    print("Transitions per second (state change + event; median of rounds)")
    print(f"  {'db':<9} {'batch':>5} {'engine':>9} {'raw':>9} {'ratio':>7} {'target':>7}")
    for r in results:
        for batch, rate in r.rates.items():
            print(
                f"  {r.name:<9} {batch:>5} {statistics.median(rate.engine):>9.0f} {statistics.median(rate.raw):>9.0f}"
                f" {rate.ratio:>6.2f}x {'>=' + str(RAW_RATIO[r.name]) + 'x':>7}"
            )
    report_path([(r.name, r.path) for r in results])
    for r in results:
        print()
        print(f"The engine's statements for one transition on {r.name}:")
        for statement in r.statements:
            print(f"  {statement[:160]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--deployments", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--ticks", type=int, default=15)
    parser.add_argument("--transitions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--path-projects", type=int, default=4)
    parser.add_argument("--strict", action="store_true")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="nebula-bench-tick-") as tmp:
        workdir = Path(tmp)
        if args.db in ("sqlite", "both"):
            path = workdir / "sqlite.db"
            urls = (
                f"sqlite:///{workdir / 'sqlite-empty.db'}",
                f"sqlite:///{path}",
                f"sqlite:///{workdir / 'sqlite-path.db'}",
            )
            results.append(
                run(
                    "sqlite",
                    urls,
                    lambda ids, b: raw_sqlite_transitions(str(path), ids, b),
                    args,
                    workdir,
                )
            )
        if args.db in ("postgres", "both"):
            server = PostgresServer()
            try:
                server.start()
                urls = (
                    server.create_database("bench_empty"),
                    server.create_database("bench"),
                    server.create_database("bench_path"),
                )
                dsn = urls[1].replace("postgresql+psycopg://", "postgresql://")
                results.append(
                    run(
                        "postgres",
                        urls,
                        lambda ids, b: raw_postgres_transitions(dsn, ids, b),
                        args,
                        workdir,
                    )
                )
            finally:
                server.close()
    report(results)
    misses = [m for r in results for m in r.misses()]
    if misses:
        print()
        print("Missed targets:")
        for miss in misses:
            print(f"  {miss}")
    return 1 if misses and args.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
