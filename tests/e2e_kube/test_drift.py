"""Live state on the real API server: changes made with the official client under another field
manager (a scale, an env var, a deleted stable Service) are drift at the first check after
them, ``nebula diff`` shows them, self-heal puts them back so that field manager ``nebula``
owns the fields again, and an annotation another manager adds is no drift."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e_kube import projects
from tests.e2e_kube.conftest import DIRECT, PodServer, kube_nebula_with
from tests.e2e_kube.installation import KubeNebula
from tests.e2e_kube.live import Live
from tests.infra import outofband
from tests.infra.kubelet import TestKubelet
from tests.infra.kubeserver import KubeAPI
from tests.infra.podstatus import Behaviour
from tests.plugins.git import GitRepo

pytestmark = pytest.mark.kube

INTERVAL = timedelta(seconds=4)  # NEBULA_DRIFT_INTERVAL here, so a test waits seconds


@pytest.fixture
def nebula(
    tmp_path: Path, kubeconfig: Path, kube_api: KubeAPI, kubelet: TestKubelet, project: str
) -> Iterator[KubeNebula]:
    yield from kube_nebula_with(tmp_path, kubeconfig, kube_api, project, drift_interval=INTERVAL)


@pytest.fixture
def official(kube_api: KubeAPI) -> Iterator[client.ApiClient]:
    with kube_api.api_client() as api:
        yield api


def deploy(
    nebula: KubeNebula, git_repo: GitRepo, kubelet: TestKubelet, pod: PodServer, *, heal: bool
) -> None:
    kubelet.script(projects.WEB, Behaviour.RUNNING, serve_port=pod.port)
    nebula.first_deploy(
        git_repo, projects.web_only(replicas=2, self_heal=heal), {"staging": DIRECT["staging"]}
    )
    web = nebula.units()[("staging", "web")]
    assert (web["sync"], web["drift"]) == ("synced", []), web  # checked once it went healthy


def web(nebula: KubeNebula) -> dict[str, Any]:
    return nebula.units()[("staging", "web")]


def next_check(nebula: KubeNebula) -> dict[str, Any]:
    """Tick in real time until the next drift check of web; its status then."""
    before = web(nebula)["drift_checked_at"]
    found: dict[str, Any] = {}

    def checked() -> bool:
        found.update(web(nebula))
        return bool(found["drift_checked_at"] != before)

    nebula.settle(checked, timeout=INTERVAL.total_seconds() + 20)
    return found


def drift_events(nebula: KubeNebula) -> list[tuple[str | None, str | None]]:
    return [
        (kind, message)
        for kind, message in nebula.kind_events()
        if kind in ("unit.drift", "unit.self-heal")
    ]


def test_changes_behind_nebulas_back_are_drift_at_the_next_check_and_shown_by_diff(
    nebula: KubeNebula,
    git_repo: GitRepo,
    kubelet: TestKubelet,
    pod_server: PodServer,
    official: client.ApiClient,
    staging: Live,
) -> None:
    deploy(nebula, git_repo, kubelet, pod_server, heal=False)
    ns = staging.namespace

    outofband.edit(official, ns, "Deployment/web-r1", "metadata.annotations.team", "payments")
    assert next_check(nebula)["sync"] == "synced"  # another manager's annotation: no drift

    outofband.edit(official, ns, "Deployment/web-r1", "spec.replicas", 5)
    outofband.edit(official, ns, "ConfigMap/web-r1-vars", "data.LOG_LEVEL", "debug")
    outofband.delete(official, ns, "Service/web")
    found = next_check(nebula)  # the first check after the changes sees them all

    assert (found["sync"], found["drift"]) == (
        "drifted",
        [
            {
                "object": "ConfigMap/web-r1-vars",
                "path": "data.LOG_LEVEL",
                "live": "debug",
                "desired": "info",
            },
            {"object": "Deployment/web-r1", "path": "spec.replicas", "live": "5", "desired": "2"},
            {"object": "Service/web", "missing": True},
        ],
    )
    assert drift_events(nebula) == [
        (
            "unit.drift",
            "Drift: ConfigMap/web-r1-vars data.LOG_LEVEL is debug, release r-1 says info "
            "(and 2 more differences)",
        )
    ]
    diff = nebula.cli(f"diff {nebula.project} --env staging")
    assert diff.code == 1, diff.err
    assert "--- live/Deployment/web-r1\n+++ r-1/Deployment/web-r1\n" in diff.out
    assert "\n-  replicas: 5\n+  replicas: 2\n" in diff.out
    assert "\n-  LOG_LEVEL: debug\n+  LOG_LEVEL: info\n" in diff.out
    assert "--- live/Service/web\n+++ r-1/Service/web\n@@ -0,0 +1," in diff.out
    # staging has no self_heal: nothing was put back
    deployment = staging.get("Deployment", "web-r1")
    assert deployment is not None and deployment["spec"]["replicas"] == 5
    assert staging.get("Service", "web") is None
    assert outofband.owners(deployment, "spec.replicas") == {"kubectl-edit (Update)"}


def test_self_heal_gives_the_fields_back_to_nebula_and_keeps_other_managers_fields(
    nebula: KubeNebula,
    git_repo: GitRepo,
    kubelet: TestKubelet,
    pod_server: PodServer,
    official: client.ApiClient,
    staging: Live,
) -> None:
    deploy(nebula, git_repo, kubelet, pod_server, heal=True)
    ns = staging.namespace
    outofband.edit(official, ns, "Deployment/web-r1", "metadata.annotations.team", "payments")
    outofband.edit(official, ns, "Deployment/web-r1", "spec.replicas", 5)
    outofband.edit(official, ns, "ConfigMap/web-r1-vars", "data.LOG_LEVEL", "debug")
    outofband.delete(official, ns, "Service/web")

    found = next_check(nebula)

    assert (found["sync"], found["drift"]) == ("synced", [])
    assert [message for _, message in drift_events(nebula)][1:] == [
        "Self-heal: re-applied ConfigMap/web-r1-vars (data.LOG_LEVEL debug -> info); "
        "Deployment/web-r1 (spec.replicas 5 -> 2); Service/web (was missing)",
        "Drift cleared",
    ]
    deployment = staging.get("Deployment", "web-r1")
    assert deployment is not None
    assert deployment["spec"]["replicas"] == 2
    assert outofband.owners(deployment, "spec.replicas") == {"nebula (Apply)"}
    assert deployment["metadata"]["annotations"]["team"] == "payments"  # not Nebula's: kept
    variables = staging.get("ConfigMap", "web-r1-vars")
    assert variables is not None and variables["data"]["LOG_LEVEL"] == "info"
    assert outofband.owners(variables, "data.LOG_LEVEL") == {"nebula (Apply)"}
    assert staging.selector("web") == {
        "nebula.dev/service": "web",
        "nebula.dev/process": "web",
        "nebula.dev/release": "r-1",
    }
    assert [d["release"] for d in nebula.deployments()] == ["r-1"]  # no release, no deployment
    assert nebula.cli(f"diff {nebula.project}").code == 0
