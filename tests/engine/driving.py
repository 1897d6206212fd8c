"""Driving the engine from a test: push a commit, tick, hold a deployment in a state, read
what a user sees (``nebula deployment show --json``, ``nebula status --json``)."""

from __future__ import annotations

from typing import Any

from reconciler import reconciling
from reconciler.gitops import polling
from reconciler.runtimes.simulated import SimulatedCluster
from reconciler.store import schema
from tests.engine.projects import app
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula
from tests.timelines import ON_THE_WAY


def register(nebula: Nebula, git_repo: GitRepo, text: str, slug: str = "shop") -> None:
    git_repo.commit({"nebula.toml": text}, "First version")
    nebula.ok(f"project add {slug} --repo {git_repo.url}")


def deploy_first(nebula: Nebula, git_repo: GitRepo, text: str) -> None:
    """Register the project and let its first deploys go healthy."""
    register(nebula, git_repo, text)
    nebula.settle()
    assert {d["state"] for d in nebula.deployments()} == {"healthy"}


def push(nebula: Nebula, git_repo: GitRepo, text: str, message: str = "Change") -> None:
    """A push, polled (change sets staged and applied) without advancing any deployment."""
    git_repo.commit({"nebula.toml": text}, message)
    polling.poll(nebula.ctx)


def approved_in_production(
    nebula: Nebula, git_repo: GitRepo, levels: tuple[str, ...], *, settle_last: bool = True
) -> None:
    """Admins ada and bo, and a protected production with one release of ``app`` per level,
    each approved by ada and settled (the last one left where the approval put it unless
    ``settle_last``)."""
    nebula.ok("member add ada --role admin")
    nebula.ok("member add bo --role admin")
    git_repo.commit({"nebula.toml": app(protected=True, level=levels[0])})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    for level in levels:
        if level != levels[0]:
            push(nebula, git_repo, app(protected=True, level=level))
        nebula.reconcile()
        pending = [a for a in nebula.approvals() if a["state"] == "pending"]
        nebula.ok(f"approve {pending[0]['id']} --as ada")
        if settle_last or level != levels[-1]:
            nebula.settle()


def tick(nebula: Nebula, times: int = 1) -> None:
    """Reconcile passes without polling and without moving the clock."""
    for _ in range(times):
        reconciling.run_once(nebula.ctx, poll=False)


def show(nebula: Nebula, deployment_id: str) -> dict[str, Any]:
    return nebula.json(f"deployment show {deployment_id}")["deployment"]  # type: ignore[no-any-return]


def latest(nebula: Nebula, service: str, env: str = "staging") -> dict[str, Any]:
    found = [d for d in nebula.deployments() if d["service"] == service and d["environment"] == env]
    assert found, f"no deployment of {service} in {env}"
    return found[-1]


def states(nebula: Nebula, deployment_id: str) -> list[str]:
    """The deployment's state changes, in order, as its events show them."""
    return [e["state"] for e in show(nebula, deployment_id)["events"] if e["kind"] == "deployment"]


def state_of(nebula: Nebula, deployment_id: str) -> str:
    """Read straight from the store: cheaper than the CLI when only ticking towards a state."""
    with nebula.ctx.db.transaction() as session:
        row = session.get(schema.Deployment, int(deployment_id))
        assert row is not None
        return row.state


def hold_at(nebula: Nebula, deployment_id: str, state: str, limit: int = 12) -> None:
    """Tick until the deployment is in ``state``; fails if it goes past it."""
    order = list(ON_THE_WAY)
    for _ in range(limit):
        now = state_of(nebula, deployment_id)
        if now == state:
            return
        assert now in order and order.index(now) < order.index(state), (
            f"deployment {deployment_id} is {now}: it cannot reach {state}"
        )
        tick(nebula)
    raise AssertionError(f"deployment {deployment_id} did not reach {state}")


def cluster(nebula: Nebula) -> SimulatedCluster:
    simulated: SimulatedCluster = nebula.ctx.clusters.simulated()
    return simulated
