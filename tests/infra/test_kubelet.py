"""The test kubelet with the real controller manager: Deployments and Jobs get their status
from what the kubelet reports, and each scripted failure shows where Kubernetes shows it."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.infra.kubelet import TestKubelet
from tests.infra.kubeserver import KubeAPI
from tests.infra.podstatus import Behaviour
from tests.infra.quiet import QuietHandler
from tests.infra.waiting import wait_for

pytestmark = pytest.mark.kube


def deployment(name: str, image: str, replicas: int = 1, cpu: str = "100m") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": image,
                            "ports": [{"containerPort": 8080}],
                            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                        }
                    ]
                },
            },
        },
    }


def job(name: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "release", "image": image}],
                }
            },
        },
    }


@pytest.fixture
def api(kube_api: KubeAPI) -> Iterator[client.ApiClient]:
    with kube_api.api_client() as api_client:
        yield api_client


def pods_of(api: client.ApiClient, namespace: str, app: str) -> list[client.V1Pod]:
    pods: list[client.V1Pod] = (
        client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=f"app={app}").items
    )
    return pods


def events_for(api: client.ApiClient, namespace: str, pod: str) -> list[tuple[str, str]]:
    events = (
        client.CoreV1Api(api)
        .list_namespaced_event(namespace, field_selector=f"involvedObject.name={pod}")
        .items
    )
    return [(e.reason, e.message) for e in events]


def test_deployment_gets_ready_replicas(
    api: client.ApiClient, kube_namespace: str, kubelet: TestKubelet
) -> None:
    apps = client.AppsV1Api(api)
    apps.create_namespaced_deployment(kube_namespace, deployment("web", "shop/web:1", replicas=2))

    def ready() -> client.V1DeploymentStatus | None:
        status = apps.read_namespaced_deployment_status("web", kube_namespace).status
        return status if status.ready_replicas == 2 and status.available_replicas == 2 else None

    status = wait_for(ready, "2 ready replicas of web")
    assert {c.type: c.status for c in status.conditions}["Available"] == "True"
    pods = pods_of(api, kube_namespace, "web")
    assert [p.spec.node_name for p in pods] == ["test-node", "test-node"]
    assert all(p.status.container_statuses[0].ready for p in pods)


def test_jobs_succeed_or_fail_as_scripted(
    api: client.ApiClient, kube_namespace: str, kubelet: TestKubelet
) -> None:
    kubelet.script("shop/migrate:ok", Behaviour.SUCCEED)
    kubelet.script("shop/migrate:broken", Behaviour.FAIL)
    batch = client.BatchV1Api(api)
    batch.create_namespaced_job(kube_namespace, job("migrate-ok", "shop/migrate:ok"))
    batch.create_namespaced_job(kube_namespace, job("migrate-broken", "shop/migrate:broken"))

    def finished(name: str) -> dict[str, str]:
        conditions = batch.read_namespaced_job_status(name, kube_namespace).status.conditions
        return {c.type: c.status for c in conditions or []}

    assert wait_for(lambda: finished("migrate-ok"), "migrate-ok to finish") == {"Complete": "True"}
    assert wait_for(lambda: finished("migrate-broken"), "migrate-broken to finish") == {
        "Failed": "True"
    }
    assert batch.read_namespaced_job_status("migrate-broken", kube_namespace).status.failed == 1


def test_image_pull_failure_shows_on_the_container(
    api: client.ApiClient, kube_namespace: str, kubelet: TestKubelet
) -> None:
    kubelet.script("shop/web:missing", Behaviour.IMAGE_PULL)
    client.AppsV1Api(api).create_namespaced_deployment(
        kube_namespace, deployment("web", "shop/web:missing")
    )

    def waiting_reason() -> str | None:
        pods = pods_of(api, kube_namespace, "web")
        statuses = pods[0].status.container_statuses if pods else None
        return statuses[0].state.waiting.reason if statuses else None

    assert wait_for(waiting_reason, "a waiting reason") in ("ErrImagePull", "ImagePullBackOff")
    assert wait_for(lambda: waiting_reason() == "ImagePullBackOff", "the back-off")
    pod = pods_of(api, kube_namespace, "web")[0]
    assert pod.status.phase == "Pending"
    assert (
        "Failed",
        "Failed to pull image: rpc error: code = NotFound desc = failed to pull "
        'and unpack image "shop/web:missing": not found',
    ) in events_for(api, kube_namespace, pod.metadata.name)


def test_unschedulable_pod_stays_pending_with_the_scheduler_event(
    api: client.ApiClient, kube_namespace: str, kubelet: TestKubelet
) -> None:
    kubelet.script("shop/web:huge", Behaviour.UNSCHEDULABLE)
    client.AppsV1Api(api).create_namespaced_deployment(
        kube_namespace, deployment("web", "shop/web:huge", cpu="64")
    )

    def scheduled_condition() -> client.V1PodCondition | None:
        pods = pods_of(api, kube_namespace, "web")
        conditions = pods[0].status.conditions if pods else None
        return conditions[0] if conditions else None

    condition = wait_for(scheduled_condition, "the PodScheduled condition")
    pod = pods_of(api, kube_namespace, "web")[0]
    assert (condition.type, condition.status, condition.reason) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    assert pod.spec.node_name is None
    assert ("FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.") in events_for(
        api, kube_namespace, pod.metadata.name
    )


def test_crash_loop_restarts_and_never_gets_ready(
    api: client.ApiClient, kube_namespace: str, kubelet: TestKubelet
) -> None:
    kubelet.script("shop/web:crashes", Behaviour.CRASH_LOOP, restart_every=0.3)
    client.AppsV1Api(api).create_namespaced_deployment(
        kube_namespace, deployment("web", "shop/web:crashes")
    )

    def restarted_twice() -> client.V1ContainerStatus | None:
        pods = pods_of(api, kube_namespace, "web")
        statuses = pods[0].status.container_statuses if pods else None
        return statuses[0] if statuses and statuses[0].restart_count >= 2 else None

    status = wait_for(restarted_twice, "two restarts")
    assert status.state.waiting.reason == "CrashLoopBackOff"
    assert status.last_state.terminated.exit_code == 1
    assert not status.ready
    dep = client.AppsV1Api(api).read_namespaced_deployment_status("web", kube_namespace)
    assert not dep.status.ready_replicas


def test_pod_logs_come_from_the_script(
    api: client.ApiClient, kube_namespace: str, kubelet: TestKubelet
) -> None:
    kubelet.script("shop/migrate:1", Behaviour.SUCCEED, logs="applying 0001\napplying 0002\n")
    client.BatchV1Api(api).create_namespaced_job(kube_namespace, job("migrate", "shop/migrate:1"))
    core = client.CoreV1Api(api)

    def pod_name() -> str | None:
        pods = core.list_namespaced_pod(kube_namespace, label_selector="job-name=migrate").items
        return pods[0].metadata.name if pods and pods[0].status.phase == "Succeeded" else None

    name = wait_for(pod_name, "the migrate pod to succeed")
    assert core.read_namespaced_pod_log(name, kube_namespace) == "applying 0001\napplying 0002\n"
    assert core.read_namespaced_pod_log(name, kube_namespace, tail_lines=1) == "applying 0002\n"


class _Hello(QuietHandler):
    def do_GET(self) -> None:
        self.answer(200, f"hello from {self.path}".encode())


def test_service_proxy_reaches_a_scripted_pod_server(
    api: client.ApiClient, kube_api: KubeAPI, kube_namespace: str, kubelet: TestKubelet
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    earlier = len(kube_api.network.dials)  # the session's: other tests dial nowhere on purpose
    try:
        kubelet.script("shop/web:2", serve_port=server.server_address[1])
        client.AppsV1Api(api).create_namespaced_deployment(
            kube_namespace, deployment("web", "shop/web:2")
        )
        client.CoreV1Api(api).create_namespaced_service(
            kube_namespace,
            {
                "metadata": {"name": "web"},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
            },
        )
        path = f"/api/v1/namespaces/{kube_namespace}/services/web:80/proxy/healthz"

        def answer() -> str | None:
            try:
                return str(kube_api.rest.get(path))
            except Exception:
                return None

        assert wait_for(answer, "the service proxy to answer") == "hello from /healthz"
        dials = kube_api.network.dials[earlier:]
        assert all(dial.routed for dial in dials if "239.255." in dial.target)
    finally:
        server.shutdown()
        server.server_close()
