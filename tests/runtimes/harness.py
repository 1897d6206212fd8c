"""One test harness per runtime, so the contract suite runs the same tests on both.

A harness owns a cluster and knows how to make that runtime misbehave the way a test asks
(an image that cannot be pulled, a release command that fails ...) and how to let time pass:
the simulated cluster moves with a fake clock, the Kubernetes one with the real control plane
(its controllers and the test kubelet run in real time, so the harness polls).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from datetime import timedelta
from http.server import ThreadingHTTPServer
from typing import Any, Protocol, TypeVar

from kubernetes import client

from reconciler.clock import FakeClock
from reconciler.core.states import Blocker
from reconciler.runtimes import tampering
from reconciler.runtimes.cluster import Cluster, ReleaseObjects
from reconciler.runtimes.kubernetes import KubernetesCluster
from reconciler.runtimes.simulated import SimulatedCluster
from tests.infra import cnpg, outofband
from tests.infra.faultproxy import FaultProxy
from tests.infra.kubelet import TestKubelet
from tests.infra.kuberest import KubeRest, KubeRestError
from tests.infra.podstatus import Behaviour
from tests.infra.quiet import QuietHandler
from tests.runtimes import releases
from tests.runtimes.releases import Service

T = TypeVar("T")
SIMULATED_DELAY = timedelta(seconds=1)

# kind -> API path of its collection in a namespace
COLLECTIONS = {
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "CronJob": "/apis/batch/v1beta1/namespaces/{ns}/cronjobs",
    "Service": "/api/v1/namespaces/{ns}/services",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "PodDisruptionBudget": "/apis/policy/v1beta1/namespaces/{ns}/poddisruptionbudgets",
    "Cluster": cnpg.CLUSTERS,
}


class Harness(Protocol):
    name: str
    project: str
    cluster: Cluster

    def release(self, number: int, service: Service, unit: str = "api") -> ReleaseObjects: ...

    def fail(self, objects: ReleaseObjects, blocker: Blocker, logs: str = "") -> None:
        """The release's image (or its release command) fails the way ``blocker`` names."""

    def hang_release_command(self, objects: ReleaseObjects) -> None: ...

    def until(self, observe: Callable[[], T], done: Callable[[T], bool], what: str) -> T: ...

    def unreachable(self) -> None: ...

    def reachable(self) -> None: ...

    def names(self, kind: str) -> set[str]:
        """Names of the ``kind`` objects in the project's namespace (not being deleted)."""

    def edit(self, objects: ReleaseObjects, ref: str, path: str, value: Any) -> None:
        """Change a live object behind Nebula's back (another field manager, on Kubernetes)."""

    def delete(self, objects: ReleaseObjects, ref: str) -> None:
        """Delete a live object behind Nebula's back."""

    def cloudnative_pg(self, present: bool) -> AbstractContextManager[None]:
        """While inside: the CloudNativePG operator is on the cluster (a Cluster's instances
        get ready), or it is not (the Cluster kind is not served)."""


class SimulatedHarness:
    name = "simulated"

    def __init__(self, cluster: SimulatedCluster, clock: FakeClock, project: str) -> None:
        self.cluster = cluster
        self.clock = clock
        self.project = project

    def release(self, number: int, service: Service, unit: str = "api") -> ReleaseObjects:
        return releases.release_objects(self.project, number, service, unit=unit)

    def fail(self, objects: ReleaseObjects, blocker: Blocker, logs: str = "") -> None:
        self.cluster.faults[objects.image] = blocker

    def hang_release_command(self, objects: ReleaseObjects) -> None:
        # The simulated command takes `delay`: make it longer than the command's timeout.
        self.cluster.delay = timedelta(seconds=objects.release_command_timeout + 60)

    def until(self, observe: Callable[[], T], done: Callable[[T], bool], what: str) -> T:
        for _ in range(600):
            value = observe()
            if done(value):
                return value
            self.clock.advance(SIMULATED_DELAY.total_seconds())
        raise AssertionError(f"{what}: still {value!r} after 600 simulated seconds")

    def unreachable(self) -> None:
        self.cluster.set_reachable(False)

    def reachable(self) -> None:
        self.cluster.set_reachable(True)

    def names(self, kind: str) -> set[str]:
        namespace = f"{self.project}-staging"
        found = self.cluster.objects("" if kind == "Namespace" else namespace)
        return {str(m["metadata"]["name"]) for m in found if m.get("kind") == kind}

    def edit(self, objects: ReleaseObjects, ref: str, path: str, value: Any) -> None:
        tampering.edit(self.cluster, objects.namespace, ref, path, value)

    def delete(self, objects: ReleaseObjects, ref: str) -> None:
        tampering.delete(self.cluster, objects.namespace, ref)

    @contextmanager
    def cloudnative_pg(self, present: bool) -> Iterator[None]:
        absent = frozenset() if present else frozenset({f"{self.project}/staging"})
        self.cluster.without_cloudnative_pg = absent
        try:
            yield
        finally:
            self.cluster.without_cloudnative_pg = frozenset()


class KubernetesHarness:
    """The Kubernetes runtime on the real API server, through the fault proxy."""

    name = "kubernetes"

    def __init__(
        self,
        cluster: KubernetesCluster,
        rest: KubeRest,
        kubelet: TestKubelet,
        proxy: FaultProxy,
        project: str,
        http_port: int,
        official: client.ApiClient,
    ) -> None:
        self.cluster = cluster
        self.official = official  # the kubernetes client people use, straight to the API server
        self.rest = rest
        self.kubelet = kubelet
        self.proxy = proxy
        self.project = project
        self.namespace = f"{project}-staging"
        self.http_port = http_port

    def release(self, number: int, service: Service, unit: str = "api") -> ReleaseObjects:
        objects = releases.release_objects(
            self.project, number, service, unit=unit, capabilities=self.cluster.capabilities()
        )
        # The test kubelet scripts pods by image, and a release's Job and Deployment run the
        # same image; the Job gets a stand-in image of its own so each can be scripted apart.
        if objects.release_job is not None:
            job = _with_image(objects.release_job, release_command_image(objects.image))
            objects = replace(objects, release_job=job)
            self.kubelet.script(release_command_image(objects.image), Behaviour.SUCCEED)
        self.kubelet.script(objects.image, Behaviour.RUNNING, serve_port=self.http_port)
        return objects

    def fail(self, objects: ReleaseObjects, blocker: Blocker, logs: str = "") -> None:
        if blocker is Blocker.RELEASE_COMMAND:
            self.kubelet.script(release_command_image(objects.image), Behaviour.FAIL, logs=logs)
        elif blocker is Blocker.ROUTE_ACTIVATION:
            self.proxy.fail(
                "PATCH",
                rf"/namespaces/{objects.namespace}/services/{objects.unit}\?",
                status=409,
                times=None,
                message="Operation cannot be fulfilled",
            )
        else:
            behaviour = {
                Blocker.IMAGE_PULL: Behaviour.IMAGE_PULL,
                Blocker.CAPACITY: Behaviour.UNSCHEDULABLE,
                Blocker.READINESS: Behaviour.CRASH_LOOP,
            }[blocker]
            self.kubelet.script(objects.image, behaviour)

    def hang_release_command(self, objects: ReleaseObjects) -> None:
        self.kubelet.script(release_command_image(objects.image), Behaviour.NEVER_READY)

    def until(
        self, observe: Callable[[], T], done: Callable[[T], bool], what: str, timeout: float = 40.0
    ) -> T:
        deadline = time.monotonic() + timeout
        while True:
            value = observe()
            if done(value):
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{what}: still {value!r} after {timeout:.0f}s; "
                    f"kubelet errors: {self.kubelet.errors[-3:]}"
                )
            time.sleep(0.2)

    def unreachable(self) -> None:
        self.proxy.unreachable()

    def reachable(self) -> None:
        self.proxy.reachable()

    def names(self, kind: str) -> set[str]:
        if kind == "Namespace":
            try:
                self.rest.get(f"/api/v1/namespaces/{self.namespace}")
            except KubeRestError as exc:
                if exc.status == 404:
                    return set()
                raise
            return {self.namespace}
        items = self.rest.get(COLLECTIONS[kind].format(ns=self.namespace))["items"]
        return {i["metadata"]["name"] for i in items if not i["metadata"].get("deletionTimestamp")}

    def get(self, kind: str, name: str) -> Any:
        return self.rest.get(f"{COLLECTIONS[kind].format(ns=self.namespace)}/{name}")

    def edit(self, objects: ReleaseObjects, ref: str, path: str, value: Any) -> None:
        outofband.edit(self.official, objects.namespace, ref, path, value)

    def delete(self, objects: ReleaseObjects, ref: str) -> None:
        outofband.delete(self.official, objects.namespace, ref)

    @contextmanager
    def cloudnative_pg(self, present: bool) -> Iterator[None]:
        if not present:
            # The CRD stays: deleting it makes the API server reset connections for a while.
            # Through the fault proxy the group version is simply not there.
            self.proxy.fail(
                "GET", rf"^/apis/{cnpg.GROUP}/v1(\?|$)", status=404, times=None, message="not found"
            )
            self.cluster.discovery.forget()
            try:
                yield
            finally:
                self.proxy.clear()
                self.cluster.discovery.forget()
            return
        cnpg.install(self.rest)
        with cnpg.StandInOperator(self.rest, self.namespace).running():
            yield


def release_command_image(image: str) -> str:
    repository = image.split("@", 1)[0]
    digest = hashlib.sha256(f"{image}#release-command".encode()).hexdigest()
    return f"{repository}-migrate@sha256:{digest}"


def _with_image(job: dict[str, Any], image: str) -> dict[str, Any]:
    pod = job["spec"]["template"]["spec"]
    containers = [{**c, "image": image} for c in pod["containers"]]
    template = {**job["spec"]["template"], "spec": {**pod, "containers": containers}}
    return {**job, "spec": {**job["spec"], "template": template}}


@contextmanager
def http_server(status: Callable[[str], int] = lambda path: 200) -> Iterator[int]:
    """A loopback HTTP server standing in for the pods' process; yields its port."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            code = status(self.path)
            self.answer(code, f"{code} {self.path}\n".encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
