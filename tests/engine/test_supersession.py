"""A newer deployment of the same service replaces the one in flight (behaviour.md,
"Supersession"): before traffic moves it ends it, once traffic is moving it waits."""

from __future__ import annotations

import pytest

from tests.engine import driving
from tests.engine.projects import app
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

BEFORE_TRAFFIC = ["pending", "admitted", "releasing", "starting", "qualifying"]
TAKING_TRAFFIC = ["activating", "draining"]


def second_release_in_flight(nebula: Nebula, git_repo: GitRepo, state: str) -> str:
    """r-1 healthy, r-2 held in ``state``; returns r-2's deployment id."""
    driving.deploy_first(nebula, git_repo, app(release_command=True))
    driving.push(nebula, git_repo, app(level="debug", release_command=True), "More logs")
    deployment = str(driving.latest(nebula, "api")["id"])
    driving.hold_at(nebula, deployment, state)
    return deployment


@pytest.mark.parametrize("state", BEFORE_TRAFFIC)
def test_a_redeploy_supersedes_one_that_has_not_taken_traffic(
    nebula_any_db: Nebula, git_repo: GitRepo, state: str
) -> None:
    nebula = nebula_any_db
    old = second_release_in_flight(nebula, git_repo, state)
    response = nebula.json("redeploy shop api --env staging")
    assert response["ended"] == [
        {"id": old, "service": "api", "release": "r-2", "state": "superseded"}
    ]
    assert (response["deployment"]["release"], response["deployment"]["state"]) == (
        "r-3",
        "pending",
    )
    ended = driving.show(nebula, old)
    assert (ended["state"], ended["blocker"], ended["message"]) == (
        "superseded",
        None,
        "Superseded by r-3",
    )
    assert ended["events"][-1] == {
        "at": ended["finished_at"],
        "state": "superseded",
        "message": "Superseded by r-3",
        "actor": "local-admin",
        "kind": "deployment",
    }
    # What served keeps serving until the new one is healthy.
    assert nebula.unit("staging", "api")["active_release"] == "r-1"
    assert driving.cluster(nebula).selected_release("shop-staging", "api") == "r-1"
    nebula.settle()
    assert driving.latest(nebula, "api")["state"] == "healthy"
    assert nebula.unit("staging", "api")["active_release"] == "r-3"
    assert driving.states(nebula, old) == [
        *BEFORE_TRAFFIC[: BEFORE_TRAFFIC.index(state) + 1],
        "superseded",
    ]
    # Its pods are removed.
    names = {o["metadata"]["name"] for o in driving.cluster(nebula).objects("shop-staging")}
    assert not {n for n in names if n.startswith("api-r2")}
    removed = "remove shop-staging/api r-2" in driving.cluster(nebula).log()
    # Entering a stage does not call the cluster yet: releasing starts its Job on the next tick.
    assert removed is (state in ("starting", "qualifying"))
    assert not [
        line
        for line in driving.cluster(nebula).log()
        if line.startswith("activate") and "r-2" in line
    ]


def test_a_push_supersedes_too(nebula: Nebula, git_repo: GitRepo) -> None:
    old = second_release_in_flight(nebula, git_repo, "qualifying")
    driving.push(nebula, git_repo, app(level="warn", release_command=True), "Quieter")
    ended = driving.show(nebula, old)
    assert (ended["state"], ended["message"]) == ("superseded", "Superseded by r-3")
    assert ended["events"][-1]["actor"] == "shop"
    nebula.settle()
    assert nebula.unit("staging", "api")["active_release"] == "r-3"


@pytest.mark.parametrize("state", TAKING_TRAFFIC)
def test_one_taking_over_traffic_finishes_and_the_new_one_waits(
    nebula_any_db: Nebula, git_repo: GitRepo, state: str
) -> None:
    nebula = nebula_any_db
    old = second_release_in_flight(nebula, git_repo, state)
    response = nebula.json("redeploy shop api --env staging")
    assert response["ended"] == []
    new = response["deployment"]
    waiting = "Waiting for r-2 to finish taking over traffic"
    assert (new["release"], new["state"], new["message"]) == ("r-3", "pending", waiting)
    assert nebula.unit("staging", "api")["deployment"] == {
        "id": new["id"],
        "release": "r-3",
        "kind": "deploy",
        "state": "pending",
        "blocker": None,
        "message": waiting,
        "approval_id": None,  # nothing waits for a person
    }
    nebula.settle()
    first, second = driving.show(nebula, old), driving.show(nebula, new["id"])
    assert (first["state"], second["state"]) == ("healthy", "healthy")
    # r-2 finished taking over before r-3 was admitted.
    finished = first["events"][-1]["at"]
    admitted = next(e["at"] for e in second["events"] if e["state"] == "admitted")
    assert finished <= admitted
    assert [e["message"] for e in second["events"] if e["kind"] == "deployment.note"] == [waiting]
    assert nebula.unit("staging", "api")["active_release"] == "r-3"
    assert [
        line for line in driving.cluster(nebula).log() if line.startswith(("activate", "drain"))
    ][-4:] == [
        "activate shop-staging/api r-2",
        "drain shop-staging/api r-1",
        "activate shop-staging/api r-3",
        "drain shop-staging/api r-2",
    ]


@pytest.mark.parametrize("state", BEFORE_TRAFFIC)
def test_cancel_before_traffic(nebula: Nebula, git_repo: GitRepo, state: str) -> None:
    old = second_release_in_flight(nebula, git_repo, state)
    nebula.ok("member add ada --role admin")
    cancelled = nebula.json(f"cancel {old} --as ada")["deployment"]
    assert (cancelled["state"], cancelled["message"]) == ("cancelled", "Cancelled by ada")
    nebula.settle()
    assert nebula.unit("staging", "api")["active_release"] == "r-1"
    assert driving.cluster(nebula).selected_release("shop-staging", "api") == "r-1"


@pytest.mark.parametrize("state", TAKING_TRAFFIC)
def test_cancel_is_refused_while_taking_over_traffic(
    nebula: Nebula, git_repo: GitRepo, state: str
) -> None:
    old = second_release_in_flight(nebula, git_repo, state)
    refused = nebula.cli(f"cancel {old}")
    assert (refused.code, refused.err) == (
        1,
        f"error: Deployment {old} is {state}: it is taking over traffic and cannot be cancelled "
        "now. Roll back once it is healthy.\n",
    )
    nebula.settle()
    assert driving.show(nebula, old)["state"] == "healthy"
    again = nebula.cli(f"cancel {old}")
    assert (again.code, again.err) == (1, f"error: Deployment {old} has already ended (healthy)\n")


def test_a_deployment_awaiting_approval_stops_nothing_until_approved(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    driving.approved_in_production(nebula, git_repo, ("info", "debug", "warn"), settle_last=False)
    in_flight = driving.latest(nebula, "api", "production")["id"]
    driving.hold_at(nebula, in_flight, "starting")
    rollback = nebula.json("rollback shop api --env production --as bo")
    assert (rollback["deployment"]["state"], rollback["ended"]) == ("awaiting-approval", [])
    driving.hold_at(nebula, in_flight, "qualifying")  # it carries on meanwhile
    approved = nebula.json(f"approve {rollback['approval']['id']} --as ada")
    assert approved["ended"] == [
        {"id": in_flight, "service": "api", "release": "r-3", "state": "superseded"}
    ]
    assert (
        driving.show(nebula, in_flight)["message"] == "Superseded by r-1"
    )  # the rollback's release
    nebula.settle()
    assert nebula.unit("production", "api")["active_release"] == "r-1"
