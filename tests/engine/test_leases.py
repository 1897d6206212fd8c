"""Leases: a deployment claimed by another live reconciler is left alone; once that lease
has expired (its owner died) it is taken over. The crash test does this across processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial

import pytest

from reconciler.engine import batching, ticking
from reconciler.runtimes.cluster import ReleaseObjects
from reconciler.runtimes.simulated import SimulatedCluster
from reconciler.store import schema
from tests.engine.driving import deploy_first, hold_at, latest, push, state_of, tick
from tests.engine.projects import app
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula


def test_a_lease_is_respected_until_it_expires(nebula: Nebula, git_repo: GitRepo) -> None:
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(level="debug"))
    deployment = latest(nebula, "api")["id"]
    hold_at(nebula, deployment, "starting")
    assert ticking.claim(nebula.ctx, int(deployment), "other-replica:4242")
    for _ in range(3):
        tick(nebula)
    assert state_of(nebula, deployment) == "starting"
    assert nebula.reconcile().busy  # still work to do, just not ours yet
    nebula.clock.advance(ticking.LEASE.total_seconds() + 1)
    tick(nebula)
    assert state_of(nebula, deployment) == "qualifying"
    nebula.settle()
    assert nebula.unit("staging", "api")["active_release"] == "r-2"


def test_a_lease_is_released_after_each_step(nebula: Nebula, git_repo: GitRepo) -> None:
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(level="debug"))
    deployment = latest(nebula, "api")["id"]
    tick(nebula)
    assert ticking.claim(nebula.ctx, int(deployment), "other-replica:4242")


def test_a_lease_is_kept_while_a_call_outlasts_it(
    nebula: Nebula, git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow API: the call of a step takes two minutes, twice the lease. The replica making
    it renews its lease meanwhile, so no other replica takes the deployment over and calls
    the API for it a second time."""
    monkeypatch.setattr(batching, "RENEW", timedelta(milliseconds=10))
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(level="debug"))
    deployment = latest(nebula, "api")["id"]
    hold_at(nebula, deployment, "starting")
    cluster = nebula.ctx.clusters.simulated()
    taken_meanwhile: list[bool] = []

    def slow_start(objects: ReleaseObjects) -> None:
        for _ in range(4):
            before = _expiry(nebula, deployment)
            nebula.clock.advance(30)
            _wait_for(partial(_renewed_since, nebula, deployment, before))
            taken_meanwhile.append(ticking.claim(nebula.ctx, int(deployment), "other:4242"))
        SimulatedCluster.start(cluster, objects)

    monkeypatch.setattr(cluster, "start", slow_start)
    assert ticking.step(nebula.ctx, int(deployment), "slow:1")

    assert taken_meanwhile == [False] * 4
    assert state_of(nebula, deployment) == "qualifying"
    assert _expiry(nebula, deployment) is None, "released once the step was recorded"
    assert cluster.log().count(f"start shop-staging/api {latest(nebula, 'api')['release']}") == 1


def _expiry(nebula: Nebula, deployment: str) -> datetime | None:
    with nebula.ctx.db.transaction() as session:
        row = session.get(schema.Deployment, int(deployment))
        assert row is not None
        return row.lease_expires_at


def _renewed_since(nebula: Nebula, deployment: str, before: datetime | None) -> bool:
    after = _expiry(nebula, deployment)
    return before is not None and after is not None and after > before


def _wait_for(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the lease was not renewed"
        time.sleep(0.005)
