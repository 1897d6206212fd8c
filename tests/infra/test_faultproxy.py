"""The fault proxy between the kubernetes client and the real API server: scripted answers,
hangs and refused connections, and plain pass-through (watches included) otherwise."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
import urllib3
from kubernetes import client, watch

from tests.infra.faultproxy import FaultProxy
from tests.infra.kubeserver import KubeAPI

pytestmark = pytest.mark.kube


@pytest.fixture
def core(fault_proxy: FaultProxy) -> Iterator[client.CoreV1Api]:
    with fault_proxy.api_client() as api:
        yield client.CoreV1Api(api)


def names(config_maps: client.V1ConfigMapList) -> list[str]:
    # Every namespace gets the controller manager's kube-root-ca.crt.
    return [c.metadata.name for c in config_maps.items if c.metadata.name != "kube-root-ca.crt"]


def test_scripted_500_then_pass_through(
    fault_proxy: FaultProxy, core: client.CoreV1Api, kube_namespace: str
) -> None:
    rule = fault_proxy.fail("GET", rf"/namespaces/{kube_namespace}/configmaps", status=500)

    with pytest.raises(client.ApiException) as failure:
        core.list_namespaced_config_map(kube_namespace)
    listed = core.list_namespaced_config_map(kube_namespace)

    assert failure.value.status == 500
    assert json.loads(failure.value.body)["reason"] == "InternalError"
    assert names(listed) == []
    assert rule.hits == 1
    assert fault_proxy.count("GET", "/configmaps") == 2


@pytest.mark.parametrize(("status", "reason"), [(409, "Conflict"), (403, "Forbidden")])
def test_scripted_status_repeats_as_many_times_as_asked(
    fault_proxy: FaultProxy, core: client.CoreV1Api, kube_namespace: str, status: int, reason: str
) -> None:
    body = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    core.create_namespaced_service(kube_namespace, body)
    rule = fault_proxy.fail("PATCH", r"/services/web$", status=status, times=2)
    patch = {"spec": {"selector": {"release": "2"}}}

    for _ in range(2):
        with pytest.raises(client.ApiException) as refused:
            core.patch_namespaced_service("web", kube_namespace, patch)
        assert (refused.value.status, json.loads(refused.value.body)["reason"]) == (status, reason)
    patched = core.patch_namespaced_service("web", kube_namespace, patch)

    assert patched.spec.selector == {"release": "2"}
    assert rule.hits == 2


def test_hang_times_the_client_out_until_cleared(
    fault_proxy: FaultProxy, core: client.CoreV1Api, kube_namespace: str
) -> None:
    fault_proxy.hang("GET", r"/configmaps", times=None, seconds=20)

    with pytest.raises(urllib3.exceptions.HTTPError, match="Read timed out"):
        core.list_namespaced_config_map(kube_namespace, _request_timeout=0.3)
    fault_proxy.clear()

    assert names(core.list_namespaced_config_map(kube_namespace, _request_timeout=5)) == []


def test_unreachable_refuses_connections_until_reachable(
    fault_proxy: FaultProxy, core: client.CoreV1Api, kube_namespace: str
) -> None:
    core.list_namespaced_config_map(kube_namespace)  # a kept-alive connection exists now
    fault_proxy.unreachable()

    with pytest.raises(urllib3.exceptions.HTTPError, match="Connection refused"):
        core.list_namespaced_config_map(kube_namespace, _request_timeout=2)
    fault_proxy.reachable()

    assert names(core.list_namespaced_config_map(kube_namespace, _request_timeout=5)) == []


def test_watches_stream_through_the_proxy(
    fault_proxy: FaultProxy, core: client.CoreV1Api, kube_api: KubeAPI, kube_namespace: str
) -> None:
    seen: list[tuple[str, str]] = []

    # Watched from a listed resourceVersion: both creations come after it, so the watch sees
    # them however late its thread starts (without one, a slow start can miss the first).
    listed = core.list_namespaced_config_map(kube_namespace).metadata.resource_version

    def follow() -> None:
        stream = watch.Watch().stream(
            # Generous: on a loaded 2-core machine the API server can take seconds to answer.
            core.list_namespaced_config_map,
            kube_namespace,
            resource_version=listed,
            timeout_seconds=60,
        )
        for event in stream:
            name = event["object"].metadata.name
            if name != "kube-root-ca.crt":
                seen.append((event["type"], name))
            if name == "second":
                stream.close()

    watcher = threading.Thread(target=follow)
    watcher.start()
    for name in ("first", "second"):
        kube_api.rest.post(
            f"/api/v1/namespaces/{kube_namespace}/configmaps", {"metadata": {"name": name}}
        )
    watcher.join(70)
    assert not watcher.is_alive(), f"the watch saw only {seen}"

    assert seen == [("ADDED", "first"), ("ADDED", "second")]
