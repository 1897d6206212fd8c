"""Objects an operator runs for Nebula: a CloudNativePG ``Cluster`` (behaviour.md "Data
services (1.2)").

Nebula applies the Cluster and waits; the operator makes the pods, volumes, Services and the
``<db>-app`` Secret, and says in the Cluster's status how many instances are ready. Its pods
carry the operator's labels (``cnpg.io/cluster``), not Nebula's, so they are read from the API
server, never from the watch cache (which keeps what Nebula labels).
"""

from __future__ import annotations

from urllib.parse import quote

from reconciler.runtimes.cluster import CLOUDNATIVE_API, CLUSTER_KIND, ReleaseObjects, Rollout
from reconciler.runtimes.kubernetes import rollouts
from reconciler.runtimes.kubernetes.discovery import Discovery
from reconciler.runtimes.kubernetes.reading import Reader
from reconciler.runtimes.kubernetes.transport import Transport

CLUSTER_LABEL = "cnpg.io/cluster"


def rollout(
    discovery: Discovery, reader: Reader, transport: Transport, objects: ReleaseObjects
) -> Rollout:
    """The Cluster's instances, and its pods and warnings for what stands in the way."""
    namespace, name = objects.namespace, str(objects.primary)
    resource = discovery.resource(CLOUDNATIVE_API, CLUSTER_KIND)
    found = reader.get(
        CLUSTER_KIND,
        namespace,
        name,
        path=resource.item(name, namespace),
        what=f"read Cluster/{name} in {namespace}",
    )
    ns = quote(namespace, safe="")
    pods = transport.items(
        f"/api/v1/namespaces/{ns}/pods",
        what=f"list the pods of Cluster/{name}",
        query=[("labelSelector", f"{CLUSTER_LABEL}={name}")],
    )
    observed = rollouts.observe_cluster(found, pods, [], name=name, expected=objects.replicas)
    if observed.blocker is not None or observed.ready_since is not None:
        return observed
    events = reader.list(
        "Event",
        namespace,
        path=f"/api/v1/namespaces/{ns}/events",
        what=f"list the events of {namespace}",
        field_selector="type=Warning",
    )
    return rollouts.observe_cluster(found, pods, events, name=name, expected=objects.replicas)
