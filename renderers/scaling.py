"""What keeps a process's replicas: a PodDisruptionBudget where there are two or more, and
an autoscaler where the count is the cluster's to choose (behaviour.md "Pods (1.2)").

Both belong to one release and one process, named like its Deployment and selecting the same
pods, so a release's budget never counts another release's pods and draining takes both away.
"""

from __future__ import annotations

from reconciler.model.specs import ProcessSpec
from renderers.capabilities import Capabilities
from renderers.manifests import Draft
from renderers.naming import Labels


def budget(
    process: ProcessSpec,
    name: str,
    namespace: str,
    labels: Labels,
    selector: Labels,
    capabilities: Capabilities,
    *,
    hardened: bool = True,
) -> Draft | None:
    """None for one replica, and for a release frozen before 1.2 (it had no budget)."""
    if process.least_replicas < 2 or not hardened:
        return None
    values = {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "selector": selector,
        "api_version": capabilities.pdb_api_version,
    }
    return Draft("PodDisruptionBudget", name, "pdb.j2", values)


def autoscaler(
    process: ProcessSpec, name: str, namespace: str, labels: Labels, capabilities: Capabilities
) -> Draft | None:
    scale = process.autoscale
    if scale is None:
        return None
    values = {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "target": name,
        "minimum": scale.minimum,
        "maximum": scale.maximum,
        "cpu_percent": scale.cpu_percent,
        "api_version": capabilities.hpa_api_version,
    }
    return Draft("HorizontalPodAutoscaler", name, "hpa.j2", values)
