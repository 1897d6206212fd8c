"""The readiness check through the API server's service proxy tells the API server's own
answer from the application's (issue 18, finding 13): a client that may not use
``services/proxy`` got 403 from the API server itself, a ``kind: Status``, and ``status <
500`` counted it as ready, so deployments went healthy without their readiness path ever
being reached. Against the real API server, with the refusals it gives (the 404 for a missing
Service is its own; RBAC is off on the test server, so its 401 and 403 come through the fault
proxy, byte for byte the shape it sends)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest

from reconciler.runtimes.cluster import ReleaseObjects
from tests.infra.podstatus import Behaviour
from tests.runtimes.harness import KubernetesHarness, http_server
from tests.runtimes.releases import Service, image

pytestmark = pytest.mark.kube

FORBIDDEN = (
    'services "{service}:8080" is forbidden: User "system:serviceaccount:nebula:nebula" '
    'cannot get resource "services/proxy" in API group "" in the namespace "{namespace}"'
)


@contextlib.contextmanager
def started(harness: KubernetesHarness, answer: Callable[[str], int]) -> Iterator[ReleaseObjects]:
    """api r-1 Ready, its pods serving ``answer(path) -> status`` on the probe port."""
    objects = harness.release(1, Service(image("api", f"{harness.project}-1")))
    with http_server(answer) as port:
        harness.kubelet.script(objects.image, Behaviour.RUNNING, serve_port=port)
        harness.cluster.admit(objects)
        harness.cluster.start(objects)
        harness.until(
            lambda: harness.cluster.rollout(objects), lambda r: r.ready_since is not None, "Ready"
        )
        try:
            yield objects
        finally:
            harness.proxy.clear()


def test_a_forbidden_proxy_is_not_ready_and_says_what_permission_is_missing(
    kube_harness: KubernetesHarness,
) -> None:
    with started(kube_harness, lambda path: 200) as objects:
        assert kube_harness.cluster.probe(objects).ok, "the application answers 200"
        message = FORBIDDEN.format(service=objects.own_service, namespace=objects.namespace)
        kube_harness.proxy.fail("GET", r"/services/[^/]+/proxy", 403, times=None, message=message)
        result = kube_harness.cluster.probe(objects)
    assert not result.ok
    assert result.message == (
        f"{objects.own_service}:8080: the API server answered the probe itself (403 Forbidden: "
        f"{message}); Nebula needs get on services/proxy in {objects.namespace} "
        "(deploy/kubernetes/rbac.yaml grants it); the readiness path was not reached"
    )


def test_credentials_the_api_server_refuses_are_not_ready(kube_harness: KubernetesHarness) -> None:
    with started(kube_harness, lambda path: 200) as objects:
        kube_harness.proxy.fail(
            "GET", r"/services/[^/]+/proxy", 401, times=None, message="Unauthorized"
        )
        result = kube_harness.cluster.probe(objects)
    assert not result.ok
    assert "(401 Unauthorized: Unauthorized); Nebula's credentials" in result.message


def test_a_missing_service_is_the_api_servers_404_not_the_applications(
    kube_harness: KubernetesHarness,
) -> None:
    with started(kube_harness, lambda path: 200) as objects:
        kube_harness.rest.delete(
            f"/api/v1/namespaces/{objects.namespace}/services/{objects.own_service}"
        )
        result = kube_harness.cluster.probe(objects)
    assert not result.ok
    assert result.message == (
        f"{objects.own_service}:8080: the API server answered the probe itself (404 NotFound: "
        f'services "{objects.own_service}" not found); the release\'s Service '
        f"{objects.own_service} is missing in {objects.namespace}; the readiness path was not "
        "reached"
    )


def test_the_applications_own_404_is_still_its_answer(kube_harness: KubernetesHarness) -> None:
    """Below 500 from the application is ready, as before: a readiness path that 404s is the
    application's business (behaviour.md: status < 500)."""
    with started(kube_harness, lambda path: 404) as objects:
        result = kube_harness.cluster.probe(objects)
    assert result.ok, result.message
    assert result.message == f"{objects.own_service}:8080: /healthz answered 404"
