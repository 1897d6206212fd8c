"""``nebula clusters`` on the simulated cluster: one row, context ``simulated``, with every
environment; a member read, refused without a token. On Kubernetes, here only what needs no
API server: one that does not answer and a context the kubeconfig lacks (clusters that answer,
and one going down, are in tests/e2e_kube/test_clusters.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx
import yaml

from fixtures import loading
from reconciler.runtimes.registry import Clusters
from renderers.capabilities import RECENT
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula
from tests.web.world import ThreadedServer


def test_the_simulated_cluster_is_one_row_with_every_environment(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": loading.project("storefront")}, "Shop")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()  # the first poll makes the environments

    assert nebula.json("clusters") == {
        "clusters": [
            {
                "context": "simulated",
                "server": None,
                "version": RECENT.kube_version,
                "reachable": True,
                "error": None,
                "credentials": None,
                "environments": ["shop/production", "shop/staging"],
            }
        ]
    }
    envs = "shop/production, shop/staging"
    assert nebula.ok("clusters").out.splitlines() == [
        f"CONTEXT    SERVER  VERSION  CREDENTIALS  REACHABLE  {'ENVIRONMENTS':<{len(envs)}}  ERROR",
        f"simulated  -       {RECENT.kube_version:<7}  -            true       {envs}  -",
    ]


def test_the_clusters_need_a_member(nebula: Nebula) -> None:
    with ThreadedServer(nebula.ctx) as server:
        answer = httpx.get(f"{server.url}/api/v1/clusters")
    assert answer.status_code == 401


def test_a_cluster_that_does_not_answer_and_a_context_that_does_not_exist_are_rows_with_errors(
    nebula: Nebula, git_repo: GitRepo, tmp_path: Path
) -> None:
    git_repo.commit({"nebula.toml": loading.project("storefront")}, "Shop")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()  # on the simulated cluster: the environments exist
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "nowhere", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "me", "user": {"token": "not-shown-anywhere"}}],
                "contexts": [{"name": "nowhere", "context": {"cluster": "nowhere", "user": "me"}}],
                "current-context": "nowhere",
            }
        )
    )
    ctx = nebula.ctx
    settings = dataclasses.replace(ctx.settings, cluster="kubernetes", kubeconfig=str(kubeconfig))
    ctx.clusters = Clusters(settings, ctx.db, ctx.clock, ctx.vault)
    nebula.ok("project set shop cluster.production gone")

    try:
        found = nebula.json("clusters")["clusters"]
    finally:
        ctx.clusters.close()

    assert [(c["context"], c["server"], c["version"], c["reachable"]) for c in found] == [
        ("nowhere", "https://127.0.0.1:1", None, False),
        ("gone", None, None, False),
    ]
    assert [(c["credentials"], c["environments"]) for c in found] == [
        ("token", ["shop/staging"]),
        (None, ["shop/production"]),
    ]
    assert found[0]["error"].startswith(
        "Kubernetes API could not be reached to read the server version: "
    ), found[0]["error"]
    assert found[1]["error"] == (
        f"cannot use context 'gone' of the kubeconfig {kubeconfig}: "
        "Invalid kube-config file. Expected object with name gone in kube-config/contexts list"
    ), found[1]["error"]
    assert "not-shown-anywhere" not in str(found)
