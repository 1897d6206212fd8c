"""A test kubelet: binds pods to one fake node and reports scripted pod status.

The API server built by .ci/build-kube has no scheduler and no kubelet, so without this
pods stay Pending forever. This loop plays both parts through the API, so the real
controller manager computes Deployment, ReplicaSet and Job status from what it reports:

    kubelet.script("registry.example/shop:broken", Behaviour.IMAGE_PULL)
    kubelet.script("registry.example/migrate:1", Behaviour.FAIL, logs="relation exists\\n")

Pods whose images are not scripted become Running and Ready shortly after binding. It also
plays the kubelet's part in deletion (a bound pod is only gone once its kubelet confirms), and
serves container logs on the node's kubelet port, reached by the API server through the pod
network (tests/infra/podnetwork.py).
"""

from __future__ import annotations

import contextlib
import datetime
import secrets
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tests.infra import podstatus
from tests.infra.kubeletlogs import LogServer, serve_logs
from tests.infra.kuberest import KubeRest, KubeRestError
from tests.infra.podnetwork import PodNetwork
from tests.infra.podstatus import Behaviour, Script

JSON = dict[str, Any]
KUBELET_PORT = 10250
CAPACITY = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Pod:
    namespace: str
    name: str
    images: dict[str, str]  # container name -> image
    bound_at: float = 0.0
    started_at: str = ""
    ip: str = ""
    last: podstatus.Reported | None = None
    events: set[str] = field(default_factory=set)
    routes: list[tuple[str, int]] = field(default_factory=list)


class TestKubelet:
    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(
        self,
        rest: KubeRest,
        network: PodNetwork,
        workdir: Path,
        node_name: str = "test-node",
        tick: float = 0.1,
    ) -> None:
        self.rest = rest
        self.network = network
        self.node_name = node_name
        self.node_ip = network.allocate_ip()
        self.tick = tick
        self.errors: list[str] = []
        self._workdir = workdir
        self._scripts: dict[str, Script] = {}
        self._default = Script()
        self._pods: dict[str, _Pod] = {}
        self._lock = threading.Lock()
        self._active = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-kubelet", daemon=True)
        self._logs: LogServer | None = None

    # -- the per-test script ----------------------------------------------------------------

    def script(
        self, image: str, behaviour: Behaviour | str = Behaviour.RUNNING, **options: Any
    ) -> None:
        """Pods whose first scripted container runs `image` behave as told from now on.

        options: start_after, finish_after, restart_every, logs, serve_port (see Script).
        """
        with self._lock:
            self._scripts[image] = Script(Behaviour(behaviour), **options)

    def default(self, behaviour: Behaviour | str = Behaviour.RUNNING, **options: Any) -> None:
        """How pods with no scripted image behave (Running and Ready unless told)."""
        with self._lock:
            self._default = Script(Behaviour(behaviour), **options)

    def reset(self) -> None:
        with self._lock:
            self._scripts.clear()
            self._default = Script()

    def resume(self) -> None:
        """Binds and reports pods (the fixture resumes it for each test that asks for it)."""
        self._active.set()

    def pause(self) -> None:
        """Leaves new pods alone; bound pods are still let go when deleted."""
        self._active.clear()

    def pods_seen(self) -> list[tuple[str, str]]:
        with self._lock:
            return sorted((p.namespace, p.name) for p in self._pods.values())

    def _script_for(self, images: list[str]) -> Script:
        with self._lock:
            for image in images:
                if image in self._scripts:
                    return self._scripts[image]
            return self._default

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._start_log_server()
        self._register_node()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        if self._logs is not None:
            self._logs.close()
        self.rest.close()  # the connection start() used, in this thread

    def _register_node(self) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node_name,
                "labels": {
                    "kubernetes.io/hostname": self.node_name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                },
            },
            "status": {
                "capacity": CAPACITY,
                "allocatable": CAPACITY,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "test kubelet is posting ready status",
                        "lastHeartbeatTime": _now(),
                        "lastTransitionTime": _now(),
                    }
                ],
                "addresses": [{"type": "InternalIP", "address": self.node_ip}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
                "nodeInfo": {
                    "machineID": "",
                    "systemUUID": "",
                    "bootID": "",
                    "kernelVersion": "",
                    "osImage": "test kubelet",
                    "containerRuntimeVersion": "containerd://1.4.0",
                    "kubeletVersion": "v1.20.2",
                    "kubeProxyVersion": "v1.20.2",
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                },
            },
        }
        try:
            self.rest.post("/api/v1/nodes", node)
        except KubeRestError as exc:
            if exc.status != 409:
                raise
            self.rest.patch(f"/api/v1/nodes/{self.node_name}/status", {"status": node["status"]})

    def _start_log_server(self) -> None:
        self._logs = serve_logs(self._workdir, self._logs_of)
        self.network.route(self.node_ip, KUBELET_PORT, self._logs.port)

    def _logs_of(self, namespace: str, pod: str, container: str) -> str | None:
        with self._lock:
            record = next(
                (p for p in self._pods.values() if p.namespace == namespace and p.name == pod), None
            )
        if record is None or container not in record.images:
            return None
        image = record.images[container]
        return self._script_for([image]).logs

    # -- the loop --------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            # Paused, it only lets deleted pods go, which can wait a little longer.
            while not self._stop.wait(self.tick if self._active.is_set() else 5 * self.tick):
                try:
                    self._sync()
                except Exception as exc:  # keep serving; tests can read `errors`
                    self.errors.append(repr(exc))
                    del self.errors[:-50]
        finally:
            self.rest.close()  # this thread's connection; no other thread can close it

    def _sync(self) -> None:
        # resourceVersion=0: served from the API server's watch cache, not a quorum read.
        pods = self.rest.get("/api/v1/pods", query={"resourceVersion": "0"})["items"]
        seen = set()
        for pod in pods:
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            node = pod["spec"].get("nodeName", "")
            try:
                if pod["metadata"].get("deletionTimestamp"):
                    if node == self.node_name:
                        self._let_go(pod)
                elif not self._active.is_set():
                    continue
                elif not node:
                    self._schedule(pod)
                elif node == self.node_name:
                    self._report(pod)
            except KubeRestError as exc:
                if exc.status not in (404, 409):  # gone or changed meanwhile: next tick
                    raise
        with self._lock:
            for uid in set(self._pods) - seen:
                for ip, port in self._pods.pop(uid).routes:
                    self.network.unroute(ip, port)

    def _record(self, pod: JSON) -> _Pod:
        uid = pod["metadata"]["uid"]
        with self._lock:
            record = self._pods.get(uid)
            if record is None:
                images = {c["name"]: c["image"] for c in pod["spec"]["containers"]}
                record = _Pod(pod["metadata"]["namespace"], pod["metadata"]["name"], images)
                self._pods[uid] = record
            return record

    def _schedule(self, pod: JSON) -> None:
        meta = pod["metadata"]
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        record = self._record(pod)
        script = self._script_for(list(record.images.values()))
        if script.behaviour is Behaviour.UNSCHEDULABLE:
            if "FailedScheduling" not in record.events:
                self.rest.patch(
                    f"{path}/status", {"status": podstatus.unschedulable_status(_now())}
                )
                self._event(
                    pod,
                    "FailedScheduling",
                    podstatus.UNSCHEDULABLE_MESSAGE,
                    "Warning",
                    "default-scheduler",
                )
            return
        self.rest.post(
            f"{path}/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": self.node_name},
            },
        )
        record.bound_at = time.monotonic()
        record.started_at = _now()
        self._event(
            pod,
            "Scheduled",
            f"Successfully assigned {meta['namespace']}/{meta['name']} to {self.node_name}",
            "Normal",
            "default-scheduler",
        )

    def _report(self, pod: JSON) -> None:
        record = self._record(pod)
        if not record.bound_at:  # bound by someone else, or before a restart of ours
            record.bound_at = time.monotonic()
            record.started_at = _now()
        if record.last is not None and record.last.phase in ("Succeeded", "Failed"):
            return
        images = [c["image"] for c in pod["spec"]["containers"]]
        script = self._script_for(images)
        if script.behaviour is Behaviour.UNSCHEDULABLE:
            script = replace(script, behaviour=Behaviour.NEVER_READY)
        reported = podstatus.report(script, time.monotonic() - record.bound_at, images)
        if reported == record.last:
            return
        if not record.ip:
            record.ip = self.network.allocate_ip()
        status = podstatus.pod_status(
            reported, pod, record.ip, self.node_ip, _now(), record.started_at
        )
        meta = pod["metadata"]
        self.rest.patch(
            f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status", {"status": status}
        )
        record.last = reported
        self._events_for(pod, record, reported)
        if script.serve_port is not None and reported.phase == "Running" and not record.routes:
            for container in pod["spec"]["containers"]:
                for port in container.get("ports", []):
                    self.network.route(record.ip, port["containerPort"], script.serve_port)
                    record.routes.append((record.ip, port["containerPort"]))

    def _events_for(self, pod: JSON, record: _Pod, reported: podstatus.Reported) -> None:
        for kind, fields in reported.containers:
            reason = fields.get("reason", "")
            if kind != "waiting" or reason in record.events:
                continue
            if reason == "ErrImagePull":
                self._event(
                    pod,
                    "Failed",
                    f"Failed to pull image: {fields['message']}",
                    "Warning",
                    "kubelet",
                )
            elif reason in ("ImagePullBackOff", "CrashLoopBackOff"):
                message = fields["message"]
                if reason == "CrashLoopBackOff":
                    message = "Back-off restarting failed container"
                self._event(pod, "BackOff", message, "Warning", "kubelet")
            record.events.add(reason)

    def _event(self, pod: JSON, reason: str, message: str, kind: str, component: str) -> None:
        meta = pod["metadata"]
        now = _now()
        self.rest.post(
            f"/api/v1/namespaces/{meta['namespace']}/events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": f"{meta['name']}.{secrets.token_hex(8)}",
                    "namespace": meta["namespace"],
                },
                "involvedObject": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "uid": meta["uid"],
                },
                "reason": reason,
                "message": message,
                "type": kind,
                "source": {
                    "component": component,
                    **({"host": self.node_name} if component == "kubelet" else {}),
                },
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            },
        )
        self._record(pod).events.add(reason)

    def _let_go(self, pod: JSON) -> None:
        """A bound pod marked for deletion is removed once 'its containers stopped'."""
        meta = pod["metadata"]
        with contextlib.suppress(KubeRestError):
            self.rest.request(
                "DELETE",
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                {
                    "apiVersion": "v1",
                    "kind": "DeleteOptions",
                    "gracePeriodSeconds": 0,
                    "preconditions": {"uid": meta["uid"]},
                },
            )
