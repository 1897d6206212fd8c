"""Faults between Nebula and the API server, injected by the fault proxy the `e2e-faulty`
context goes through: an API answering 500 (retried at most 3 times per stage, then the
stage's blocker), a refused selector patch (`route-activation` after the timeout, the previous
release still selected) and an API that cannot be reached (`delivery` until it is back).

Every request Nebula sends crosses the proxy, so the proxy's counts are what the wire saw.
"""

from __future__ import annotations

import pytest

from reconciler.runtimes.registry import Clusters
from tests.e2e_kube import projects
from tests.e2e_kube.conftest import FAULTY, ROUTE_ACTIVATION_TIMEOUT, PodServer
from tests.e2e_kube.installation import KubeNebula
from tests.e2e_kube.live import Live
from tests.infra.faultproxy import FaultProxy
from tests.infra.kubelet import TestKubelet
from tests.infra.podstatus import Behaviour
from tests.infra.waiting import wait_for
from tests.plugins.git import GitRepo

pytestmark = pytest.mark.kube

VIA_PROXY = {"staging": FAULTY}

# stage -> (the request that fails in it: method, path pattern, what Nebula was doing;
#           the blocker once its retries are spent; the watch that must fail too, if any)
STAGES = {
    "starting": (
        "PATCH",
        r"/deployments/web-r2\?",
        "apply Deployment/web-r2 in {ns}",
        "delivery",
        None,
    ),
    # While the watch cache is synced the check sends no request at all: the API failing
    # the check's read means failing the Deployments' list and watch as well.
    "qualifying": (
        "GET",
        r"/deployments/web-r2$",
        "read Deployment/web-r2 in {ns}",
        "readiness",
        r"/deployments\?",
    ),
}


@pytest.fixture
def web_on_r1(
    kube_nebula: KubeNebula, git_repo: GitRepo, kubelet: TestKubelet, pod_server: PodServer
) -> KubeNebula:
    """web r-1 healthy in staging, deployed through the fault proxy; r-2's image runs too."""
    for image in (projects.WEB, projects.WEB_2):
        kubelet.script(image, Behaviour.RUNNING, serve_port=pod_server.port)
    kube_nebula.first_deploy(git_repo, projects.web_only(), VIA_PROXY)
    return kube_nebula


@pytest.mark.parametrize("stage", list(STAGES))
def test_a_request_answered_500_is_retried_three_times_then_fails_with_the_stage_s_blocker(
    web_on_r1: KubeNebula,
    git_repo: GitRepo,
    fault_proxy: FaultProxy,
    staging: Live,
    stage: str,
) -> None:
    nebula = web_on_r1
    method, path, doing, blocker, watch = STAGES[stage]
    nebula.push(git_repo, projects.web_only(projects.WEB_2), "web 2")
    deployment = nebula.latest("web")["id"]
    nebula.hold_at(deployment, stage)
    before = fault_proxy.count(method, path)

    fault_proxy.fail(method, path, status=500, times=None)
    if watch is not None:
        fault_proxy.fail("GET", watch, status=500, times=None)
        fault_proxy.cut_streams()
        cluster = nebula.ctx.clusters.for_environment(VIA_PROXY, "staging")
        wait_for(
            lambda: not cluster.cache.synced("Deployment", staging.namespace),
            "the watch cache to notice its watch is gone",
        )
    failed = nebula.settle_deployment(deployment)

    error = f"Kubernetes API could not {doing.format(ns=staging.namespace)}: 500 InternalError: injected fault"
    assert (failed["state"], failed["blocker"]) == ("failed", blocker)
    assert (
        failed["message"]
        == f"The cluster kept failing ({error}) after 3 retries. r-1 keeps serving."
    )
    assert [n for n in nebula.notes(deployment) if n.startswith("Retrying")] == [
        f"Retrying ({n}/3) after: {error}" for n in (1, 2, 3)
    ]
    assert fault_proxy.count(method, path) - before == 4  # the first try and 3 retries
    fault_proxy.clear()
    nebula.settle()
    assert staging.selector("web")["nebula.dev/release"] == "r-1"
    assert staging.names("Deployment") == {"web-r1"}


@pytest.mark.parametrize(("status", "reason"), [(409, "Conflict"), (500, "InternalError")])
def test_a_selector_patch_refused_past_the_timeout_fails_with_route_activation(
    web_on_r1: KubeNebula,
    git_repo: GitRepo,
    fault_proxy: FaultProxy,
    staging: Live,
    status: int,
    reason: str,
) -> None:
    nebula = web_on_r1
    stable = staging.get("Service", "web")
    refusal = fault_proxy.fail(
        "PATCH", rf"/namespaces/{staging.namespace}/services/web\?", status=status, times=None
    )
    nebula.push(git_repo, projects.web_only(projects.WEB_2), "web 2")

    failed = nebula.settle_deployment(nebula.latest("web")["id"])
    nebula.settle()  # r-2's objects are removed

    spent = int(ROUTE_ACTIVATION_TIMEOUT.total_seconds())
    error = (
        f"Kubernetes API could not apply Service/web in {staging.namespace}: "
        f"{status} {reason}: injected fault"
    )
    assert (failed["state"], failed["blocker"], failed["message"]) == (
        "failed",
        "route-activation",
        f"The API kept refusing to repoint web for {spent}s ({error}). r-1 keeps serving.",
    )
    # Retried until the timeout, about every second (on a busy machine a retry or two fewer).
    assert refusal.hits >= min(2, spent)
    assert staging.get("Service", "web") == stable  # still selecting r-1, not even rewritten
    assert staging.names("Deployment") == {"web-r1"}


def test_a_selector_patch_forbidden_fails_with_route_activation_at_once(
    web_on_r1: KubeNebula,
    git_repo: GitRepo,
    fault_proxy: FaultProxy,
    staging: Live,
) -> None:
    nebula = web_on_r1
    refusal = fault_proxy.fail(
        "PATCH", rf"/namespaces/{staging.namespace}/services/web\?", status=403, times=None
    )
    nebula.push(git_repo, projects.web_only(projects.WEB_2), "web 2")

    failed = nebula.settle_deployment(nebula.latest("web")["id"])
    nebula.settle()

    assert (failed["state"], failed["blocker"], failed["message"]) == (
        "failed",
        "route-activation",
        f"Kubernetes API refused to apply Service/web in {staging.namespace}: "
        "403 Forbidden: injected fault. r-1 keeps serving.",
    )
    assert refusal.hits == 1
    assert staging.selector("web")["nebula.dev/release"] == "r-1"


def test_an_unreachable_api_holds_the_deployment_with_delivery_until_it_is_back(
    web_on_r1: KubeNebula,
    git_repo: GitRepo,
    fault_proxy: FaultProxy,
    staging: Live,
) -> None:
    nebula = web_on_r1
    nebula.push(git_repo, projects.web_only(projects.WEB_2), "web 2")
    deployment = nebula.latest("web")["id"]
    nebula.hold_at(deployment, "qualifying")

    fault_proxy.unreachable()
    nebula.settle(
        lambda: nebula.units()[("staging", "web")]["deployment"]["blocker"] is not None, timeout=15
    )
    held = nebula.units()[("staging", "web")]["deployment"]
    assert (held["state"], held["blocker"]) == ("qualifying", "delivery")
    assert held["message"].startswith(
        "The cluster cannot be reached (Kubernetes API could not be reached to read "
        f"Deployment/web-r2 in {staging.namespace}: "
    ), held["message"]
    assert held["message"].endswith("); r-1 keeps serving."), held["message"]

    # A reconciler started meanwhile knows nothing of the server yet (no discovery cached).
    nebula.ctx.clusters.close()
    nebula.ctx.clusters = Clusters(
        nebula.ctx.settings, nebula.ctx.db, nebula.ctx.clock, nebula.ctx.vault
    )
    for _ in range(3):
        nebula.tick()
    held = nebula.units()[("staging", "web")]["deployment"]
    assert (held["state"], held["blocker"]) == ("qualifying", "delivery")
    assert held["message"].startswith(
        "The cluster cannot be reached (Kubernetes API could not "
        "be reached to discover the core API versions: "
    )

    fault_proxy.reachable()
    done = nebula.settle_deployment(deployment)

    assert (done["state"], done["blocker"]) == ("healthy", None)
    assert staging.selector("web")["nebula.dev/release"] == "r-2"
    assert staging.names("Deployment") == {"web-r2"}
