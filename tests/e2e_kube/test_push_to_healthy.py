"""A push goes to `healthy` in two environments on the real API server: what `nebula status`
says, and what the API server holds (names, labels, the stable Service's selector, and field
manager `nebula` owning every object)."""

from __future__ import annotations

import pytest

from tests.e2e_kube import projects
from tests.e2e_kube.conftest import DIRECT, PodServer
from tests.e2e_kube.installation import KubeNebula
from tests.e2e_kube.live import Live, applies, owners
from tests.infra.kubelet import TestKubelet
from tests.infra.podstatus import Behaviour
from tests.plugins.git import GitRepo

pytestmark = pytest.mark.kube

# What a release of the project puts in each environment's namespace (interfaces.md).
OBJECTS = {
    ("Namespace", "{ns}"),
    ("StatefulSet", "db"),
    ("Service", "db"),
    ("Secret", "db-credentials"),
    ("Deployment", "web-r1"),
    ("Service", "web-r1"),
    ("ConfigMap", "web-r1-vars"),
    ("Service", "web"),
    ("Deployment", "worker-r1"),
    ("ConfigMap", "worker-r1-vars"),
}


def test_a_push_goes_healthy_in_two_environments(
    kube_nebula: KubeNebula,
    git_repo: GitRepo,
    kubelet: TestKubelet,
    pod_server: PodServer,
    staging: Live,
    production: Live,
) -> None:
    kubelet.script(projects.WEB, Behaviour.RUNNING, serve_port=pod_server.port)
    kube_nebula.register(git_repo, projects.project(), DIRECT)
    kube_nebula.ok("member add alice --role admin")

    kube_nebula.settle()  # staging deploys; protected production waits for its approval
    [approval] = [a for a in kube_nebula.json("approvals")["approvals"] if a["state"] == "pending"]
    assert approval["environment"] == "production"
    kube_nebula.ok(f"approve {approval['id']} --as alice")
    kube_nebula.settle()

    status = kube_nebula.status()
    assert (status["blocker"], status["commit"]) == (None, git_repo.head())
    everything = {(env, service) for env in DIRECT for service in ("db", "web", "worker")}
    # `status` shows a unit's deployment only while in flight or when it did not go healthy;
    # each was checked against the live objects once healthy, and what the API server defaults
    # (a StatefulSet's claim templates, a Service's cluster IP ...) is no drift.
    assert {
        key: (unit["status"], unit["active_release"], unit["deployment"], unit["sync"])
        for key, unit in kube_nebula.units().items()
    } == dict.fromkeys(everything, ("active", "r-1", None, "synced"))
    assert {
        (d["environment"], d["service"]): (d["release"], d["state"], d["blocker"])
        for d in kube_nebula.deployments()
    } == dict.fromkeys(everything, ("r-1", "healthy", None))
    # web qualified through the API server's service proxy, which reached "its pod" here.
    assert "/healthz" in pod_server.paths

    for live in (staging, production):
        env = live.namespace.rsplit("-", 1)[1]
        applied = live.applied()
        assert set(applied) == {(kind, name.format(ns=live.namespace)) for kind, name in OBJECTS}
        for (kind, name), obj in applied.items():
            assert applies(obj) == ["nebula"], (kind, name, obj["metadata"]["managedFields"])
            if kind != "Namespace":  # its spec is the API server's defaulting only
                content = "data" if kind in ("ConfigMap", "Secret") else "spec"
                assert owners(obj, content) == {"nebula"}, (kind, name, content)
        web = applied[("Deployment", "web-r1")]
        assert web["metadata"]["labels"] == {
            "app.kubernetes.io/managed-by": "nebula",
            "nebula.dev/project": kube_nebula.project,
            "nebula.dev/environment": env,
            "nebula.dev/service": "web",
            "nebula.dev/release": "r-1",
            "nebula.dev/process": "web",
        }
        # The stable Service selects what the release's own Service selects: r-1's pods.
        assert (
            live.selector("web")
            == live.selector("web-r1")
            == {
                "nebula.dev/service": "web",
                "nebula.dev/process": "web",
                "nebula.dev/release": "r-1",
            }
        )
