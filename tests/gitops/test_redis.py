"""A Redis database on the simulated cluster: deployed before the service reading it, a new
version is a change-set line and a release, and it rolls back like any database."""

from __future__ import annotations

from fixtures import loading
from tests.engine.livestate import live_object
from tests.plugins.git import GitRepoFactory
from tests.plugins.nebula import Nebula

HELLO = loading.project("hello")
WITH_REDIS = (
    HELLO
    + '\n[databases.cache]\nengine = "redis"\nversion = "7"\nvolume_size = "1Gi"\n'
    + '\n[services.hello.variables]\nBROKER = "${{ cache.REDIS_URL }}"\n'
)


def test_redis_deploys_first_changes_version_and_rolls_back(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    repo = git_repos.local("shop")
    repo.commit({"nebula.toml": WITH_REDIS})
    nebula.ok(f"project add shop --repo {repo.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")

    cache = nebula.unit("staging", "cache")
    assert (cache["kind"], cache["active_release"], cache["image"], cache["sync"]) == (
        "database",
        "r-1",
        "redis:7",
        "synced",
    )
    deployments = {d["service"]: d for d in nebula.deployments("shop")}
    assert deployments["cache"]["id"] < deployments["hello"]["id"]
    statefulset = live_object(nebula, "shop-staging", "StatefulSet", "cache")
    assert statefulset is not None
    assert statefulset["spec"]["template"]["spec"]["containers"][0]["image"] == "redis:7"

    repo.commit({"nebula.toml": WITH_REDIS.replace('version = "7"', 'version = "7.2"')})
    nebula.ok("reconcile --until-idle --timeout 1m")
    lines = [
        (line["service"], line["field"], line["before"], line["after"])
        for line in nebula.changesets("shop")[-1]["lines"]
    ]
    assert lines == [("cache", "version", "7", "7.2")]
    assert nebula.unit("staging", "cache")["image"] == "redis:7.2"

    history = nebula.json("history shop cache --env staging")
    assert [r["release"] for r in history["releases"]][:2] == ["r-2", "r-1"]
    nebula.ok("rollback shop cache --env staging")
    nebula.ok("reconcile --until-idle --timeout 1m")
    assert nebula.unit("staging", "cache")["image"] == "redis:7"
