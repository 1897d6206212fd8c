"""Postgres on CloudNativePG on the simulated cluster (behaviour.md "Data services (1.2)"):
the Cluster deploys before the services reading its Secret, ``instances`` changes as one
line, an environment without the operator fails with ``configuration`` and the spec's message,
and switching how a live database runs is refused at staging."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures import loading
from tests.engine.livestate import live_object
from tests.plugins.git import GitRepo, GitRepoFactory
from tests.plugins.nebula import Nebula, nebula_with

CNPG = 'postgres = "cloudnative-pg"'
TEXT = (
    loading.project("hello").replace(
        "[environments.staging]\n", f"[environments.staging]\n{CNPG}\n"
    )
    + "\n[databases.db]\nautomatic_failover = true\n"
    + '\n[services.hello.variables]\nDATABASE_URL = "${{ db.DATABASE_URL }}"\n'
)


@pytest.fixture
def without_operator(tmp_path: Path) -> Iterator[Nebula]:
    faults = tmp_path / "faults.toml"
    faults.write_text('[environments."shop/staging"]\ncloudnative_pg = false\n')
    yield from nebula_with(tmp_path, simulated_faults=str(faults))


def _registered(nebula: Nebula, git_repos: GitRepoFactory) -> GitRepo:
    """Project shop from ``TEXT``, reconciled until nothing moves."""
    repo = git_repos.local("shop")
    repo.commit({"nebula.toml": TEXT})
    nebula.ok(f"project add shop --repo {repo.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")
    return repo


def _lines(nebula: Nebula) -> list[tuple[str, str, object, object]]:
    return [
        (line["service"], line["field"], line["before"], line["after"])
        for line in nebula.changesets("shop")[-1]["lines"]
    ]


def test_a_cluster_deploys_first_and_its_instances_change_as_one_line(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    repo = _registered(nebula, git_repos)

    db = nebula.unit("staging", "db")
    assert (db["kind"], db["active_release"], db["sync"]) == ("database", "r-1", "synced")
    deployments = {d["service"]: d for d in nebula.deployments("shop")}
    assert deployments["db"]["id"] < deployments["hello"]["id"]
    assert {d["state"] for d in deployments.values()} == {"healthy"}
    cluster = live_object(nebula, "shop-staging", "Cluster", "db")
    assert cluster is not None
    assert cluster["apiVersion"] == "postgresql.cnpg.io/v1"
    assert cluster["spec"]["instances"] == 3
    assert live_object(nebula, "shop-staging", "StatefulSet", "db") is None
    web = live_object(nebula, "shop-staging", "Deployment", "hello-r1")
    assert web is not None
    (env,) = web["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env["valueFrom"] == {"secretKeyRef": {"name": "db-app", "key": "uri"}}

    repo.commit(
        {
            "nebula.toml": TEXT.replace(
                "automatic_failover = true\n", "automatic_failover = true\ninstances = 5\n"
            )
        }
    )
    nebula.ok("reconcile --until-idle --timeout 1m")
    assert _lines(nebula) == [("db", "instances", 3, 5)]
    assert nebula.unit("staging", "db")["active_release"] == "r-2"
    cluster = live_object(nebula, "shop-staging", "Cluster", "db")
    assert cluster is not None and cluster["spec"]["instances"] == 5


def test_without_the_operator_the_database_fails_with_configuration(
    without_operator: Nebula, git_repos: GitRepoFactory
) -> None:
    nebula = without_operator
    _registered(nebula, git_repos)
    deployments = {d["service"]: d for d in nebula.deployments("shop")}
    db = deployments["db"]
    assert (db["state"], db["blocker"]) == ("failed", "configuration")
    assert db["message"] == (
        'postgres = "cloudnative-pg" needs the CloudNativePG operator (postgresql.cnpg.io/v1 '
        "Cluster) on the cluster of shop/staging. Nothing was serving before; nothing is "
        "serving now."
    )
    assert deployments["hello"]["state"] != "healthy"
    assert live_object(nebula, "shop-staging", "Cluster", "db") is None


def test_switching_how_a_live_database_runs_is_refused_at_staging(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    repo = _registered(nebula, git_repos)
    staged = len(nebula.changesets("shop"))

    plain = TEXT.replace(f"{CNPG}\n", "").replace("automatic_failover = true\n", "")
    repo.commit({"nebula.toml": plain})
    nebula.ok("reconcile --until-idle --timeout 1m")
    project = nebula.status()
    assert (project["blocker"], project["message"]) == (
        "configuration",
        "Changing postgres in staging would replace the data of db: create a new database "
        "and migrate.",
    )
    assert len(nebula.changesets("shop")) == staged
    cluster = live_object(nebula, "shop-staging", "Cluster", "db")
    assert cluster is not None and cluster["spec"]["instances"] == 3

    redis = TEXT.replace("automatic_failover = true\n", 'engine = "redis"\n').replace(
        'DATABASE_URL = "${{ db.DATABASE_URL }}"', 'BROKER = "${{ db.REDIS_URL }}"'
    )
    repo.commit({"nebula.toml": redis})
    nebula.ok("reconcile --until-idle --timeout 1m")
    assert nebula.status()["message"] == (
        "Changing the engine of db in staging (postgres to redis) would replace its data: "
        "create a new database and migrate."
    )

    repo.commit(
        {
            "nebula.toml": TEXT.replace(
                "automatic_failover = true\n", "automatic_failover = true\ninstances = 2\n"
            )
        }
    )
    nebula.ok("reconcile --until-idle --timeout 1m")
    assert nebula.status()["blocker"] is None
    assert _lines(nebula) == [("db", "instances", 3, 2)]
