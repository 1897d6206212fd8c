"""Dependencies (behaviour.md, "Dependencies"): a dependent waits for a dependency in flight
that started first, and fails without reaching the cluster when the dependency ends badly;
services that do not depend on it carry on."""

from __future__ import annotations

from tests.engine.driving import cluster, deploy_first, latest, push, show, states, tick
from tests.engine.projects import BROKEN_DB_VERSION, stack
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

HAPPY = ["pending", "admitted", "starting", "qualifying", "activating", "draining", "healthy"]


def api_lines(nebula: Nebula) -> list[str]:
    return [line for line in cluster(nebula).log() if "/api r-2" in line]


def test_a_dependent_waits_for_its_dependency_then_deploys(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    deploy_first(nebula, git_repo, stack())
    push(nebula, git_repo, stack(db_version="16.4", api_level="debug", worker_level="debug"))
    assert [(d["service"], d["release"], d["state"]) for d in nebula.deployments()[3:]] == [
        ("db", "r-2", "pending"),
        ("api", "r-2", "pending"),
        ("worker", "r-2", "pending"),
    ]
    tick(nebula)
    api = latest(nebula, "api")
    assert (api["state"], api["blocker"], api["message"]) == (
        "pending",
        "waiting",
        "Waiting for db to finish deploying (r-2)",
    )
    assert (
        nebula.unit("staging", "api")["deployment"]["message"]
        == "Waiting for db to finish deploying (r-2)"
    )
    # The worker does not depend on db: it does not wait.
    assert latest(nebula, "worker")["state"] == "admitted"
    for _ in range(4):
        tick(nebula)
        assert latest(nebula, "api")["state"] == "pending"
    assert api_lines(nebula) == []  # nothing reached the cluster for api
    nebula.settle()
    assert {d["state"] for d in nebula.deployments()} == {"healthy"}
    db, api_shown = show(nebula, latest(nebula, "db")["id"]), show(nebula, api["id"])
    assert states(nebula, api["id"]) == HAPPY
    blockers = [e["message"] for e in api_shown["events"] if e["kind"] == "deployment.blocker"]
    assert blockers == ["Waiting for db to finish deploying (r-2)"]
    admitted = next(e["at"] for e in api_shown["events"] if e["state"] == "admitted")
    assert db["finished_at"] <= admitted
    assert (api_shown["blocker"], api_shown["message"]) == (None, None)


def test_when_the_dependency_fails_the_dependent_fails_and_others_carry_on(
    faulty: Nebula, git_repo: GitRepo
) -> None:
    nebula = faulty
    deploy_first(nebula, git_repo, stack())
    push(
        nebula,
        git_repo,
        stack(db_version=BROKEN_DB_VERSION, api_level="debug", worker_level="debug"),
    )
    nebula.settle()
    db, api, worker = (show(nebula, latest(nebula, s)["id"]) for s in ("db", "api", "worker"))
    assert (db["release"], db["state"], db["blocker"], db["message"]) == (
        "r-2",
        "failed",
        "image-pull",
        f'Back-off pulling image "postgres:{BROKEN_DB_VERSION}": ErrImagePull. r-1 keeps serving.',
    )
    message = (
        "Not deployed: db failed to deploy (r-2). api keeps running r-1. "
        "Deploy api again once db is healthy."
    )
    assert (api["release"], api["state"], api["blocker"], api["message"]) == (
        "r-2",
        "failed",
        "waiting",
        message,
    )
    assert states(nebula, api["id"]) == ["pending", "failed"]
    assert api_lines(nebula) == []
    assert (worker["release"], worker["state"]) == ("r-2", "healthy")
    services = {u["name"]: u for u in nebula.status()["environments"][0]["services"]}
    assert {n: u["active_release"] for n, u in services.items()} == {
        "api": "r-1",
        "worker": "r-2",
        "db": "r-1",
    }
    assert services["api"]["deployment"]["message"] == message
    assert cluster(nebula).selected_release("shop-staging", "api") == "r-1"


def test_a_cancelled_dependency_fails_the_dependent_too(nebula: Nebula, git_repo: GitRepo) -> None:
    deploy_first(nebula, git_repo, stack())
    push(nebula, git_repo, stack(db_version="16.4", api_level="debug"))
    tick(nebula)
    assert latest(nebula, "api")["blocker"] == "waiting"
    nebula.ok(f"cancel {latest(nebula, 'db')['id']}")
    nebula.settle()
    api = latest(nebula, "api")
    assert (api["state"], api["message"]) == (
        "failed",
        "Not deployed: db failed to deploy (r-2). api keeps running r-1. "
        "Deploy api again once db is healthy.",
    )
    # Deploying api again once db is fine works.
    nebula.ok("redeploy shop api --env staging")
    nebula.settle()
    assert nebula.unit("staging", "api")["active_release"] == "r-3"


def test_a_first_deploy_held_behind_a_failed_database(faulty: Nebula, git_repo: GitRepo) -> None:
    nebula = faulty
    git_repo.commit({"nebula.toml": stack(db_version=BROKEN_DB_VERSION)})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    assert latest(nebula, "api")["message"] == (
        "Not deployed: db failed to deploy (r-1). Deploy api again once db is healthy."
    )
    assert latest(nebula, "worker")["state"] == "healthy"
    assert nebula.unit("staging", "api")["active_release"] is None
