"""What a deployment costs the API server, counted by the API server itself
(``apiserver_request_total``, see tests/infra/apimetrics.py): with the watch cache, a
deployment's requests are its writes plus one list and one watch per kind it reads, whatever
time its pods take to become Ready.

Each deployment is the first of its own project (so its own namespace), through the engine,
from the poll that stages it to healthy: nothing it costs is paid by another one.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.e2e_kube import projects
from tests.e2e_kube.conftest import DIRECT, ENVIRONMENTS, PodServer
from tests.e2e_kube.installation import KubeNebula
from tests.infra import apimetrics
from tests.infra.kubelet import TestKubelet
from tests.infra.kuberest import KubeRestError
from tests.infra.kubeserver import KubeAPI
from tests.infra.podstatus import Behaviour
from tests.plugins.git import GitRepoFactory

pytestmark = [pytest.mark.kube, pytest.mark.slow]

MOST_PER_DEPLOYMENT = 25
MOST_RATIO = 1.3
LATE = 20.0  # seconds from binding until the slow release's pods are Ready


def deploy(
    nebula: KubeNebula, repo_name: str, git_repos: GitRepoFactory, kube_api: KubeAPI, image: str
) -> Counter[apimetrics.Series]:
    """Registers a project with a 2-replica ``web`` running ``image`` and settles it healthy;
    the requests the API server counted meanwhile."""
    repo = git_repos.local(repo_name)
    nebula.register(repo, projects.web_only(image, replicas=2), {"staging": DIRECT["staging"]})
    apimetrics.wait_quiet(kube_api.rest)
    before = apimetrics.read(kube_api.rest)
    nebula.settle(timeout=90)
    spent = apimetrics.read(kube_api.rest) - before
    [deployment] = nebula.deployments()
    assert (deployment["state"], deployment["blocker"]) == ("healthy", None), deployment
    return spent


def test_a_deployment_costs_the_same_whether_ready_at_once_or_after_20_seconds(
    kube_nebula: KubeNebula,
    git_repos: GitRepoFactory,
    kubelet: TestKubelet,
    pod_server: PodServer,
    kube_api: KubeAPI,
) -> None:
    at_once, late = projects.image("web", "at-once"), projects.image("web", "late")
    kubelet.script(at_once, Behaviour.RUNNING, serve_port=pod_server.port)
    kubelet.script(late, Behaviour.RUNNING, serve_port=pod_server.port, start_after=LATE)
    other = KubeNebula(kube_nebula.ctx, f"{kube_nebula.project}x")
    try:
        quick = deploy(kube_nebula, "quick", git_repos, kube_api, at_once)
        slow = deploy(other, "slow", git_repos, kube_api, late)
    finally:
        for env in ENVIRONMENTS:
            try:
                kube_api.rest.delete(f"/api/v1/namespaces/{other.project}-{env}")
            except KubeRestError as exc:
                if exc.status != 404:
                    raise

    shown = f"ready at once: {dict(quick)}\nready after {LATE:.0f} s: {dict(slow)}"
    assert apimetrics.total(quick) <= MOST_PER_DEPLOYMENT, shown
    assert apimetrics.total(slow) <= MOST_PER_DEPLOYMENT, shown
    assert apimetrics.total(slow) <= MOST_RATIO * apimetrics.total(quick), shown
    # Every read after the first of each kind came from the watch cache.
    reads = sum(n for s, n in slow.items() if s.verb in ("GET", "LIST") and s.resource == "pods")
    assert reads <= 2, shown  # the first check's direct list and the informer's list
