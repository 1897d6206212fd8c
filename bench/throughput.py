"""Deployment state transitions per second with 1, 2 and 4 replicas on PostgreSQL, next to
pgbench running the same claim-and-insert-event work at the same client counts; or, with
``--latency``, deployments per second of one replica with 1 and 8 workers on a slow API.

    python bench/throughput.py [--projects 20] [--services 25] [--replicas 1,2,4] [--strict]
                               [--same-core]
    python bench/throughput.py --latency 20ms [--workers 1,8] [--projects 20] [--strict]

For each replica count, in one run against one throwaway PostgreSQL server (Debian's binaries,
as the tests start it):

1. **Nebula.** A fresh database; ``--projects`` projects of ``--services`` services each
   (one unprotected environment) are registered and polled in-process, so their first deploys
   wait in ``pending`` exactly as a push leaves them. Then N worker processes start, each
   running the engine's tick loop (``reconciler.engine.ticking.tick``, what ``nebula serve``
   runs, without the web server and the poll timers, once settled as it is:
   ``bootstrap.settle``) with its own replica id on the simulated
   cluster with zero delay, until nothing is left to do. Every deployment walks pending ->
   admitted -> starting -> qualifying -> activating -> draining -> healthy: six transitions,
   each claimed with a lease (``FOR UPDATE SKIP LOCKED``), rendered, applied to the
   simulated cluster (rows in the same database) and recorded with its event.
   Rate = transitions recorded / seconds from "go" until the last worker says it is done
   (not until its process exits: shutting Python down is no work of the engine's, and
   pgbench's rate leaves out its own start and exit).
2. **pgbench** (``/usr/lib/postgresql/*/bin/pgbench``) at ``-c N -j N -M prepared`` with a
   custom script doing, per transaction, the bare database work of a transition: claim the
   lowest unfinished deployment row ``FOR UPDATE SKIP LOCKED``, move its state one step
   (``UPDATE ... RETURNING``) and insert its event, as many transitions as Nebula made
   (``throughputpg``), ``PGBENCH_RUNS`` times; the fastest run is the baseline. (On this
   2-core VM one client's rate is bimodal, about 2,000 or about 9,000 tps from one run to
   the next, depending on whether the client and its backend wake each other across idle
   cores; the best of several is the fair, and the harder, baseline.) With ``--same-core``
   the server, pgbench and Nebula's workers all run on CPU 0: no wake-ups across cores for
   either side, and the same CPU for both, so one replica's ratio is stable from run to run
   (several replicas then share that one CPU: compare replica counts without it).

Printed: both rates, their ratio (target >= 0.2x with one replica), how the rate of each
replica count compares with one replica's (more replicas must not be slower), and the number
of duplicate transitions in Nebula's events (the same (deployment, state) twice; must be 0).

**With** ``--latency`` every call to the simulated cluster's API takes that long
(``NEBULA_SIMULATED_LATENCY``, real time) and one replica runs the same deployments once per
``--workers`` count (``NEBULA_WORKERS``: how many of a tick's cluster calls run at once).
Printed: deployments per second for each, and each against the first (target: 8 workers
>= 5x one worker).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from sqlalchemy import text

from reconciler import bootstrap
from reconciler.admin import projects as project_rows
from reconciler.durations import parse_duration
from reconciler.engine import ticking
from reconciler.gitops import polling
from reconciler.settings import Settings
from tests.infra.postgres import PostgresServer
from tests.plugins.git import GitRepo

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughputpg import IMAGE, pgbench, seed_for_pgbench

TARGET = 0.2  # issue 13: >= 0.2x pgbench, one replica
PGBENCH_RUNS = 3  # the baseline is the fastest of these
TRANSITIONS_PER_DEPLOYMENT = 6
WORKERS_TARGET = 5.0  # deployments/s with 8 workers against 1, on a slow API


def nebula_toml(project: str, services: int) -> str:
    text = f'[project]\nname = "{project}"\n\n[environments.staging]\n'
    for n in range(services):
        text += f'''
[services.svc{n}]
image = "{IMAGE}"
[services.svc{n}.processes.web]
type = "http"
port = 8080
[services.svc{n}.variables]
N = "{n}"
'''
    return text


def settings_for(
    url: str, workdir: Path, replica: str = "", latency: str = "0s", workers: int = 8
) -> Settings:
    return Settings(
        database_url=url,
        cluster="simulated",
        simulated_delay=timedelta(0),
        simulated_latency=parse_duration(latency),
        state_dir=workdir,
        secret_key="",
        replica_id=replica,
        workers=workers,
    )


# -- seeding -----------------------------------------------------------------------------------


def seed(url: str, workdir: Path, projects: int, services: int) -> int:
    """Projects registered and polled: their first deploys wait in pending. Returns how many."""
    ctx = bootstrap.open_context(settings_for(url, workdir / "seed"))
    try:
        slugs = []
        with ctx.db.transaction() as session:
            for p in range(projects):
                slug = f"bench-{p}"
                repo = GitRepo(workdir / "repos" / slug, bare=True)
                repo.commit({"nebula.toml": nebula_toml(slug, services)}, "First version")
                project_rows.add(session, ctx.clock, slug, str(repo.path))
                slugs.append(slug)
        polling.poll(ctx, slugs)
        with ctx.db.transaction() as session:
            pending = session.execute(
                text("SELECT count(*) FROM deployments WHERE state = 'pending'")
            ).scalar_one()
            # The seed's own poll leaves nothing else for the workers to do.
            session.execute(text("UPDATE projects SET next_poll_at = now() + interval '1 day'"))
        with ctx.db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
        return int(pending)
    finally:
        ctx.db.dispose()
        if ctx.git is not None:
            ctx.git.close()


# -- Nebula's workers --------------------------------------------------------------------------


def worker(url: str, replica: str, workdir: str, go: str, latency: str, workers: str) -> int:
    """One replica's tick loop, from the moment ``go`` exists until nothing is left to do."""
    # The seed's state directory: every replica encrypts with the one key it made.
    settings = settings_for(url, Path(workdir) / "seed", replica, latency, int(workers))
    ctx = bootstrap.open_context(settings, git=False)
    bootstrap.settle()  # as ``nebula serve`` does once started
    try:
        print("ready", flush=True)
        while not os.path.exists(go):
            time.sleep(0.001)
        moved = 0
        while True:
            steps, busy = ticking.tick(ctx)
            moved += steps
            if not steps and not busy:
                break
            if not steps:
                time.sleep(0.005)  # another replica holds what is left
        print(f"moved {moved}", flush=True)
    finally:
        ctx.db.dispose()
    return 0


@dataclass
class Run:
    replicas: int
    deployments: int
    transitions: int
    seconds: float
    duplicates: int
    pgbench_tps: float = 0.0
    workers: int = 8

    @property
    def rate(self) -> float:
        return self.transitions / self.seconds

    @property
    def ratio(self) -> float:
        return self.rate / self.pgbench_tps if self.pgbench_tps else 0.0


def run_nebula(
    url: str, workdir: Path, replicas: int, deployments: int, latency: str = "0s", workers: int = 8
) -> Run:
    go = workdir / f"go-{replicas}-{workers}"
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--worker",
                url,
                f"bench-{replicas}-{n}",
                str(workdir),
                str(go),
                latency,
                str(workers),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(replicas)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"a worker did not start: {line!r}")
        started = time.perf_counter()
        go.touch()
        for process in processes:
            assert process.stdout is not None
            next((x for x in process.stdout if x.startswith("moved ")), None)  # (None: it failed)
        seconds = time.perf_counter() - started
        for process in processes:
            if process.wait() != 0:
                raise RuntimeError("a worker failed")
    finally:  # a failed run leaves no worker waiting for a "go" that never comes
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as conn:
        transitions = conn.execute(
            "SELECT count(*) FROM events WHERE kind = 'deployment' AND state <> 'pending'"
        ).fetchone()
        duplicates = conn.execute(
            "SELECT count(*) FROM (SELECT deployment_id, state FROM events"
            " WHERE kind = 'deployment' GROUP BY deployment_id, state HAVING count(*) > 1) AS d"
        ).fetchone()
        unfinished = conn.execute(
            "SELECT count(*) FROM deployments WHERE state <> 'healthy'"
        ).fetchone()
    assert transitions is not None and duplicates is not None and unfinished is not None
    if unfinished[0]:
        raise RuntimeError(f"{unfinished[0]} deployments did not go healthy")
    return Run(
        replicas, deployments, int(transitions[0]), seconds, int(duplicates[0]), workers=workers
    )


# -- running -----------------------------------------------------------------------------------


def measure(server: PostgresServer, workdir: Path, replicas: int, args: argparse.Namespace) -> Run:
    name = f"nebula_{replicas}"
    url = server.create_database(name)
    deployments = seed(url, workdir / name, args.projects, args.services)
    print(f"[{replicas} replica(s)] {deployments} deployments pending; ticking", flush=True)
    run = run_nebula(url, workdir / name, replicas, deployments)
    server.drop_database(name)

    bench = f"pgbench_{replicas}"
    url = server.create_database(bench)
    bootstrap.open_context(settings_for(url, workdir / bench), git=False).db.dispose()  # schema
    needed = run.transitions // TRANSITIONS_PER_DEPLOYMENT + 2 * replicas
    seed_for_pgbench(url.replace("postgresql+psycopg://", "postgresql://"), needed * PGBENCH_RUNS)
    runs = []
    for _ in range(PGBENCH_RUNS):
        runs.append(pgbench(server, bench, replicas, run.transitions, workdir))
    print(
        f"[{replicas} replica(s)] pgbench -c {replicas}, {run.transitions} transitions:"
        f" {', '.join(f'{tps:.0f}' for tps in runs)} tps (the fastest is the baseline)",
        flush=True,
    )
    run.pgbench_tps = max(runs)
    server.drop_database(bench)
    return run


def measure_workers(
    server: PostgresServer, workdir: Path, workers: int, args: argparse.Namespace
) -> Run:
    name = f"nebula_workers_{workers}"
    url = server.create_database(name)
    deployments = seed(url, workdir / name, args.projects, args.services)
    print(f"[{workers} worker(s), {args.latency} a call] {deployments} deployments", flush=True)
    run = run_nebula(url, workdir / name, 1, deployments, args.latency, workers)
    server.drop_database(name)
    return run


def report_workers(runs: list[Run], latency: str) -> list[str]:
    print()
    print(f"One replica, every simulated API call taking {latency} ({os.cpu_count()} CPUs)")
    print(
        f"  {'workers':>7} {'deploys':>8} {'seconds':>8} {'deploys/s':>10} {'vs first':>9}"
        f" {'duplicates':>10}"
    )
    first = runs[0].deployments / runs[0].seconds
    misses = []
    for r in runs:
        rate = r.deployments / r.seconds
        print(
            f"  {r.workers:>7} {r.deployments:>8} {r.seconds:>8.2f} {rate:>10.1f}"
            f" {rate / first:>8.2f}x {r.duplicates:>10}"
        )
        if r.duplicates or (r.workers >= 8 and rate / first < WORKERS_TARGET):
            misses.append(f"{r.workers} workers: {rate / first:.2f}x (target >= {WORKERS_TARGET}x)")
    return misses


def report(runs: list[Run]) -> None:
    print()
    cpus = len(os.sched_getaffinity(0))
    print(
        f"Deployment state transitions per second on PostgreSQL ({cpus} of {os.cpu_count()} CPUs)"
    )
    print(
        f"  {'replicas':>8} {'deploys':>8} {'transitions':>11} {'seconds':>8} {'nebula/s':>9}"
        f" {'pgbench/s':>10} {'ratio':>6} {'target':>7} {'duplicates':>10}"
    )
    for r in runs:
        target = f">={TARGET}x" if r.replicas == 1 else "-"
        print(
            f"  {r.replicas:>8} {r.deployments:>8} {r.transitions:>11} {r.seconds:>8.2f}"
            f" {r.rate:>9.0f} {r.pgbench_tps:>10.0f} {r.ratio:>5.2f}x {target:>7}"
            f" {r.duplicates:>10}"
        )
    for r in runs[1:]:
        print(
            f"  {r.replicas} replicas: {r.rate / runs[0].rate:.2f}x the rate of {runs[0].replicas}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--services", type=int, default=25)
    parser.add_argument("--replicas", default="1,2,4")
    parser.add_argument("--latency", help="each simulated API call's latency, e.g. 20ms")
    parser.add_argument("--workers", default="1,8", help="NEBULA_WORKERS counts (with --latency)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--same-core", action="store_true", help="run the server, pgbench and Nebula on CPU 0"
    )
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(*args.worker)
    counts = [int(n) for n in (args.workers if args.latency else args.replicas).split(",")]
    runs = []
    with tempfile.TemporaryDirectory(prefix="nebula-bench-throughput-") as tmp:
        server = PostgresServer()
        try:
            server.start()
            if args.same_core:  # what this process starts (pgbench, workers) inherits it
                postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
                os.sched_setaffinity(postmaster, {0})
                os.sched_setaffinity(0, {0})
            for count in counts:
                if args.latency:
                    runs.append(measure_workers(server, Path(tmp), count, args))
                else:
                    runs.append(measure(server, Path(tmp), count, args))
        finally:
            server.close()
    if args.latency:
        missed = report_workers(runs, args.latency)
        for miss in missed:
            print(f"  missed with {miss}")
        return 1 if missed and args.strict else 0
    report(runs)
    misses = misses_of(runs, compare_replicas=not args.same_core)
    for miss in misses:
        print(f"  missed: {miss}")
    return 1 if misses and args.strict else 0


def misses_of(runs: list[Run], *, compare_replicas: bool) -> list[str]:
    """The issue's targets: one replica at >= TARGET of pgbench; more replicas no slower than
    one (unless they share one CPU); no duplicate transitions anywhere."""
    misses = []
    one = next((r for r in runs if r.replicas == 1), None)
    if one is not None and one.ratio < TARGET:
        misses.append(
            f"1 replica at {one.ratio:.2f}x pgbench ({one.ratio / TARGET:.0%} of {TARGET}x)"
        )
    for r in runs:
        if compare_replicas and one is not None and r.replicas > 1 and r.rate < one.rate:
            misses.append(f"{r.replicas} replicas at {r.rate / one.rate:.2f}x the rate of 1")
        if r.duplicates:
            misses.append(f"{r.duplicates} duplicate transitions with {r.replicas} replica(s)")
    return misses


if __name__ == "__main__":
    raise SystemExit(main())
