"""Every stage's success and each blocker, as a user sees them: ``nebula deployment show
--json`` (state, blocker, message, events in order), ``nebula status --json`` (what keeps
serving) and the simulated cluster (which release the stable Service selects)."""

from __future__ import annotations

import io
from datetime import datetime

import pytest

from reconciler.core.states import Blocker
from tests.engine import projects
from tests.engine.conftest import READINESS_TIMEOUT
from tests.engine.driving import (
    cluster,
    deploy_first,
    hold_at,
    latest,
    push,
    register,
    show,
    states,
    tick,
)
from tests.engine.projects import API, app, broken
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula
from tests.timelines import WITH_RELEASE, WITHOUT_RELEASE

NS = "shop-staging"


@pytest.mark.parametrize(
    ("release_command", "timeline"),
    [(False, WITHOUT_RELEASE), (True, WITH_RELEASE)],
    ids=["plain", "release-command"],
)
def test_first_deploy_walks_every_stage(
    nebula_any_db: Nebula, git_repo: GitRepo, release_command: bool, timeline: list[str]
) -> None:
    nebula = nebula_any_db
    register(nebula, git_repo, app(release_command=release_command))
    nebula.settle()
    shown = show(nebula, latest(nebula, "api")["id"])
    assert (shown["state"], shown["blocker"], shown["message"], shown["release"]) == (
        "healthy",
        None,
        None,
        "r-1",
    )
    assert [e["state"] for e in shown["events"]] == timeline
    assert shown["events"][0] == {
        "at": "2026-01-05T12:00:00Z",
        "state": "pending",
        "message": "deploy of api r-1 requested",
        "actor": "shop",
        "kind": "deployment",
    }
    assert shown["finished_at"] is not None
    unit = nebula.unit("staging", "api")
    assert (unit["active_release"], unit["image"], unit["deployment"]) == ("r-1", API, None)
    job = ["release-job shop-staging/api r-1"] if release_command else []
    assert cluster(nebula).log() == [
        *job,
        "start shop-staging/api r-1",
        "activate shop-staging/api r-1",
    ]
    assert cluster(nebula).selected_release(NS, "api") == "r-1"


def test_a_second_release_takes_over_and_drains_the_first(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    deploy_first(nebula, git_repo, app(release_command=True))
    push(nebula, git_repo, app(level="debug", release_command=True), "More logs")
    nebula.settle()
    second = show(nebula, latest(nebula, "api")["id"])
    assert (second["release"], second["state"], second["previous_release"]) == (
        "r-2",
        "healthy",
        "r-1",
    )
    assert [e["state"] for e in second["events"]] == WITH_RELEASE
    assert cluster(nebula).log()[3:] == [
        "release-job shop-staging/api r-2",
        "start shop-staging/api r-2",
        "activate shop-staging/api r-2",
        "drain shop-staging/api r-1",
    ]
    assert cluster(nebula).selected_release(NS, "api") == "r-2"
    names = {o["metadata"]["name"] for o in cluster(nebula).objects(NS)}
    assert "api-r1" not in names and "api-r2" in names
    assert nebula.unit("staging", "api")["active_release"] == "r-2"


def test_a_database_and_services_of_every_kind_go_healthy(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    register(nebula, git_repo, projects.stack())
    nebula.settle()
    for service in ("db", "api", "worker"):
        assert states(nebula, latest(nebula, service)["id"]) == WITHOUT_RELEASE, service
    assert [
        (u["name"], u["kind"], u["active_release"])
        for u in nebula.status()["environments"][0]["services"]
    ] == [
        ("api", "service", "r-1"),
        ("worker", "service", "r-1"),
        ("db", "database", "r-1"),
    ]


# -- blockers ------------------------------------------------------------------------------

FAILURES = {
    Blocker.IMAGE_PULL: (
        ["pending", "admitted", "releasing", "starting", "failed"],
        f'Back-off pulling image "{broken(Blocker.IMAGE_PULL)}": ErrImagePull. r-1 keeps serving.',
    ),
    Blocker.CAPACITY: (
        ["pending", "admitted", "releasing", "starting", "failed"],
        "0/3 nodes are available: 3 Insufficient cpu (1 replicas unschedulable). r-1 keeps serving.",
    ),
    Blocker.READINESS: (
        ["pending", "admitted", "releasing", "starting", "qualifying", "failed"],
        "Not ready within 30s: 0/1 replicas ready; Back-off restarting failed container: "
        "CrashLoopBackOff. r-1 keeps serving.",
    ),
    Blocker.RELEASE_COMMAND: (
        ["pending", "admitted", "releasing", "failed"],
        "Release command failed: the release command exited with status 1. "
        "Last output: migration failed. r-1 keeps serving.",
    ),
    Blocker.ROUTE_ACTIVATION: (
        ["pending", "admitted", "releasing", "starting", "qualifying", "activating", "failed"],
        "The API kept refusing to repoint api for 20s (the API refused to patch Service api: "
        "409 Conflict). r-1 keeps serving.",
    ),
}


@pytest.mark.parametrize("blocker", list(FAILURES), ids=str)
def test_each_blocker_fails_the_deployment_and_the_previous_release_keeps_serving(
    faulty: Nebula, git_repo: GitRepo, blocker: Blocker
) -> None:
    nebula = faulty
    deploy_first(nebula, git_repo, app(release_command=True))
    push(nebula, git_repo, app(api_image=broken(blocker), release_command=True), "Bad image")
    nebula.settle()
    timeline, message = FAILURES[blocker]
    failed = show(nebula, latest(nebula, "api")["id"])
    assert (failed["release"], failed["state"], failed["blocker"], failed["message"]) == (
        "r-2",
        "failed",
        blocker.value,
        message,
    )
    assert states(nebula, failed["id"]) == timeline
    assert failed["events"][-1]["message"] == message
    # What keeps serving: r-1, in the status and on the cluster.
    unit = nebula.unit("staging", "api")
    assert (unit["active_release"], unit["image"]) == ("r-1", API)
    assert unit["deployment"] == {
        "id": failed["id"],
        "release": "r-2",
        "kind": "deploy",
        "state": "failed",
        "blocker": blocker.value,
        "message": message,
        "approval_id": None,  # nothing waits for a person
    }
    assert cluster(nebula).selected_release(NS, "api") == "r-1"
    assert not [
        line for line in cluster(nebula).log() if line.startswith("activate") and "r-2" in line
    ]
    # The failed release's pods are removed; r-1's are untouched.
    names = {o["metadata"]["name"] for o in cluster(nebula).objects(NS)}
    assert "api-r1" in names and "api-r2" not in names
    assert cluster(nebula).log()[-1] == "remove shop-staging/api r-2"


def test_the_status_says_the_failure_until_the_next_deploy_succeeds(
    faulty: Nebula, git_repo: GitRepo
) -> None:
    nebula = faulty
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(api_image=broken(Blocker.IMAGE_PULL)))
    nebula.settle()
    assert nebula.unit("staging", "api")["deployment"]["state"] == "failed"
    push(nebula, git_repo, app(level="debug"), "Fix the image")
    nebula.settle()
    unit = nebula.unit("staging", "api")
    assert (unit["active_release"], unit["deployment"]) == ("r-3", None)


def test_a_slow_stage_is_marked_stalled_once_then_fails(faulty: Nebula, git_repo: GitRepo) -> None:
    nebula = faulty
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(api_image=broken(Blocker.READINESS)))
    nebula.settle()
    events = show(nebula, latest(nebula, "api")["id"])["events"]
    stalled = [e for e in events if e["kind"] == "deployment.blocker"]
    # One event when it stalls, not one per tick.
    assert [e["message"] for e in stalled] == [
        "Taking longer than 15s: 0/1 replicas ready; Back-off restarting failed container: CrashLoopBackOff"
    ]


# -- configuration: a secret that is not set -----------------------------------------------


def set_secret(nebula: Nebula, monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(value + "\n"))
    nebula.ok(f"secret set shop staging {name}")


def test_a_missing_secret_holds_the_deployment_until_it_is_set(
    nebula_any_db: Nebula, git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    nebula = nebula_any_db
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(secret="STRIPE_KEY"), "Take payments")
    for _ in range(5):
        tick(nebula)
        nebula.clock.advance(1)
    held = show(nebula, latest(nebula, "api")["id"])
    assert (held["state"], held["blocker"]) == ("admitted", "configuration")
    assert held["message"] == MISSING_SECRET
    unit = nebula.unit("staging", "api")
    assert unit["active_release"] == "r-1"
    assert unit["deployment"]["blocker"] == "configuration"
    set_secret(nebula, monkeypatch, "STRIPE_KEY", "sk_live_do_not_print")
    nebula.settle()
    done = show(nebula, held["id"])
    assert (done["state"], done["blocker"], done["message"]) == ("healthy", None, None)
    notes = [(e["kind"], e["message"]) for e in done["events"] if e["kind"] != "deployment"]
    # Moving on clears the blocker; the timeline keeps the one event that set it.
    assert notes == [("deployment.blocker", MISSING_SECRET)]
    assert states(nebula, held["id"]) == WITHOUT_RELEASE
    everything = (
        nebula.ok(f"deployment show {held['id']} --json").out + nebula.ok("status --json").out
    )
    assert "sk_live_do_not_print" not in everything
    assert all("sk_live_do_not_print" not in (e.message or "") for e in nebula.events())


def test_a_secret_never_set_fails_with_configuration(faulty: Nebula, git_repo: GitRepo) -> None:
    nebula = faulty
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(secret="STRIPE_KEY"))
    nebula.settle()
    # Held for a person (`nebula secret set`): settling stops there instead of waiting out
    # the timeout, as `reconcile --until-idle` does.
    held = show(nebula, latest(nebula, "api")["id"])
    assert (held["state"], held["blocker"]) == ("admitted", "configuration")
    nebula.clock.advance(READINESS_TIMEOUT.total_seconds())
    nebula.settle()
    failed = show(nebula, latest(nebula, "api")["id"])
    assert (failed["state"], failed["blocker"]) == ("failed", "configuration")
    assert failed["message"] == "Secret STRIPE_KEY is not set for shop/staging. r-1 keeps serving."
    assert nebula.unit("staging", "api")["active_release"] == "r-1"
    # It failed at the timeout, counted from when it was admitted.
    admitted = next(e["at"] for e in failed["events"] if e["state"] == "admitted")
    assert at(failed["finished_at"]) - at(admitted) == READINESS_TIMEOUT


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


MISSING_SECRET = (
    "Secret STRIPE_KEY is not set for shop/staging "
    "(set it with: nebula secret set shop staging STRIPE_KEY)"
)


# -- delivery: the cluster cannot be reached -----------------------------------------------


def test_an_unreachable_cluster_sets_delivery_and_clears_it_when_back(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(level="debug"))
    deployment = latest(nebula, "api")["id"]
    hold_at(nebula, deployment, "starting")
    cluster(nebula).set_reachable(False)
    for _ in range(3):
        tick(nebula)
        nebula.clock.advance(minutes=10)  # an outage does not count against the stage's time
    held = show(nebula, deployment)
    message = (
        "The cluster cannot be reached (the simulated cluster's API cannot be reached); "
        "r-1 keeps serving."
    )
    assert (held["state"], held["blocker"], held["message"]) == ("starting", "delivery", message)
    assert nebula.unit("staging", "api")["deployment"]["blocker"] == "delivery"
    assert [e["message"] for e in held["events"] if e["kind"] == "deployment.blocker"] == [message]
    cluster(nebula).set_reachable(True)
    tick(nebula)
    back = show(nebula, deployment)
    assert (back["blocker"], back["message"]) == (None, None)
    nebula.settle()
    assert show(nebula, deployment)["state"] == "healthy"
    assert nebula.unit("staging", "api")["active_release"] == "r-2"


def test_reconcile_until_idle_stops_at_a_deployment_held_for_a_secret(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    """Nothing can move without a person: the held api, and web that deploys after it."""
    text = app(secret="STRIPE_KEY") + (
        f'\n[services.web]\nimage = "{API}"\n[services.web.deploy]\ndepends_on = ["api"]\n'
        '[services.web.processes.web]\ntype = "http"\nport = 8080\n'
    )
    git_repo.commit({"nebula.toml": text}, "Payments")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    assert nebula.json("reconcile --until-idle --timeout 30")["reconcile"]["passes"] < 10
    api, web = (nebula.unit("staging", name)["deployment"] for name in ("api", "web"))
    assert (api["state"], api["blocker"], api["message"]) == (
        "admitted",
        "configuration",
        MISSING_SECRET,
    )
    assert (web["state"], web["blocker"]) == ("pending", "waiting")
