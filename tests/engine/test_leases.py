"""Leases: a deployment claimed by another live reconciler is left alone; once that lease
has expired (its owner died) it is taken over. The crash test does this across processes."""

from __future__ import annotations

from reconciler.engine import ticking
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
