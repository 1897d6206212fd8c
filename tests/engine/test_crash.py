"""Durability: a real reconciler process killed with SIGKILL at every stage, before and after
its cluster call, then a new process finishes every deployment, with no duplicate release, no
lost or duplicated event, and no stage run twice to a different effect.

One chain of processes walks api's second release through its stages: each process is
killed at the next point (so each one also resumes from the stage marker the previous killed
process left), and a last one finishes. The kill is deterministic: ``tests.engine.crashing``
runs the ``nebula`` command with a hook that sends the process SIGKILL at the named call.
Each process's clock runs one lease period (+1 s) ahead of the last, so the lease a killed
process held has expired and is taken over.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from reconciler.core.states import DeploymentState
from reconciler.engine.ticking import LEASE
from reconciler.store import schema
from reconciler.store.database import Database
from tests.engine.projects import stack
from tests.plugins.git import GitRepo
from tests.timelines import WITH_RELEASE, WITHOUT_RELEASE

ROOT = Path(__file__).resolve().parents[2]
KILL_POINTS = [
    (method, when)
    for method in ("admit", "start_release_job", "start", "probe", "activate", "drain")
    for when in ("before", "after")
]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'nebula.db'}"
    else:
        yield request.getfixturevalue("fresh_postgres_url")


class Reconcilers:
    """Runs ``nebula`` processes against one store; each runs a lease period after the last."""

    def __init__(self, database_url: str, state_dir: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("NEBULA_")}
        self.env.update(
            NEBULA_DATABASE_URL=database_url,
            NEBULA_STATE_DIR=str(state_dir),
            NEBULA_SIMULATED_DELAY="0s",
            PYTHONPATH=str(ROOT),
        )
        self.offset = 0.0

    def run(self, *args: str, kill_at: str | None = None) -> subprocess.CompletedProcess[str]:
        self.offset += LEASE.total_seconds() + 1
        env = dict(self.env, TEST_CLOCK_OFFSET=str(self.offset))
        if kill_at:
            env["TEST_KILL_AT"] = kill_at
        return subprocess.run(
            [sys.executable, "-m", "tests.engine.crashing", *args],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,
        )


@pytest.mark.slow
def test_killed_at_every_stage_a_new_process_finishes_everything_once(
    database_url: str, tmp_path: Path, git_repo: GitRepo
) -> None:
    nebula = Reconcilers(database_url, tmp_path / "state")
    git_repo.commit({"nebula.toml": stack(api_release_command=True)})
    assert nebula.run("project", "add", "shop", "--repo", git_repo.url).returncode == 0
    first = nebula.run("reconcile", "--until-idle")
    assert first.returncode == 0, first.stderr
    git_repo.commit(
        {
            "nebula.toml": stack(
                db_version="16.4", api_level="debug", worker_level="debug", api_release_command=True
            )
        }
    )
    for method, when in KILL_POINTS:
        killed = nebula.run("reconcile", "--until-idle", kill_at=f"api:{method}:{when}")
        assert killed.returncode == -signal.SIGKILL, (
            f"not killed at {method}:{when}: {killed.stderr}"
        )
    last = nebula.run("reconcile", "--until-idle")
    assert last.returncode == 0, last.stderr

    db = Database(database_url)
    try:
        with db.transaction() as session:
            deployments = session.scalars(
                select(schema.Deployment).order_by(schema.Deployment.id)
            ).all()
            assert [(d.unit.name, d.release.name, d.state) for d in deployments] == [
                (unit, release, "healthy")
                for release in ("r-1", "r-2")
                for unit in ("db", "api", "worker")
            ]
            assert all(d.stage_marker is None and d.lease_owner is None for d in deployments)
            # No duplicate release: two per unit, numbered 1 and 2.
            numbers = Counter(
                (r.unit.name, r.number) for r in session.scalars(select(schema.Release))
            )
            assert numbers == {(u, n): 1 for u in ("db", "api", "worker") for n in (1, 2)}
            # No lost or duplicated event: each deployment's states once each, in order.
            events = session.scalars(
                select(schema.Event)
                .where(schema.Event.kind == "deployment")
                .order_by(schema.Event.id)
            ).all()
            pairs = Counter((e.deployment_id, e.state) for e in events)
            assert max(pairs.values()) == 1
            for d in deployments:
                expected = WITH_RELEASE if d.unit.name == "api" else WITHOUT_RELEASE
                assert [e.state for e in events if e.deployment_id == d.id] == expected, d.unit.name
            assert {d.state for d in deployments} == {DeploymentState.HEALTHY.value}
            log = [
                str(row.body["entry"])
                for row in session.scalars(
                    select(schema.ClusterObject)
                    .where(schema.ClusterObject.kind == "simulation.nebula.dev/log")
                    .order_by(schema.ClusterObject.name)
                )
            ]
    finally:
        db.dispose()

    # No stage ran twice to a different effect: each unit's cluster history is exactly what
    # one uninterrupted run does (a replayed call changed nothing, so it logged nothing).
    def of(unit: str) -> list[str]:
        return [line for line in log if f"/{unit} " in line]

    assert of("api") == [
        "release-job shop-staging/api r-1",
        "start shop-staging/api r-1",
        "activate shop-staging/api r-1",
        "release-job shop-staging/api r-2",
        "start shop-staging/api r-2",
        "activate shop-staging/api r-2",
        "drain shop-staging/api r-1",
    ]
    assert of("worker") == [
        "start shop-staging/worker r-1",
        "start shop-staging/worker r-2",
        "drain shop-staging/worker r-1",
    ]
    assert of("db") == ["start shop-staging/db r-1"]  # a database is updated in place
    assert len(log) == len(set(log))
