"""Taking releases and units off the cluster, found by their labels.

A release's objects carry ``nebula.dev/service`` and ``nebula.dev/release``; a unit's shared
objects (the stable Service, volume claims, a database's StatefulSet and credentials) carry
``nebula.dev/service`` without a release. Everything is deleted with background propagation,
so a Deployment takes its ReplicaSets and pods along (and a Job its pods, which the API would
otherwise orphan). Every call is idempotent: what is gone, or already being deleted, is
skipped, and ``Teardown.already_clean`` says a second run found nothing left to do.
"""

from __future__ import annotations

from collections.abc import Iterable

from reconciler.errors import PermanentError
from reconciler.model.specs import MANIFESTS
from reconciler.runtimes.cluster import CLOUDNATIVE_GROUP, CLUSTER_KIND, Teardown
from reconciler.runtimes.kubernetes.applying import FIELD_MANAGER, describe
from reconciler.runtimes.kubernetes.discovery import Discovery, Resource
from reconciler.runtimes.kubernetes.transport import JSON, MERGE_PATCH, Transport
from renderers import naming

# (group, kind) in deletion order: what makes pods first, what routes and configures last.
KINDS = (
    ("autoscaling", "HorizontalPodAutoscaler"),  # before what it scales, so it cannot scale up
    ("batch", "CronJob"),
    ("batch", "Job"),
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    (CLOUDNATIVE_GROUP, CLUSTER_KIND),  # the operator deletes its pods, volumes and Secret
    ("policy", "PodDisruptionBudget"),
    ("gateway.networking.k8s.io", "HTTPRoute"),
    ("networking.k8s.io", "Ingress"),
    ("", "Service"),
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "PersistentVolumeClaim"),
)
SCALED = (("apps", "Deployment"), ("apps", "StatefulSet"))


def release_selector(unit: str, release: str) -> str:
    return f"{naming.SERVICE}={unit},{naming.RELEASE}={release}"


def unit_selector(unit: str) -> str:
    return f"{naming.MANAGED_BY}=nebula,{naming.SERVICE}={unit}"


class Remover:
    def __init__(self, transport: Transport, discovery: Discovery) -> None:
        self._transport = transport
        self._discovery = discovery

    def drain(self, namespace: str, unit: str, release: str) -> tuple[str, ...]:
        """Scale the release's workloads to zero (its pods stop taking traffic and get their
        termination grace), then delete its objects."""
        selector = release_selector(unit, release)
        for resource, obj in self._found(namespace, selector, SCALED):
            name = _name(obj)
            if (obj.get("spec") or {}).get("replicas") == 0:
                continue
            self._transport.call(
                "PATCH",
                resource.item(name, namespace),
                what=f"scale {describe(resource.kind, name, namespace)} to zero",
                query=[("fieldManager", FIELD_MANAGER)],
                body={"spec": {"replicas": 0}},
                content_type=MERGE_PATCH,
                missing_ok=True,
            )
        return self.delete(namespace, selector)

    def remove(self, namespace: str, unit: str, release: str) -> tuple[str, ...]:
        """A release that never took traffic: nothing to drain, delete it at once."""
        return self.delete(namespace, release_selector(unit, release))

    def delete(self, namespace: str, selector: str) -> tuple[str, ...]:
        """Deletes every object matching ``selector``; returns ``Kind/name`` of each deleted."""
        deleted = []
        for resource, obj in self._found(namespace, selector, self._kinds(selector)):
            name = _name(obj)
            self._transport.call(
                "DELETE",
                resource.item(name, namespace),
                what=f"delete {describe(resource.kind, name, namespace)}",
                body={
                    "apiVersion": "v1",
                    "kind": "DeleteOptions",
                    "propagationPolicy": "Background",
                },
                missing_ok=True,
            )
            deleted.append(f"{resource.kind}/{name}")
        return tuple(deleted)

    def prune(
        self, namespace: str, unit: str, kinds: Iterable[tuple[str, str]], keep: set[str]
    ) -> tuple[str, ...]:
        """Deletes the unit's objects of ``kinds`` that are not in ``keep`` (``Kind/name``)."""
        deleted = []
        for resource, obj in self._found(namespace, unit_selector(unit), kinds):
            name = _name(obj)
            if f"{resource.kind}/{name}" in keep:
                continue
            self._transport.call(
                "DELETE",
                resource.item(name, namespace),
                what=f"delete {describe(resource.kind, name, namespace)}",
                missing_ok=True,
            )
            deleted.append(f"{resource.kind}/{name}")
        return tuple(deleted)

    def teardown(self, namespace: str, unit: str) -> Teardown:
        deleted = self.delete(namespace, unit_selector(unit))
        return Teardown(already_clean=not deleted, deleted=deleted)

    def _kinds(self, selector: str) -> Iterable[tuple[str, str]]:
        """What to look through: the kinds Nebula renders, and for raw manifests (any kind a
        team writes: a NetworkPolicy, a ServiceMonitor) every namespaced kind the cluster
        serves. A document a release no longer has is pruned by this: it still carries the
        drained release's label."""
        if f"{naming.SERVICE}={MANIFESTS}" not in selector.split(","):
            return KINDS
        return self._discovery.namespaced_kinds()

    def _found(
        self, namespace: str, selector: str, kinds: Iterable[tuple[str, str]]
    ) -> list[tuple[Resource, JSON]]:
        """Objects of ``kinds`` matching ``selector`` that are not already being deleted."""
        found = []
        for group, kind in kinds:
            resource = self._discovery.preferred(group, kind)
            if resource is None:
                continue
            try:
                items = self._transport.items(
                    resource.collection(namespace),
                    what=f"list {kind} objects in {namespace}",
                    query=[("labelSelector", selector)],
                )
            except PermanentError as exc:
                # Raw manifests' pruning looks through every kind the server serves: one
                # Nebula may not list holds none of its objects (it could not have made them).
                if exc.status != 403 or kinds is KINDS:
                    raise
                continue
            found += [
                (resource, obj)
                for obj in items
                if not (obj.get("metadata") or {}).get("deletionTimestamp")
            ]
        return found


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))
