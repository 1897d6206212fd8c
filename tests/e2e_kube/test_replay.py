"""A stage replayed after the reconciler died between its cluster call and its commit applies
the same objects again, and the API server sees no change: every resourceVersion stays."""

from __future__ import annotations

import pytest

from tests.e2e_kube import projects
from tests.e2e_kube.conftest import DIRECT, PodServer
from tests.e2e_kube.installation import Crash, KubeNebula
from tests.e2e_kube.live import Live
from tests.infra.kubelet import TestKubelet
from tests.infra.podstatus import Behaviour
from tests.infra.waiting import wait_for
from tests.plugins.git import GitRepo

pytestmark = pytest.mark.kube

# (the cluster call after which the reconciler dies, the state it then resumes in,
#  the state the replayed step moves it to)
CRASHES = [
    ("admit", "admitted", "starting"),
    ("start", "starting", "qualifying"),
    ("activate", "activating", "draining"),
]


def test_stages_replayed_after_a_crash_change_no_resource_version(
    kube_nebula: KubeNebula,
    git_repo: GitRepo,
    kubelet: TestKubelet,
    pod_server: PodServer,
    staging: Live,
) -> None:
    kubelet.script(projects.WEB, Behaviour.RUNNING, serve_port=pod_server.port)
    kube_nebula.register(git_repo, projects.web_only(), {"staging": DIRECT["staging"]})
    kube_nebula.poll()
    deployment = kube_nebula.latest("web")["id"]

    for call, resumed_in, replayed_to in CRASHES:
        with kube_nebula.crashing_after(call, "web"), pytest.raises(Crash):
            kube_nebula.settle(lambda: False, timeout=30)
        # The call's effect is on the cluster; the step that made it was never committed.
        assert kube_nebula.state(deployment) == resumed_in
        # Controllers done writing status (without ticking): only a replay could change it.
        wait_for(staging.settled, "the controllers to settle")
        before = staging.versions()

        kube_nebula.tick()

        assert kube_nebula.state(deployment) == replayed_to, call
        assert staging.versions() == before, call

    done = kube_nebula.settle_deployment(deployment)
    assert (done["release"], done["state"]) == ("r-1", "healthy")
    assert staging.selector("web")["nebula.dev/release"] == "r-1"
