"""Postgres on CloudNativePG on the real API server (behaviour.md "Data services (1.2)"): the
operator's published Cluster CRD installed, a stand-in operator writing the Cluster's status
and its ``<db>-app`` Secret (as the test kubelet writes pods' status). Nebula applies the
Cluster, waits for ``readyInstances == instances``, then deploys the service reading the
operator's Secret; ``instances`` changes in place; without the operator (the CRD not served)
the database fails with ``configuration``; an operator that never readies the Cluster fails it
with ``readiness`` after the readiness timeout."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.e2e_kube import projects
from tests.e2e_kube.conftest import DIRECT, PodServer, kube_nebula_with
from tests.e2e_kube.installation import KubeNebula
from tests.e2e_kube.live import Live
from tests.infra import cnpg
from tests.infra.kubelet import TestKubelet
from tests.infra.kubeserver import KubeAPI
from tests.infra.podstatus import Behaviour
from tests.plugins.git import GitRepo

pytestmark = pytest.mark.kube

CNPG = 'postgres = "cloudnative-pg"'
FAILOVER = "\n[databases.db.environments.staging]\nautomatic_failover = true\n"


def _text(extra: str = "") -> str:
    text = projects.project(worker=None, environments=("staging",)).replace(
        "[environments.staging]\n", f"[environments.staging]\n{CNPG}\n"
    )
    return text + FAILOVER + extra


@pytest.fixture
def without_crd(kube_api: KubeAPI) -> None:
    cnpg.uninstall(kube_api.rest)


@pytest.fixture
def with_crd(kube_api: KubeAPI) -> None:
    cnpg.install(kube_api.rest)


@pytest.fixture
def operator(kube_api: KubeAPI, project: str, with_crd: None) -> Iterator[cnpg.StandInOperator]:
    with cnpg.StandInOperator(kube_api.rest, f"{project}-staging").running() as running:
        yield running


def test_without_the_operator_the_database_fails_with_configuration(
    without_crd: None, kube_nebula: KubeNebula, git_repo: GitRepo, staging: Live
) -> None:
    kube_nebula.register(git_repo, _text(), {"staging": DIRECT["staging"]})
    kube_nebula.settle()
    db = kube_nebula.latest("db")
    assert (db["state"], db["blocker"]) == ("failed", "configuration")
    assert db["message"] == (
        'postgres = "cloudnative-pg" needs the CloudNativePG operator (postgresql.cnpg.io/v1 '
        f"Cluster) on the cluster of {kube_nebula.project}/staging. Nothing was serving "
        "before; nothing is serving now."
    )
    assert kube_nebula.latest("web")["state"] != "healthy"


def test_a_cluster_goes_ready_before_the_service_reading_its_secret(
    operator: cnpg.StandInOperator,
    kube_nebula: KubeNebula,
    kube_api: KubeAPI,
    git_repo: GitRepo,
    kubelet: TestKubelet,
    pod_server: PodServer,
) -> None:
    kubelet.script(projects.WEB, Behaviour.RUNNING, serve_port=pod_server.port)
    namespace = f"{kube_nebula.project}-staging"
    clusters = cnpg.CLUSTERS.format(ns=namespace)
    kube_nebula.register(git_repo, _text(), {"staging": DIRECT["staging"]})
    kube_nebula.settle()

    units = kube_nebula.units()
    assert (units[("staging", "db")]["active_release"], units[("staging", "db")]["sync"]) == (
        "r-1",
        "synced",
    )
    assert units[("staging", "web")]["active_release"] == "r-1"
    cluster = kube_api.rest.get(f"{clusters}/db")
    assert (cluster["spec"]["instances"], cluster["status"]["readyInstances"]) == (3, 3)
    assert cluster["spec"]["imageName"] == "ghcr.io/cloudnative-pg/postgresql:16"
    db, web = kube_nebula.latest("db"), kube_nebula.latest("web")
    assert int(db["id"]) < int(web["id"])
    web_pods = kube_api.rest.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web-r1")[
        "spec"
    ]["template"]["spec"]
    [env] = [e for e in web_pods["containers"][0]["env"] if e["name"] == "DATABASE_URL"]
    assert env["valueFrom"]["secretKeyRef"] == {"name": "db-app", "key": "uri"}
    assert kube_api.rest.get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets")["items"] == []

    kube_nebula.push(git_repo, _text("instances = 2\n"))
    kube_nebula.settle()
    assert kube_nebula.latest("db")["state"] == "healthy"
    assert kube_nebula.units()[("staging", "db")]["active_release"] == "r-2"
    cluster = kube_api.rest.get(f"{clusters}/db")
    assert (cluster["spec"]["instances"], cluster["status"]["readyInstances"]) == (2, 2)


@pytest.fixture
def impatient_nebula(
    tmp_path: Path, kubeconfig: Path, kube_api: KubeAPI, kubelet: TestKubelet, project: str
) -> Iterator[KubeNebula]:
    yield from kube_nebula_with(
        tmp_path, kubeconfig, kube_api, project, readiness_timeout=timedelta(seconds=4)
    )


def test_a_cluster_never_ready_fails_with_readiness(
    with_crd: None, impatient_nebula: KubeNebula, kube_api: KubeAPI, git_repo: GitRepo
) -> None:
    kube_nebula = impatient_nebula
    stalled = cnpg.StandInOperator(kube_api.rest, f"{kube_nebula.project}-staging", stall=True)
    with stalled.running():
        kube_nebula.register(git_repo, _text(), {"staging": DIRECT["staging"]})
        kube_nebula.settle()
    db = kube_nebula.latest("db")
    assert (db["state"], db["blocker"]) == ("failed", "readiness")
    assert db["message"] == (
        "Pods did not start within 4s: 0 of 3 instances ready (Cluster db: no status from the "
        "operator yet). Nothing was serving before; nothing is serving now."
    )
