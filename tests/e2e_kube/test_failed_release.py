"""A release whose image cannot be pulled ends `failed` with `image-pull` and changes nothing
the previous release serves with; a rollback then brings an older release back, on the real
API server."""

from __future__ import annotations

import pytest

from tests.e2e_kube import projects
from tests.e2e_kube.conftest import DIRECT, PodServer
from tests.e2e_kube.installation import KubeNebula
from tests.e2e_kube.live import Live
from tests.infra.kubelet import TestKubelet
from tests.infra.podstatus import Behaviour
from tests.plugins.git import GitRepo

pytestmark = pytest.mark.kube

BROKEN = projects.image("web", "broken")


def test_an_image_that_cannot_be_pulled_fails_and_leaves_the_serving_release_alone(
    kube_nebula: KubeNebula,
    git_repo: GitRepo,
    kubelet: TestKubelet,
    pod_server: PodServer,
    staging: Live,
) -> None:
    for good in (projects.WEB, projects.WEB_2):
        kubelet.script(good, Behaviour.RUNNING, serve_port=pod_server.port)
    kubelet.script(BROKEN, Behaviour.IMAGE_PULL)
    kube_nebula.first_deploy(git_repo, projects.web_only(), {"staging": DIRECT["staging"]})
    kube_nebula.push(git_repo, projects.web_only(projects.WEB_2), "web 2")
    kube_nebula.settle()
    assert staging.names("Deployment") == {"web-r2"}  # r-1 drained
    kube_nebula.settle(staging.settled)
    serving = staging.get("Deployment", "web-r2")
    stable = staging.get("Service", "web")
    assert serving is not None and stable is not None

    kube_nebula.push(git_repo, projects.web_only(BROKEN), "web 3, which cannot be pulled")
    failed = kube_nebula.settle_deployment(kube_nebula.latest("web")["id"])
    kube_nebula.settle()  # the failed release's objects are removed

    assert (failed["release"], failed["state"], failed["blocker"]) == (
        "r-3",
        "failed",
        "image-pull",
    )
    assert failed["message"].startswith("ErrImagePull on pod web-r3-"), failed["message"]
    assert failed["message"].endswith(". r-2 keeps serving."), failed["message"]
    web = kube_nebula.units()[("staging", "web")]
    assert (web["active_release"], web["deployment"]["state"], web["deployment"]["blocker"]) == (
        "r-2",
        "failed",
        "image-pull",
    )
    # Read from the API: what serves was not touched, not even rewritten to the same value.
    after = staging.get("Deployment", "web-r2")
    assert after is not None
    assert after["metadata"]["resourceVersion"] == serving["metadata"]["resourceVersion"]
    assert after["spec"] == serving["spec"]
    assert staging.get("Service", "web") == stable
    assert stable["spec"]["selector"]["nebula.dev/release"] == "r-2"
    assert not {
        n
        for n in staging.names("Deployment") | staging.names("Service") | staging.names("ConfigMap")
        if n.startswith("web-r3")
    }

    kube_nebula.ok(f"rollback {kube_nebula.project} web --env staging")
    back = kube_nebula.settle_deployment(kube_nebula.latest("web")["id"])
    kube_nebula.settle()

    assert (back["release"], back["kind"], back["state"]) == ("r-1", "rollback", "healthy")
    assert kube_nebula.units()[("staging", "web")]["active_release"] == "r-1"
    assert staging.selector("web")["nebula.dev/release"] == "r-1"
    assert staging.names("Deployment") == {"web-r1"}
    assert staging.names("Service") == {"web", "web-r1"}
