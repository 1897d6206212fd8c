"""Does a release fit in its namespace's ResourceQuotas at all?

Checked when a deployment is admitted, against each quota's hard limits (not what is used):
a release that needs more than a quota allows can never start, so it fails with ``capacity``
at once instead of after the readiness timeout. Whether it fits next to what already runs is
only known when its pods are created; a refusal then shows as the ReplicaSet's
``FailedCreate ... exceeded quota``, which ``rollouts`` reports as ``capacity`` too.

Pure functions of manifests and quota objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity as _parse_quantity

JSON = Mapping[str, Any]

# Quota keys and the pod request they limit ("cpu" is an alias of "requests.cpu").
QUOTA_KEYS = {
    "pods": "pods",
    "count/pods": "pods",
    "cpu": "requests.cpu",
    "requests.cpu": "requests.cpu",
    "memory": "requests.memory",
    "requests.memory": "requests.memory",
    "limits.cpu": "limits.cpu",
    "limits.memory": "limits.memory",
}


def parse_quantity(value: object) -> Decimal:
    """``500m`` -> 0.5, ``1Gi`` -> 1073741824 (the client's parser, typed)."""
    parsed: Decimal = _parse_quantity(value)  # type: ignore[no-untyped-call]
    return parsed


def pod_template(manifest: JSON) -> tuple[JSON, int] | None:
    """(pod spec, how many of them run at once) for the kinds that make pods."""
    kind = manifest.get("kind")
    spec = manifest.get("spec") or {}
    if kind in ("Deployment", "StatefulSet"):
        return (spec.get("template") or {}).get("spec") or {}, int(spec.get("replicas", 1))
    if kind == "Job":
        return (spec.get("template") or {}).get("spec") or {}, int(spec.get("parallelism", 1))
    if kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        return (job.get("template") or {}).get("spec") or {}, int(job.get("parallelism", 1))
    return None


def needs(manifests: Iterable[JSON]) -> dict[str, Decimal]:
    """What the pods of ``manifests`` request together, keyed as ``QUOTA_KEYS`` values."""
    total: dict[str, Decimal] = {"pods": Decimal(0)}
    for manifest in manifests:
        found = pod_template(manifest)
        if found is None:
            continue
        pod, count = found
        total["pods"] += count
        for container in pod.get("containers") or []:
            resources = container.get("resources") or {}
            for section in ("requests", "limits"):
                for name, value in (resources.get(section) or {}).items():
                    key = f"{section}.{name}"
                    total[key] = total.get(key, Decimal(0)) + parse_quantity(value) * count
    return total


def refusal(quota: JSON, needed: Mapping[str, Decimal]) -> str | None:
    """Why ``quota`` can never admit what is ``needed``, or None."""
    hard = (quota.get("spec") or {}).get("hard") or {}
    name = (quota.get("metadata") or {}).get("name", "")
    for key, value in sorted(hard.items()):
        wanted = needed.get(QUOTA_KEYS.get(key, ""), Decimal(0))
        if QUOTA_KEYS.get(key) and wanted > parse_quantity(value):
            return (
                f"The release needs {_show(key, wanted)} {key} but ResourceQuota {name} "
                f"allows at most {value}"
            )
    return None


def _show(key: str, value: Decimal) -> str:
    if "memory" in key:
        return f"{format((value / 2**20).normalize(), 'f')}Mi"
    return format(value.normalize(), "f")
