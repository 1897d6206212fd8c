"""A service taken out of nebula.toml is torn down on the real API server: by label, waiting
in `pending-teardown` while the API cannot be reached, and `already clean` when run again."""

from __future__ import annotations

import pytest

from tests.e2e_kube import projects
from tests.e2e_kube.conftest import FAULTY, PodServer
from tests.e2e_kube.installation import Crash, KubeNebula
from tests.e2e_kube.live import APPLIED, Live
from tests.infra.faultproxy import FaultProxy
from tests.infra.kubelet import TestKubelet
from tests.infra.podstatus import Behaviour
from tests.infra.waiting import wait_for
from tests.plugins.git import GitRepo

pytestmark = pytest.mark.kube

WORKER = "app.kubernetes.io/managed-by=nebula,nebula.dev/service=worker"


def worker_objects(live: Live) -> set[tuple[str, str]]:
    return {(kind, name) for kind in APPLIED for name in live.names(kind, WORKER)}


def test_a_removed_service_is_torn_down_once_the_api_is_reachable_and_only_once(
    kube_nebula: KubeNebula,
    git_repo: GitRepo,
    kubelet: TestKubelet,
    pod_server: PodServer,
    fault_proxy: FaultProxy,
    staging: Live,
) -> None:
    kubelet.script(projects.WEB, Behaviour.RUNNING, serve_port=pod_server.port)
    both = projects.project(database=False, environments=("staging",))
    kube_nebula.first_deploy(git_repo, both, {"staging": FAULTY})
    assert worker_objects(staging) == {("Deployment", "worker-r1"), ("ConfigMap", "worker-r1-vars")}
    # Healthy once Ready for the stabilization period, which the controllers may not have
    # recorded in the Deployments' status yet: only a write of ours may change web after this.
    wait_for(staging.settled, "the controllers to settle")
    web = staging.versions()
    del web[("Namespace", staging.namespace)]
    web = {key: version for key, version in web.items() if not key[1].startswith("worker")}

    fault_proxy.unreachable()
    kube_nebula.push(
        git_repo,
        projects.project(worker=None, database=False, environments=("staging",)),
        "Remove the worker",
    )
    for _ in range(3):
        kube_nebula.tick()

    assert kube_nebula.units()[("staging", "worker")]["status"] == "pending-teardown"
    assert worker_objects(staging) == {("Deployment", "worker-r1"), ("ConfigMap", "worker-r1-vars")}

    fault_proxy.reachable()
    with kube_nebula.crashing_after("teardown", "worker"), pytest.raises(Crash):
        kube_nebula.settle(lambda: False, timeout=15)

    assert worker_objects(staging) == set()  # deleted by label; the commit never happened
    assert kube_nebula.units()[("staging", "worker")]["status"] == "pending-teardown"

    kube_nebula.settle()

    assert ("staging", "worker") not in kube_nebula.units()
    assert kube_nebula.unit_events() == [
        ("pending-teardown", "worker removed from nebula.toml: tearing it down"),
        ("removed", "worker torn down (already clean)"),
    ]
    assert {
        key: version for key, version in staging.versions().items() if key[1].startswith("web")
    } == web  # web untouched
