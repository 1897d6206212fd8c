"""Clusters and credentials (1.2), end to end through Nebula.

- Two real API servers: the session's and a second control plane this module starts (with a
  test kubelet of its own). Staging deploys to the first, production to the second; each
  environment's namespace and deployments are on its own cluster only; with the second API
  server stopped only production gets ``delivery`` while staging keeps deploying, and
  ``nebula clusters`` says which cluster answers.
- A kubeconfig user with an ``exec`` credential plugin (tests/infra/execplugin.py: TokenRequest
  tokens, a short reported expiry so that it runs again during a deploy): a failing plugin
  holds the deployment with ``delivery`` and its stderr's last line; no token reaches the disk.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e_kube import projects
from tests.e2e_kube.conftest import PodServer, kube_nebula_with
from tests.e2e_kube.installation import KubeNebula
from tests.e2e_kube.live import Live
from tests.infra.execplugin import FAILURE, JWT_PREFIX, NAME, ExecPlugin
from tests.infra.kubelet import TestKubelet
from tests.infra.kuberest import KubeRest
from tests.infra.kubeserver import ControlPlane, KubeAPI
from tests.infra.podstatus import Behaviour
from tests.infra.processes import StartError
from tests.plugins.git import GitRepo
from tests.plugins.infra import _unavailable

pytestmark = pytest.mark.kube

FIRST, SECOND, EXEC = "cluster-a", "cluster-b", "cluster-a-exec"
ENVIRONMENTS = ("staging", "production")
DRIFT_INTERVAL = timedelta(seconds=4)  # NEBULA_DRIFT_INTERVAL here, so the test waits seconds


@pytest.fixture(scope="module")
def second_plane() -> Iterator[tuple[ControlPlane, TestKubelet]]:
    """Another control plane with its own kubelet, for this module only (about 15 s)."""
    try:
        plane = ControlPlane()
        plane.start()
    except StartError as exc:
        _unavailable("A second Kubernetes API server", str(exc))
    assert plane.api is not None
    rest = KubeRest(plane.api.server, plane.api.token, plane.api.ca_path)
    kubelet = TestKubelet(rest, plane.api.network, plane.workdir)
    kubelet.start()
    kubelet.resume()
    yield plane, kubelet
    kubelet.stop()
    rest.close()
    plane.stop()


def cluster_entry(name: str, api: KubeAPI) -> dict[str, Any]:
    return {
        "name": name,
        "cluster": {"server": api.server, "certificate-authority": str(api.ca_path)},
    }


def write_kubeconfig(path: Path, users: dict[str, tuple[KubeAPI, dict[str, Any]]]) -> Path:
    """One context per entry: its API server and its kubeconfig user; the first is current."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster_entry(name, api) for name, (api, _) in users.items()],
        "users": [{"name": name, "user": user} for name, (_, user) in users.items()],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}} for name in users],
        "current-context": next(iter(users)),
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def namespaces(api: KubeAPI) -> set[str]:
    listed: Any = api.rest.get("/api/v1/namespaces")
    return {n["metadata"]["name"] for n in listed["items"]}


def clusters(nebula: KubeNebula) -> dict[str, dict[str, Any]]:
    rows = json.loads(nebula.ok("clusters -o json").out)["clusters"]
    return {row["context"]: row for row in rows}


def two_environments(web: str = projects.WEB) -> str:
    return projects.project(web=web, worker=None, database=False, protected=())


def test_each_environment_deploys_to_its_own_cluster_and_one_down_holds_only_its_own(
    tmp_path: Path,
    kube_api: KubeAPI,
    kubelet: TestKubelet,
    second_plane: tuple[ControlPlane, TestKubelet],
    pod_server: PodServer,
    git_repo: GitRepo,
    project: str,
) -> None:
    plane, second_kubelet = second_plane
    second = plane.api
    assert second is not None
    for image in (projects.WEB, projects.WEB_2):
        kubelet.script(image, Behaviour.RUNNING, serve_port=pod_server.port)
        second_kubelet.script(image, Behaviour.RUNNING, serve_port=pod_server.port)
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig",
        {FIRST: (kube_api, {"token": kube_api.token}), SECOND: (second, {"token": second.token})},
    )
    nebulas = kube_nebula_with(
        tmp_path, kubeconfig, kube_api, project, drift_interval=DRIFT_INTERVAL
    )
    nebula = next(nebulas)
    try:
        nebula.first_deploy(git_repo, two_environments(), {"staging": FIRST, "production": SECOND})

        staging_ns, production_ns = f"{project}-staging", f"{project}-production"
        assert staging_ns in namespaces(kube_api) and production_ns not in namespaces(kube_api)
        assert production_ns in namespaces(second) and staging_ns not in namespaces(second)
        assert Live(kube_api.rest, staging_ns).names("Deployment") == {"web-r1"}
        assert Live(second.rest, production_ns).names("Deployment") == {"web-r1"}
        assert clusters(nebula) == {
            FIRST: {
                "context": FIRST,
                "server": kube_api.server,
                "version": "v1.20.2",
                "reachable": True,
                "error": None,
                "credentials": "token",
                "environments": [f"{project}/staging"],
            },
            SECOND: {
                "context": SECOND,
                "server": second.server,
                "version": "v1.20.2",
                "reachable": True,
                "error": None,
                "credentials": "token",
                "environments": [f"{project}/production"],
            },
        }

        # Drift is read from each environment's own cluster (and its own watch cache): a scale
        # behind Nebula's back on the second one drifts production only.
        second.rest.patch(
            f"/apis/apps/v1/namespaces/{production_ns}/deployments/web-r1",
            {"spec": {"replicas": 4}},
        )
        checked = {env: nebula.units()[(env, "web")]["drift_checked_at"] for env in ENVIRONMENTS}

        def both_checked_again() -> bool:
            units = nebula.units()
            return all(units[(e, "web")]["drift_checked_at"] != checked[e] for e in ENVIRONMENTS)

        nebula.settle(both_checked_again, timeout=DRIFT_INTERVAL.total_seconds() + 20)
        units = nebula.units()
        assert (units[("staging", "web")]["sync"], units[("staging", "web")]["drift"]) == (
            "synced",
            [],
        )
        assert units[("production", "web")]["sync"] == "drifted"
        assert {
            "object": "Deployment/web-r1",
            "path": "spec.replicas",
            "live": "4",
            "desired": "1",
        } in units[("production", "web")]["drift"], units[("production", "web")]["drift"]

        plane.stop_api_server()
        nebula.push(git_repo, two_environments(projects.WEB_2), "web 2")
        staging = nebula.latest("web", "staging")["id"]
        done = nebula.settle_deployment(staging)
        nebula.settle(
            lambda: nebula.units()[("production", "web")]["deployment"]["blocker"] is not None,
            timeout=20,
        )

        assert (done["state"], done["blocker"]) == ("healthy", None)
        assert Live(kube_api.rest, staging_ns).names("Deployment") == {"web-r2"}
        held = nebula.units()[("production", "web")]["deployment"]
        assert (held["state"], held["blocker"]) == ("admitted", "delivery"), held
        assert held["message"].startswith(
            "The cluster cannot be reached (Kubernetes API could not be reached to "
        ), held["message"]
        down = clusters(nebula)[SECOND]
        assert (down["reachable"], down["version"], down["environments"]) == (
            False,
            None,
            [f"{project}/production"],
        )
        assert down["error"].startswith(
            "Kubernetes API could not be reached to read the server version: "
        ), down["error"]
        assert clusters(nebula)[FIRST]["reachable"] is True
    finally:
        next(nebulas, None)


def test_an_exec_plugin_signs_nebula_in_and_a_failing_one_holds_its_deployments_with_delivery(
    tmp_path: Path,
    kube_api: KubeAPI,
    kubelet: TestKubelet,
    pod_server: PodServer,
    git_repo: GitRepo,
    project: str,
) -> None:
    plugin = ExecPlugin(tmp_path / "plugin", kube_api)
    plugin.set("mint", lifetime=3)  # each token kept at most 1.5 s
    for image in (projects.WEB, projects.WEB_2):
        kubelet.script(image, Behaviour.RUNNING, serve_port=pod_server.port)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {EXEC: (kube_api, plugin.user())})
    nebulas = kube_nebula_with(tmp_path, kubeconfig, kube_api, project)
    nebula = next(nebulas)
    try:
        nebula.first_deploy(git_repo, projects.web_only(), {"staging": EXEC})
        about = clusters(nebula)[EXEC]
        assert (about["credentials"], about["reachable"]) == ("exec", True)

        plugin.set("fail", lifetime=3)
        time.sleep(1.6)  # the last token is stale: the next request runs the plugin again
        nebula.push(git_repo, projects.web_only(projects.WEB_2), "web 2")
        deployment = nebula.latest("web")["id"]
        nebula.settle(lambda: nebula.show(deployment)["blocker"] is not None, timeout=20)
        held = nebula.show(deployment)
        assert held["blocker"] == "delivery"
        assert held["message"] == (
            f"The cluster cannot be reached (the credential plugin {NAME} of context '{EXEC}' "
            f"exited with status 3: {FAILURE}); r-1 keeps serving."
        )

        failed_at = plugin.runs
        plugin.set("mint", lifetime=600)
        done = nebula.settle_deployment(deployment)
        assert (done["state"], done["blocker"]) == ("healthy", None)
        assert plugin.runs > failed_at  # the failure was not kept: the plugin ran again
    finally:
        next(nebulas, None)

    written = [tmp_path / "state", *tmp_path.glob("nebula.db*")]
    files = [p for top in written for p in ([top] if top.is_file() else top.rglob("*"))]
    assert files and not [p for p in files if p.is_file() and JWT_PREFIX in p.read_bytes()]
