"""Routes, budgets and autoscalers applied for real (behaviour.md "Public traffic (1.2)" and
"Pods (1.2)"): on the 1.20 API server with a Gateway API HTTPRoute CRD installed, through the
Kubernetes runtime. A route belongs to the service: admitted with it, the same through a
second release, no drift, gone at teardown. A budget and an autoscaler belong to a release:
gone when it drains."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from reconciler.engine.drifting import compare
from tests.infra import gatewayapi
from tests.infra.kuberest import KubeRest, KubeRestError
from tests.infra.kubeserver import KubeAPI
from tests.infra.waiting import wait_for
from tests.runtimes.harness import KubernetesHarness
from tests.runtimes.releases import Service, image
from tests.runtimes.test_kubernetes import deploy

pytestmark = pytest.mark.kube


@pytest.fixture(scope="session")
def gateway_api(kube_api: KubeAPI) -> Iterator[KubeRest]:
    gatewayapi.install(kube_api.rest)
    yield kube_api.rest


def _gone(rest: KubeRest, path: str) -> bool:
    try:
        rest.get(path)
    except KubeRestError as exc:
        return exc.status == 404
    return False


def test_an_httproute_is_applied_with_the_service_and_removed_at_teardown(
    kube_harness: KubernetesHarness, gateway_api: KubeRest
) -> None:
    kube_harness.cluster.discovery.forget()  # the CRD may be newer than what it cached
    service = Service(
        image("api", f"{kube_harness.project}-1"),
        routing='gateway = "infra/public"',
        domains=("shop.example.com",),
    )
    first = kube_harness.release(1, service)
    deploy(kube_harness, first)
    path = f"{gatewayapi.GATEWAY}/namespaces/{first.namespace}/httproutes/api-web"
    route: dict[str, Any] = gateway_api.get(path)

    assert route["spec"]["hostnames"] == ["shop.example.com"]
    assert route["spec"]["parentRefs"][0] == {
        "group": "gateway.networking.k8s.io",
        "kind": "Gateway",
        "namespace": "infra",
        "name": "public",
    }
    assert route["spec"]["rules"][0]["backendRefs"][0]["name"] == "api"
    assert compare(first, kube_harness.cluster.live(first)) == ()

    # A second release: the route is the service's, the same object, not changed.
    version = route["metadata"]["resourceVersion"]
    second = kube_harness.release(
        2,
        Service(
            image("api", f"{kube_harness.project}-2"),
            routing=service.routing,
            domains=service.domains,
        ),
    )
    deploy(kube_harness, second)
    assert gateway_api.get(path)["metadata"]["resourceVersion"] == version

    done = kube_harness.cluster.teardown(first.namespace, "api")
    assert "HTTPRoute/api-web" in done.deleted
    wait_for(lambda: _gone(gateway_api, path), "the route to be deleted")


def test_an_ingress_with_tls_is_applied(kube_harness: KubernetesHarness) -> None:
    service = Service(
        image("api", f"{kube_harness.project}-1"),
        routing='ingress_class = "nginx"\ntls_issuer = "letsencrypt"',
        domains=("shop.example.com",),
    )
    objects = kube_harness.release(1, service)
    deploy(kube_harness, objects)
    ingress = kube_harness.rest.get(
        f"/apis/networking.k8s.io/v1/namespaces/{objects.namespace}/ingresses/api-web"
    )

    assert ingress["metadata"]["annotations"]["cert-manager.io/cluster-issuer"] == "letsencrypt"
    assert ingress["spec"]["tls"] == [{"hosts": ["shop.example.com"], "secretName": "api-web-tls"}]
    assert compare(objects, kube_harness.cluster.live(objects)) == ()


def test_an_autoscaler_and_a_budget_go_with_their_release(
    kube_harness: KubernetesHarness,
) -> None:
    service = Service(image("api", f"{kube_harness.project}-1"), autoscale="{ min = 2, max = 4 }")
    objects = kube_harness.release(1, service)
    deploy(kube_harness, objects)
    namespace = objects.namespace
    hpa_path = f"/apis/autoscaling/v2beta2/namespaces/{namespace}/horizontalpodautoscalers/api-r1"
    pdb_path = f"/apis/policy/v1beta1/namespaces/{namespace}/poddisruptionbudgets/api-r1"

    hpa = kube_harness.rest.get(hpa_path)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 4)
    assert hpa["spec"]["scaleTargetRef"]["name"] == "api-r1"
    assert kube_harness.rest.get(pdb_path)["spec"]["maxUnavailable"] == 1
    # The autoscaler's count is not drift: the Deployment scaled behind Nebula's back.
    kube_harness.edit(objects, "Deployment/api-r1", "spec.replicas", 3)
    assert compare(objects, kube_harness.cluster.live(objects)) == ()

    kube_harness.cluster.drain(namespace, "api", "r-1")
    wait_for(lambda: _gone(kube_harness.rest, hpa_path), "the autoscaler to be deleted")
    wait_for(lambda: _gone(kube_harness.rest, pdb_path), "the budget to be deleted")
