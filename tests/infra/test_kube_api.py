"""The real kube-apiserver built by .ci/build-kube: reachable with the kubeconfig the
fixture writes, serving server-side apply, deleting namespaces with their contents."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.infra.kuberest import KubeRestError
from tests.infra.kubeserver import KubeAPI
from tests.infra.waiting import wait_for

pytestmark = pytest.mark.kube

APPLY = "application/apply-patch+yaml"


def apply(
    core: client.CoreV1Api, namespace: str, level: str, manager: str = "nebula"
) -> client.V1ConfigMap:
    """Server-side apply of ConfigMap ``settings`` holding ``LOG_LEVEL = level``."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"LOG_LEVEL": level},
    }
    return core.patch_namespaced_config_map(
        "settings", namespace, body, field_manager=manager, _content_type=APPLY
    )


def test_kubeconfig_reaches_kubernetes_1_20(kube_api: KubeAPI) -> None:
    with kube_api.api_client() as api:
        version = client.VersionApi(api).get_code()
    assert version.git_version == "v1.20.2"
    assert kube_api.kubeconfig.read_text().count(kube_api.token) == 1


def test_server_side_apply_twice_changes_nothing(kube_api: KubeAPI, kube_namespace: str) -> None:
    with kube_api.api_client() as api:
        core = client.CoreV1Api(api)
        first = apply(core, kube_namespace, "info")
        second = apply(core, kube_namespace, "info")
    managers = {(f.manager, f.operation) for f in first.metadata.managed_fields}
    assert managers == {("nebula", "Apply")}
    assert second.metadata.resource_version == first.metadata.resource_version


def test_server_side_apply_reports_conflicts_between_managers(
    kube_api: KubeAPI, kube_namespace: str
) -> None:
    with kube_api.api_client() as api:
        core = client.CoreV1Api(api)
        apply(core, kube_namespace, "info")
        with pytest.raises(client.ApiException) as conflict:
            apply(core, kube_namespace, "debug", manager="someone-else")
    status = json.loads(conflict.value.body)
    assert conflict.value.status == 409
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "nebula"',
            "field": ".data.LOG_LEVEL",
        }
    ]


def test_deleted_namespace_disappears(kube_api: KubeAPI) -> None:
    kube_api.rest.post("/api/v1/namespaces", {"metadata": {"name": "t-goes-away"}})
    kube_api.rest.post(
        "/api/v1/namespaces/t-goes-away/configmaps",
        {"metadata": {"name": "left-behind"}, "data": {}},
    )
    kube_api.rest.delete("/api/v1/namespaces/t-goes-away")

    def gone() -> bool:
        try:
            kube_api.rest.get("/api/v1/namespaces/t-goes-away")
        except KubeRestError as exc:
            return exc.status == 404
        return False

    wait_for(gone, "the namespace controller to delete t-goes-away", timeout=60)
