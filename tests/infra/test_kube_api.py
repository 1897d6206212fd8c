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


def config_map(data: dict[str, str]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": data}


def test_kubeconfig_reaches_kubernetes_1_20(kube_api: KubeAPI) -> None:
    with kube_api.api_client() as api:
        version = client.VersionApi(api).get_code()
    assert version.git_version == "v1.20.2"
    assert kube_api.kubeconfig.read_text().count(kube_api.token) == 1


def test_server_side_apply_twice_changes_nothing(kube_api: KubeAPI, kube_namespace: str) -> None:
    with kube_api.api_client() as api:
        core = client.CoreV1Api(api)
        first = core.patch_namespaced_config_map(
            "settings",
            kube_namespace,
            config_map({"LOG_LEVEL": "info"}),
            field_manager="nebula",
            _content_type=APPLY,
        )
        second = core.patch_namespaced_config_map(
            "settings",
            kube_namespace,
            config_map({"LOG_LEVEL": "info"}),
            field_manager="nebula",
            _content_type=APPLY,
        )
    managers = {(f.manager, f.operation) for f in first.metadata.managed_fields}
    assert managers == {("nebula", "Apply")}
    assert second.metadata.resource_version == first.metadata.resource_version


def test_server_side_apply_reports_conflicts_between_managers(
    kube_api: KubeAPI, kube_namespace: str
) -> None:
    with kube_api.api_client() as api:
        core = client.CoreV1Api(api)
        core.patch_namespaced_config_map(
            "settings",
            kube_namespace,
            config_map({"LOG_LEVEL": "info"}),
            field_manager="nebula",
            _content_type=APPLY,
        )
        with pytest.raises(client.ApiException) as conflict:
            core.patch_namespaced_config_map(
                "settings",
                kube_namespace,
                config_map({"LOG_LEVEL": "debug"}),
                field_manager="someone-else",
                _content_type=APPLY,
            )
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
