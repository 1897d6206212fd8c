"""Releases, rollback, promotion and redeploy (behaviour.md, "Releases, rollback, promotion,
redeploy"), and the volume drain order."""

from __future__ import annotations

import pytest

from reconciler.core.states import Blocker
from tests.engine.driving import (
    approved_in_production,
    cluster,
    deploy_first,
    hold_at,
    latest,
    push,
    show,
    states,
)
from tests.engine.projects import API, app, broken, promotable, stack
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, image
from tests.timelines import WITHOUT_RELEASE

LEVELS = ["info", "debug", "warn", "error", "trace"]  # r-1 .. r-5


def five_releases(nebula: Nebula, git_repo: GitRepo) -> None:
    deploy_first(nebula, git_repo, app(level=LEVELS[0]))
    for level in LEVELS[1:]:
        push(nebula, git_repo, app(level=level), f"Log level {level}")
        nebula.settle()
    assert [(d["release"], d["state"]) for d in nebula.deployments()] == [
        (f"r-{n}", "healthy") for n in range(1, 6)
    ]


def level_served(nebula: Nebula) -> str:
    """The LOG_LEVEL of the release the stable Service selects, read from its ConfigMap."""
    release = cluster(nebula).selected_release("shop-staging", "api")
    assert release is not None
    name = f"api-{release.replace('-', '')}-vars"
    config = next(
        o for o in cluster(nebula).objects("shop-staging") if o["metadata"]["name"] == name
    )
    return str(config["data"]["LOG_LEVEL"])


def test_releases_are_numbered_per_service_and_environment(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": promotable()})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    push(nebula, git_repo, promotable(staging_image=image("api", "sha256:" + "e" * 64)))
    nebula.settle()
    push(nebula, git_repo, promotable(staging_image=image("api", "sha256:" + "f" * 64)))
    # Production's first deploy waits for approval; each push replaces its change set, and a
    # replaced deployment's number is not reused.
    assert [(d["environment"], d["release"], d["state"]) for d in nebula.deployments()] == [
        ("staging", "r-1", "healthy"),
        ("production", "r-1", "cancelled"),
        ("staging", "r-2", "healthy"),
        ("production", "r-2", "cancelled"),
        ("staging", "r-3", "pending"),
        ("production", "r-3", "awaiting-approval"),
    ]


@pytest.mark.parametrize("target", ["r-2", "r-3", "r-4"])
def test_rollback_to_each_of_the_three_retained_releases(
    nebula: Nebula, git_repo: GitRepo, target: str
) -> None:
    five_releases(nebula, git_repo)
    response = nebula.json(f"rollback shop api --env staging --to {target}")
    rollback = response["deployment"]
    assert (rollback["release"], rollback["kind"], rollback["state"]) == (
        target,
        "rollback",
        "pending",
    )
    assert (response["approval"], response["ended"]) == (None, [])
    nebula.settle()
    assert show(nebula, rollback["id"])["state"] == "healthy"
    assert states(nebula, rollback["id"]) == WITHOUT_RELEASE
    assert nebula.unit("staging", "api")["active_release"] == target
    assert cluster(nebula).selected_release("shop-staging", "api") == target
    assert level_served(nebula) == LEVELS[int(target[2:]) - 1]
    # No new release: the rollback deploys the retained one.
    assert [d["release"] for d in nebula.deployments()] == [
        "r-1",
        "r-2",
        "r-3",
        "r-4",
        "r-5",
        target,
    ]


def test_rollback_defaults_to_the_previous_release(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    five_releases(nebula, git_repo)
    response = nebula.json("rollback shop api --env staging")
    assert (response["deployment"]["release"], response["deployment"]["kind"]) == (
        "r-4",
        "rollback",
    )
    nebula.settle()
    assert nebula.unit("staging", "api")["active_release"] == "r-4"
    assert level_served(nebula) == "error"
    # r-5 is retired now, and the previous release again: rolling back once more returns to it.
    again = nebula.json("rollback shop api --env staging")
    assert again["deployment"]["release"] == "r-5"


def test_a_fourth_retired_release_is_refused(nebula_any_db: Nebula, git_repo: GitRepo) -> None:
    nebula = nebula_any_db
    five_releases(nebula, git_repo)
    refused = nebula.cli("rollback shop api --env staging --to r-1")
    assert (refused.code, refused.err) == (
        1,
        "error: r-1 is no longer available for rollback: only the 3 most recent retired "
        "releases are kept (r-4, r-3, r-2)\n",
    )
    assert len(nebula.deployments()) == 5
    # Its rows and events are kept.
    first = show(nebula, nebula.deployments()[0]["id"])
    assert (first["release"], first["state"], len(first["events"])) == ("r-1", "healthy", 7)


def test_rollback_refusals(faulty: Nebula, git_repo: GitRepo) -> None:
    nebula = faulty
    deploy_first(nebula, git_repo, app())
    assert nebula.cli("rollback shop api --env staging").err == (
        "error: api in staging has no earlier release to roll back to\n"
    )
    push(nebula, git_repo, app(level="debug"))
    nebula.settle()
    push(nebula, git_repo, app(api_image=broken(Blocker.CAPACITY)))
    nebula.settle()
    cases = {
        "r-2": "error: r-2 is already active for api in staging\n",
        "r-3": "error: r-3 never went live for api in staging; only a retired release can be rolled back to\n",
        "r-9": "error: api in staging has no release r-9\nhint: releases to roll back to: r-1\n",
    }
    for target, err in cases.items():
        refused = nebula.cli(f"rollback shop api --env staging --to {target}")
        assert (refused.code, refused.err) == (1, err), target


def test_rolling_back_ends_the_service_s_queued_deployments(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(level="debug"))
    nebula.settle()
    push(nebula, git_repo, app(level="warn"))
    queued = latest(nebula, "api")["id"]
    hold_at(nebula, queued, "qualifying")
    response = nebula.json("rollback shop api --env staging --to r-1")
    assert response["ended"] == [
        {"id": queued, "service": "api", "release": "r-3", "state": "superseded"}
    ]
    assert show(nebula, queued)["message"] == "Superseded by r-1"
    nebula.settle()
    assert nebula.unit("staging", "api")["active_release"] == "r-1"


def test_a_rollback_is_not_undone_by_a_push_that_does_not_touch_the_service(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    deploy_first(nebula, git_repo, stack())
    push(nebula, git_repo, stack(api_level="debug"))
    nebula.settle()
    nebula.ok("rollback shop api --env staging")
    nebula.settle()
    assert nebula.unit("staging", "api")["active_release"] == "r-1"
    count = len(nebula.deployments())
    push(nebula, git_repo, stack(api_level="debug", worker_level="warn"), "Worker only")
    nebula.settle()
    assert [(d["service"], d["release"]) for d in nebula.deployments()[count:]] == [
        ("worker", "r-2")
    ]
    assert nebula.unit("staging", "api")["active_release"] == "r-1"
    # A push that does touch it deploys the file's api again.
    push(nebula, git_repo, stack(api_level="error", worker_level="warn"))
    nebula.settle()
    assert nebula.unit("staging", "api")["active_release"] == "r-3"


def test_a_protected_rollback_passes_at_once_with_rollbacks_skip_approval(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    approved_in_production(nebula, git_repo, ("info", "debug"))
    assert nebula.unit("production", "api")["active_release"] == "r-2"
    # Without the policy a rollback waits for approval.
    waiting = nebula.json("rollback shop api --env production --as bo")
    assert (waiting["deployment"]["state"], waiting["approval"]["state"]) == (
        "awaiting-approval",
        "pending",
    )
    nebula.ok(f"cancel {waiting['deployment']['id']} --as bo")
    nebula.ok("policy set rollbacks_skip_approval true")
    response = nebula.json("rollback shop api --env production --as bo")
    assert response["deployment"]["state"] == "pending"
    approval = response["approval"]
    assert (approval["state"], approval["rule"], approval["decided_by"], approval["kind"]) == (
        "approved",
        "rollbacks-skip-approval",
        "bo",
        "rollback",
    )
    listed = next(a for a in nebula.approvals() if a["id"] == approval["id"])
    assert (listed["state"], listed["rule"], listed["decided_via"]) == (
        "approved",
        "rollbacks-skip-approval",
        "rule",
    )
    nebula.settle()
    assert nebula.unit("production", "api")["active_release"] == "r-1"


def test_promote_makes_a_new_release_in_the_target_from_the_source_image(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    staged = image("api", "sha256:" + "e" * 64)
    nebula.ok("member add ada --role admin")
    nebula.ok("member add bo --role admin")
    git_repo.commit({"nebula.toml": promotable(staging_image=staged)})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    nebula.ok(f"approve {nebula.approvals()[0]['id']} --as ada")
    nebula.settle()
    assert nebula.unit("staging", "api")["image"] == staged
    assert (
        nebula.unit("production", "api")["active_release"],
        nebula.unit("production", "api")["image"],
    ) == ("r-1", API)
    itself = nebula.cli("promote shop api --from staging --to staging --as ada")
    assert (itself.code, itself.err) == (
        1,
        "error: Cannot promote api from staging to itself: --from and --to must be different "
        "environments\n"
        "hint: to deploy the same image again, use: nebula redeploy shop api --env staging\n",
    )
    response = nebula.json("promote shop api --from staging --to production --as ada")
    promoted = response["deployment"]
    assert (promoted["environment"], promoted["release"], promoted["kind"], promoted["image"]) == (
        "production",
        "r-2",
        "promote",
        staged,
    )
    assert (promoted["state"], response["approval"]["state"]) == ("awaiting-approval", "pending")
    nebula.ok(f"approve {response['approval']['id']} --as bo")
    nebula.settle()
    production = nebula.unit("production", "api")
    assert (production["active_release"], production["image"]) == ("r-2", staged)
    assert states(nebula, promoted["id"]) == ["awaiting-approval", *WITHOUT_RELEASE]
    assert cluster(nebula).selected_release("shop-production", "api") == "r-2"
    # The source is untouched.
    assert nebula.unit("staging", "api")["active_release"] == "r-1"


def test_redeploy_makes_a_new_release_from_the_active_image(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    deploy_first(nebula, git_repo, app())
    response = nebula.json("redeploy shop api --env staging")
    assert (
        response["deployment"]["release"],
        response["deployment"]["image"],
        response["deployment"]["kind"],
    ) == (
        "r-2",
        API,
        "deploy",
    )
    nebula.settle()
    assert nebula.unit("staging", "api")["active_release"] == "r-2"
    assert level_served(nebula) == "info"


def test_redeploy_is_refused_where_never_healthy(faulty: Nebula, git_repo: GitRepo) -> None:
    nebula = faulty
    git_repo.commit({"nebula.toml": app(api_image=broken(Blocker.IMAGE_PULL))})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    assert latest(nebula, "api")["state"] == "failed"
    refused = nebula.cli("redeploy shop api --env staging")
    assert (refused.code, refused.err) == (
        1,
        "error: Cannot redeploy api in staging: it has never had a healthy release\n",
    )
    assert len(nebula.deployments()) == 1


def test_a_volume_release_drains_the_previous_release_before_starting(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    deploy_first(nebula, git_repo, app(volume=True))
    push(nebula, git_repo, app(volume=True, level="debug"))
    nebula.settle()
    log = cluster(nebula).log()
    assert log[log.index("start shop-staging/api r-1") + 1 :] == [
        "activate shop-staging/api r-1",
        "drain shop-staging/api r-1",
        "start shop-staging/api r-2",
        "activate shop-staging/api r-2",
    ]
    assert nebula.unit("staging", "api")["active_release"] == "r-2"
    # The volume claim is shared by releases: draining r-1 kept it.
    kinds = {(o["kind"], o["metadata"]["name"]) for o in cluster(nebula).objects("shop-staging")}
    assert ("PersistentVolumeClaim", "api-data") in kinds


def test_a_failed_volume_release_says_nothing_serves(faulty: Nebula, git_repo: GitRepo) -> None:
    nebula = faulty
    deploy_first(nebula, git_repo, app(volume=True))
    push(nebula, git_repo, app(volume=True, api_image=broken(Blocker.IMAGE_PULL)))
    nebula.settle()
    failed = latest(nebula, "api")
    assert failed["message"] == (
        f'Back-off pulling image "{broken(Blocker.IMAGE_PULL)}": ErrImagePull. '
        "Nothing is serving now: r-1 was stopped to free the volume; redeploy to start it again."
    )
    assert cluster(nebula).log()[-3:] == [
        "drain shop-staging/api r-1",
        "start shop-staging/api r-2",
        "remove shop-staging/api r-2",
    ]
    nebula.ok("redeploy shop api --env staging")
    nebula.settle()
    assert (nebula.unit("staging", "api")["active_release"], level_served(nebula)) == (
        "r-3",
        "info",
    )
