"""Live state on the simulated cluster, as a user sees it: objects changed behind Nebula's back
with ``nebula simulated edit|delete``, then ``status``, ``diff``, the events, the Slack notice,
self-heal where ``self_heal = true``, and what is never checked or never drift."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reconciler.engine import drifting
from reconciler.gitops import polling
from tests.engine.livestate import (
    PRODUCTION,
    STAGING,
    deployed,
    later,
    live_events,
    live_object,
    notices,
    text,
)
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, nebula_with

DRIFT, HEAL = "unit.drift", "unit.self-heal"
REPLICAS = {"object": "Deployment/api-r1", "path": "spec.replicas", "live": "5", "desired": "2"}


@pytest.fixture
def shop(nebula: Nebula, git_repo: GitRepo) -> Nebula:
    deployed(nebula, git_repo)
    return nebula


def test_a_deployed_unit_is_checked_at_once_and_synced(shop: Nebula) -> None:
    for env in ("staging", "production"):
        for service in ("api", "db"):
            unit = shop.unit(env, service)
            assert (unit["sync"], unit["drift"], unit["blocker"]) == ("synced", [], None)
            assert unit["drift_checked_at"] is not None
    assert live_events(shop) == []
    assert shop.cli("diff shop").code == 0


def test_drift_is_detected_at_the_next_interval_shown_once_and_cleared(shop: Nebula) -> None:
    shop.ok(f"simulated edit {PRODUCTION} Deployment/api-r1 spec.replicas 5")

    shop.reconcile()  # checked a moment ago: not due yet
    assert shop.unit("production", "api")["sync"] == "synced"

    later(shop)
    api = shop.unit("production", "api")
    assert (api["sync"], api["drift"]) == ("drifted", [REPLICAS])
    assert live_events(shop) == [
        (DRIFT, "Drift: Deployment/api-r1 spec.replicas is 5, release r-1 says 2", "nebula")
    ]
    [notice] = notices(shop)
    assert (notice["project"], notice["environment"], notice["service"]) == (
        "shop",
        "production",
        "api",
    )
    assert notice["differences"] == ["Deployment/api-r1 spec.replicas: 5 (r-1: 2)"]
    assert notice["healed"] is None
    # production has no self_heal: nothing is put back
    assert live_object(shop, PRODUCTION, "Deployment", "api-r1")["spec"]["replicas"] == 5  # type: ignore[index]

    # The same episode goes on (even as it grows): no second event, no second notice.
    shop.ok(f"simulated edit {PRODUCTION} ConfigMap/api-r1-vars data.LOG_LEVEL debug")
    later(shop)
    assert shop.unit("production", "api")["drift"] == [  # in the release's apply order
        {
            "object": "ConfigMap/api-r1-vars",
            "path": "data.LOG_LEVEL",
            "live": "debug",
            "desired": "info",
        },
        REPLICAS,
    ]
    assert len(live_events(shop)) == 1 and len(notices(shop)) == 1
    assert shop.status()["environments"][1]["services"][0]["sync"] == "drifted"

    shop.ok(f"simulated edit {PRODUCTION} Deployment/api-r1 spec.replicas 2")
    shop.ok(f"simulated edit {PRODUCTION} ConfigMap/api-r1-vars data.LOG_LEVEL info")
    later(shop)
    assert (shop.unit("production", "api")["sync"], shop.unit("production", "api")["drift"]) == (
        "synced",
        [],
    )
    assert live_events(shop)[-1] == (DRIFT, "Drift cleared", "nebula")

    shop.ok(f"simulated delete {PRODUCTION} Service/api")  # a second episode
    later(shop)
    assert shop.unit("production", "api")["drift"] == [{"object": "Service/api", "missing": True}]
    assert live_events(shop)[-1] == (
        DRIFT,
        "Drift: Service/api is missing, release r-1 has it",
        "nebula",
    )
    assert len(notices(shop)) == 2


def test_self_heal_puts_drifted_objects_back_without_a_release(shop: Nebula) -> None:
    deployments = len(shop.deployments())
    shop.ok(f"simulated edit {STAGING} ConfigMap/api-r1-vars data.LOG_LEVEL debug")
    shop.ok(f"simulated delete {STAGING} Service/api")

    later(shop)

    assert live_events(shop) == [
        (
            DRIFT,
            "Drift: ConfigMap/api-r1-vars data.LOG_LEVEL is debug, release r-1 says info "
            "(and 1 more difference)",
            "nebula",
        ),
        (
            HEAL,
            "Self-heal: re-applied ConfigMap/api-r1-vars (data.LOG_LEVEL debug -> info); "
            "Service/api (was missing)",
            "nebula",
        ),
        (DRIFT, "Drift cleared", "nebula"),
    ]
    api = shop.unit("staging", "api")
    assert (api["sync"], api["drift"], api["active_release"]) == ("synced", [], "r-1")
    assert live_object(shop, STAGING, "ConfigMap", "api-r1-vars")["data"]["LOG_LEVEL"] == "info"  # type: ignore[index]
    service = live_object(shop, STAGING, "Service", "api")
    assert service is not None and service["spec"]["selector"]["nebula.dev/release"] == "r-1"
    assert len(shop.deployments()) == deployments  # no release, no deployment, no approval
    assert [a for a in shop.approvals() if a["state"] == "pending"] == []
    assert "heal shop-staging/api r-1" in shop.ctx.clusters.simulated().log()
    audited = [
        (e["actor"], e["action"], e["target"])
        for e in shop.json("audit")["events"]
        if e["actor"] == "nebula"
    ]
    assert audited == [
        ("nebula", "drift", "shop/staging/api"),
        ("nebula", "self-heal", "shop/staging/api"),
        ("nebula", "drift.cleared", "shop/staging/api"),
    ]
    [notice] = notices(shop)
    assert notice["healed"].startswith("Self-heal: re-applied ConfigMap/api-r1-vars")


@pytest.mark.parametrize(
    ("namespace", "ref", "path", "value"),
    [
        (PRODUCTION, "Deployment/api-r1", "metadata.annotations.team", "payments"),
        (PRODUCTION, "Deployment/api-r1", 'metadata.labels["example.com/owner"]', "ops"),
        (PRODUCTION, "Deployment/api-r1", "status.readyReplicas", "1"),
        (PRODUCTION, "Service/api", "spec.clusterIP", "10.0.0.7"),
    ],
)
def test_what_nebula_does_not_set_is_not_drift(
    shop: Nebula, namespace: str, ref: str, path: str, value: str
) -> None:
    shop.ok(f"simulated edit {namespace} {ref} {path} {value}")
    later(shop)
    assert shop.unit("production", "api")["sync"] == "synced"
    assert live_events(shop) == []


def test_a_database_and_its_secret_drift_without_showing_the_value(shop: Nebula) -> None:
    shop.ok(f"simulated edit {PRODUCTION} StatefulSet/db spec.replicas 0")
    shop.ok(f"simulated edit {PRODUCTION} Secret/db-credentials data.PGPASSWORD aGFja2Vk")
    later(shop)
    db = shop.unit("production", "db")
    assert db["drift"] == [
        {
            "object": "Secret/db-credentials",
            "path": "data.PGPASSWORD",
            "live": "(hidden, differs)",
            "desired": "(hidden)",
        },
        {"object": "StatefulSet/db", "path": "spec.replicas", "live": "0", "desired": "1"},
    ]
    result = shop.cli("diff shop --env production --service db")
    assert result.code == 1
    assert "aGFja2Vk" not in result.out
    secret = live_object(shop, PRODUCTION, "Secret", "db-credentials")
    assert secret is not None
    for value in secret["data"].values():
        assert value not in result.out + json.dumps(shop.status())


def test_nothing_is_checked_while_a_deployment_of_the_unit_is_in_flight(
    shop: Nebula, git_repo: GitRepo
) -> None:
    shop.ok(f"simulated edit {STAGING} Deployment/api-r1 spec.replicas 5")
    git_repo.commit({"nebula.toml": text({'LOG_LEVEL = "info"': 'LOG_LEVEL = "warn"'})}, "Warn")
    polling.poll(shop.ctx, ["shop"])  # staged and applied: api r-2 pending in staging
    shop.clock.advance(600)

    checked = shop.unit("staging", "api")["drift_checked_at"]

    assert drifting.check_due(shop.ctx) == 3  # db here, api and db in production
    api = shop.unit("staging", "api")
    assert (api["sync"], api["drift_checked_at"]) == ("synced", checked)  # not looked at
    assert api["deployment"]["state"] == "pending"
    assert live_events(shop) == []

    shop.settle()  # r-2 goes healthy: its objects are checked at once
    api = shop.unit("staging", "api")
    assert (api["active_release"], api["sync"], api["drift"]) == ("r-2", "synced", [])
    assert live_events(shop) == []


def test_a_cluster_that_cannot_be_read_is_unknown_with_the_delivery_blocker(
    shop: Nebula,
) -> None:
    shop.ctx.clusters.simulated().set_reachable(False)
    later(shop)
    api = shop.unit("production", "api")
    assert (api["sync"], api["blocker"]) == ("unknown", "delivery")
    assert api["message"] == (
        "Could not read the live objects of r-1: the simulated cluster's API cannot be reached"
    )
    result = shop.cli("diff shop")
    assert (result.code, result.err) == (
        2,
        "error: the simulated cluster's API cannot be reached\n",
    )

    shop.ctx.clusters.simulated().set_reachable(True)
    later(shop)
    api = shop.unit("production", "api")
    assert (api["sync"], api["blocker"], api["message"]) == ("synced", None, None)


def test_diff_shows_live_against_release_with_kubectl_exit_codes(shop: Nebula) -> None:
    assert (shop.cli("diff shop --env production").code, shop.cli("diff shop").out) == (0, "")
    shop.ok(f"simulated edit {PRODUCTION} Deployment/api-r1 spec.replicas 5")

    result = shop.cli("diff shop --env production --service api")  # read now, no interval
    assert result.code == 1
    assert result.out.startswith("--- live/Deployment/api-r1\n+++ r-1/Deployment/api-r1\n")
    assert "\n-  replicas: 5\n+  replicas: 2\n" in result.out
    data = shop.cli("diff shop -o json").json
    assert data["project"] == "shop" and data["differences"] == 1
    [production_api] = [
        u for u in data["units"] if (u["environment"], u["service"]) == ("production", "api")
    ]
    assert production_api["release"] == "r-1"
    assert (production_api["sync"], production_api["drift"]) == ("drifted", [REPLICAS])
    assert shop.cli("diff shop --env staging --json").json["differences"] == 0
    assert live_events(shop) == []  # diff records nothing

    missing = shop.cli("diff nowhere")
    assert (missing.code, missing.err.splitlines()[0]) == (2, "error: No project named 'nowhere'")
    assert shop.cli("diff shop --service nothing").code == 2


@pytest.mark.parametrize(
    ("environ", "args", "error"),
    [
        (
            {"NEBULA_DRIFT_INTERVAL": "bogus"},
            [],
            "error: NEBULA_DRIFT_INTERVAL must be a duration, not 'bogus'",
        ),
        ({}, ["--config", "/nonexistent.toml"], "error: cannot read settings file /nonexistent"),
    ],
)
def test_diff_exits_2_when_its_settings_are_wrong(
    tmp_path: Path, environ: dict[str, str], args: list[str], error: str
) -> None:
    """Exit 1 says "differences": a settings error is an error (2), as kubectl diff's are."""
    result = subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", "diff", "shop", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **environ},
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stderr.splitlines()[0][: len(error)]) == (2, error)


def test_simulated_edit_names_what_it_cannot_find(shop: Nebula) -> None:
    result = shop.cli(f"simulated edit {STAGING} Deployment/nothing spec.replicas 5")
    assert (result.code, result.err) == (
        1,
        "error: No Deployment/nothing in shop-staging on the simulated cluster\n",
    )
    wrong = shop.cli(
        f"simulated edit {STAGING} Deployment/api-r1 spec.template.spec.containers[name=x].image y"
    )
    assert wrong.code == 1 and "has no spec.template.spec.containers[name=x]" in wrong.err
    assert shop.cli(f"simulated delete {STAGING} Service/nothing").code == 1


def test_simulated_edit_and_delete_are_refused_on_a_real_cluster(tmp_path: Path) -> None:
    for nebula in nebula_with(tmp_path, cluster="kubernetes"):
        for command in (
            "simulated edit shop-staging Deployment/api-r1 spec.replicas 5",
            "simulated delete shop-staging Service/api",
        ):
            result = nebula.cli(command)
            assert result.code == 1
            assert result.err == (
                "error: nebula simulated changes the simulated cluster only; NEBULA_CLUSTER is "
                "kubernetes\nhint: change a real cluster with kubectl\n"
            )


def test_drift_and_self_heal_on_either_store(nebula_any_db: Nebula, git_repo: GitRepo) -> None:
    deployed(nebula_any_db, git_repo)
    nebula_any_db.ok(f"simulated edit {PRODUCTION} Deployment/api-r1 spec.replicas 5")
    nebula_any_db.ok(f"simulated edit {STAGING} Deployment/api-r1 spec.replicas 5")

    later(nebula_any_db)

    assert nebula_any_db.unit("production", "api")["drift"] == [REPLICAS]
    assert nebula_any_db.unit("staging", "api")["sync"] == "synced"
    assert [kind for kind, _, _ in live_events(nebula_any_db)].count(HEAL) == 1
