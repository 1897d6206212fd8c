"""``nebula clusters`` on the simulated cluster (the Kubernetes rows are tested on real API
servers in tests/e2e_kube/test_clusters.py): one row, context ``simulated``, with every
environment; a member read, refused without a token."""

from __future__ import annotations

import httpx

from fixtures import loading
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
