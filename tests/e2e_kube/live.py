"""What the API server holds, read straight from it (never through the fault proxy): the
objects Nebula applied in a namespace, their owners and resourceVersions.

These are the test's eyes on the cluster, independent of the runtime under test: plain JSON
over ``KubeRest``, not the ``kubernetes`` client Nebula uses.
"""

from __future__ import annotations

from typing import Any

from tests.infra.kuberest import KubeRest, KubeRestError

JSON = dict[str, Any]
MANAGED = "app.kubernetes.io/managed-by=nebula"

# Every kind Nebula applies into a namespace -> the path of its collection there. Pods,
# ReplicaSets and a StatefulSet's claims are made by controllers from what Nebula applied.
APPLIED = {
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "Service": "/api/v1/namespaces/{ns}/services",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "CronJob": "/apis/batch/v1beta1/namespaces/{ns}/cronjobs",
}
WORKLOADS = ("Deployment", "StatefulSet")

Key = tuple[str, str]  # (kind, name)


class Live:
    def __init__(self, rest: KubeRest, namespace: str) -> None:
        self.rest = rest
        self.namespace = namespace

    def get(self, kind: str, name: str) -> JSON | None:
        """The object, or None when it does not exist or is being deleted."""
        if kind == "Namespace":
            path = f"/api/v1/namespaces/{name}"
        else:
            path = f"{APPLIED[kind].format(ns=self.namespace)}/{name}"
        try:
            found: JSON = self.rest.get(path)
        except KubeRestError as exc:
            if exc.status == 404:
                return None
            raise
        return None if found["metadata"].get("deletionTimestamp") else found

    def items(self, kind: str, selector: str = MANAGED) -> list[JSON]:
        listed = self.rest.get(
            APPLIED[kind].format(ns=self.namespace), query={"labelSelector": selector}
        )
        return [i for i in listed["items"] if not i["metadata"].get("deletionTimestamp")]

    def names(self, kind: str, selector: str = MANAGED) -> set[str]:
        return {i["metadata"]["name"] for i in self.items(kind, selector)}

    def applied(self) -> dict[Key, JSON]:
        """Every object of the namespace labelled as Nebula's, and the namespace itself."""
        found = {(kind, i["metadata"]["name"]): i for kind in APPLIED for i in self.items(kind)}
        namespace = self.get("Namespace", self.namespace)
        if namespace is not None:
            found[("Namespace", self.namespace)] = namespace
        return found

    def versions(self) -> dict[Key, str]:
        return {key: obj["metadata"]["resourceVersion"] for key, obj in self.applied().items()}

    def selector(self, service: str) -> dict[str, str]:
        found = self.get("Service", service)
        assert found is not None, f"no Service/{service} in {self.namespace}"
        return dict(found["spec"].get("selector") or {})

    def settled(self) -> bool:
        """Controllers are done writing status: every workload's status describes its current
        spec and all its replicas are available (or it was scaled to zero)."""
        for kind in WORKLOADS:
            for workload in self.items(kind):
                status = workload.get("status") or {}
                wanted = workload["spec"].get("replicas", 1)
                if status.get("observedGeneration") != workload["metadata"]["generation"]:
                    return False
                ready = status.get("availableReplicas" if kind == "Deployment" else "readyReplicas")
                if (ready or 0) != wanted or status.get("replicas", 0) != wanted:
                    return False
                # The controller's last word on a rollout that completed.
                progressing = next(
                    (c for c in status.get("conditions") or [] if c["type"] == "Progressing"), None
                )
                if (
                    kind == "Deployment"
                    and wanted
                    and (progressing is None or progressing["reason"] != "NewReplicaSetAvailable")
                ):
                    return False
        return True


def owners(obj: JSON, top: str) -> set[str]:
    """The field managers owning part of ``top`` ("spec", "data", "metadata") of ``obj``."""
    return {
        e["manager"]
        for e in obj["metadata"].get("managedFields", [])
        if f"f:{top}" in (e.get("fieldsV1") or {})
    }


def applies(obj: JSON) -> list[str]:
    """The managers that server-side applied ``obj`` (operation Apply)."""
    return sorted(
        e["manager"] for e in obj["metadata"].get("managedFields", []) if e["operation"] == "Apply"
    )
