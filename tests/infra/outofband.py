"""Changes made behind Nebula's back, the way people make them: with the official ``kubernetes``
client, as a field manager of their own (``kubectl edit`` and ``kubectl scale`` are Updates,
which take the fields they change over from whoever owned them before).

Each change is a JSON merge patch built from a dotted path (``spec.replicas``,
``data.LOG_LEVEL``, ``metadata.annotations.team``), or a delete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

MANAGER = "kubectl-edit"
MERGE_PATCH = "application/merge-patch+json"

# kind -> (the API class, the method's name without patch_/delete_)
_CALLS: dict[str, tuple[Callable[[client.ApiClient], Any], str]] = {
    "Deployment": (client.AppsV1Api, "namespaced_deployment"),
    "StatefulSet": (client.AppsV1Api, "namespaced_stateful_set"),
    "Service": (client.CoreV1Api, "namespaced_service"),
    "ConfigMap": (client.CoreV1Api, "namespaced_config_map"),
    "Secret": (client.CoreV1Api, "namespaced_secret"),
    "PersistentVolumeClaim": (client.CoreV1Api, "namespaced_persistent_volume_claim"),
}


def merge_patch(path: str, value: Any) -> dict[str, Any]:
    """``{"spec": {"replicas": 5}}`` for ``("spec.replicas", 5)``."""
    body: Any = value
    for key in reversed(path.split(".")):
        body = {key: body}
    result: dict[str, Any] = body
    return result


def edit(
    api: client.ApiClient, namespace: str, ref: str, path: str, value: Any, manager: str = MANAGER
) -> None:
    kind, name = ref.split("/", 1)
    make, suffix = _CALLS[kind]
    getattr(make(api), f"patch_{suffix}")(
        name, namespace, merge_patch(path, value), field_manager=manager, _content_type=MERGE_PATCH
    )


def delete(api: client.ApiClient, namespace: str, ref: str) -> None:
    kind, name = ref.split("/", 1)
    make, suffix = _CALLS[kind]
    # The answer is not read: Kubernetes 1.20 answers some deletes with a Status, which this
    # client would fail to read as the object.
    response = getattr(make(api), f"delete_{suffix}")(name, namespace, _preload_content=False)
    response.read()
    response.release_conn()


def owners(obj: dict[str, Any], path: str) -> set[str]:
    """The managers whose managedFields hold ``path`` (dotted, plain keys only)."""
    found = set()
    for entry in obj["metadata"].get("managedFields") or []:
        node: Any = entry.get("fieldsV1") or {}
        for key in path.split("."):
            node = node.get(f"f:{key}") if isinstance(node, dict) else None
        if node is not None:
            found.add(f"{entry['manager']} ({entry['operation']})")
    return found
