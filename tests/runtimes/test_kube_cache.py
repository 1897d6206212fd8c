"""The watch cache on the real API server: checks answered from memory once it is synced (and
the same as direct reads), changes made behind Nebula's back arriving through the watch, a
check right after a write, 410 Gone, and a broken watch or an unreachable API falling back to
direct reads exactly as without a cache.

The runtime goes through the fault proxy, whose log is what the wire saw."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import pytest

from reconciler.errors import UnreachableError
from reconciler.runtimes.cluster import JobPhase, ReleaseObjects, Rollout
from reconciler.runtimes.kubernetes import KubernetesCluster, connect, streams
from reconciler.runtimes.kubernetes.caching import Cache
from reconciler.runtimes.kubernetes.kinds import KINDS, Watched
from reconciler.runtimes.kubernetes.reading import Reader
from reconciler.runtimes.kubernetes.stores import Store
from reconciler.runtimes.kubernetes.watching import Informer, Source
from renderers import naming
from tests.infra.faultproxy import FaultProxy
from tests.infra.waiting import wait_for
from tests.runtimes.conftest import TEST_TIMEOUTS
from tests.runtimes.harness import KubernetesHarness
from tests.runtimes.releases import Service, image

pytestmark = pytest.mark.kube

JSON = dict[str, Any]
# What a Deployment's rollout check reads, and a Job's.
ROLLOUT = ("Deployment", "ReplicaSet", "Pod")


def release(harness: KubernetesHarness, number: int = 1, **options: Any) -> ReleaseObjects:
    return harness.release(number, Service(image("api", f"{harness.project}-{number}"), **options))


def ready(harness: KubernetesHarness, objects: ReleaseObjects) -> Rollout:
    return harness.until(
        lambda: harness.cluster.rollout(objects), lambda r: r.ready_since is not None, "Ready"
    )


def started(harness: KubernetesHarness, **options: Any) -> ReleaseObjects:
    objects = release(harness, release_command=False, **options)
    harness.cluster.admit(objects)
    harness.cluster.start(objects)
    ready(harness, objects)
    return objects


def reads(proxy: FaultProxy) -> list[tuple[str, str]]:
    """What went through the proxy besides the informers' watches (an informer's watch may
    connect just after its list synced, or reconnect when the server ends it): the requests
    a check made, as (method, path)."""
    return [(s.method, s.target) for s in proxy.seen if "watch=true" not in s.target]


def synced(cluster: KubernetesCluster, namespace: str, *kinds: str) -> None:
    wait_for(
        lambda: all(cluster.cache.synced(kind, namespace) for kind in kinds),
        f"the watch cache of {', '.join(kinds)} in {namespace}",
    )


def unsynced(cluster: KubernetesCluster, namespace: str, *kinds: str) -> None:
    wait_for(
        lambda: not any(cluster.cache.synced(kind, namespace) for kind in kinds),
        f"the watch cache of {namespace} to notice its watches are gone",
    )


@pytest.fixture
def uncached(fault_proxy: FaultProxy) -> Iterator[KubernetesCluster]:
    """The runtime without a watch cache, through the same proxy."""
    cluster = connect(
        fault_proxy.context, str(fault_proxy.kubeconfig), timeouts=TEST_TIMEOUTS, watch=False
    )
    cluster.connection.api_client.set_default_header("Connection", "close")  # type: ignore[no-untyped-call]
    yield cluster
    cluster.close()


def test_once_synced_the_checks_send_no_request_and_say_what_direct_reads_say(
    kube_harness: KubernetesHarness, uncached: KubernetesCluster
) -> None:
    cluster, proxy = kube_harness.cluster, kube_harness.proxy
    objects = release(kube_harness)
    cluster.admit(objects)
    cluster.start_release_job(objects)
    kube_harness.until(
        lambda: cluster.release_job(objects),
        lambda s: s.phase is JobPhase.SUCCEEDED,
        "the release command",
    )
    cluster.start(objects)
    ready(kube_harness, objects)
    synced(cluster, objects.namespace, *ROLLOUT, "Job")
    proxy.seen.clear()

    rollouts = [cluster.rollout(objects) for _ in range(20)]
    job = cluster.release_job(objects)

    # The only request: the Job's logs, read once it ended (no cache holds logs).
    assert [
        (method, target.split("?")[0].rsplit("/", 1)[-1]) for method, target in reads(proxy)
    ] == [("GET", "log")]
    assert rollouts == [uncached.rollout(objects)] * 20
    assert job == uncached.release_job(objects)


def test_a_change_made_behind_nebulas_back_arrives_through_the_watch(
    kube_harness: KubernetesHarness,
) -> None:
    cluster, proxy = kube_harness.cluster, kube_harness.proxy
    objects = started(kube_harness)
    synced(cluster, objects.namespace, *ROLLOUT)
    proxy.seen.clear()

    kube_harness.rest.patch(
        f"/apis/apps/v1/namespaces/{objects.namespace}/deployments/api-r1",
        {"spec": {"replicas": 3}},
    )
    rollout = kube_harness.until(
        lambda: cluster.rollout(objects), lambda r: r.ready == 3, "the third replica Ready"
    )

    assert (rollout.desired, rollout.ready) == (3, 3)
    assert reads(proxy) == []
    deployment = cluster.cache.view("Deployment", objects.namespace)
    assert deployment is not None
    assert (deployment.get("api-r1") or {})["spec"]["replicas"] == 3


class Frozen:
    """A source that lists as the real one does, and whose watch brings nothing until stopped:
    a watch running late, made to last."""

    def __init__(self, inner: Source) -> None:
        self._inner = inner
        self._stopped = threading.Event()

    def list(self) -> tuple[Sequence[Any], str]:
        return self._inner.list()

    def watch(
        self, version: str, timeout_seconds: int, connected: Callable[[], None]
    ) -> Iterator[Any]:
        connected()
        self._stopped.wait(30)
        yield from ()

    def stop(self) -> None:
        self._stopped.set()
        self._inner.stop()


def test_a_check_right_after_a_write_reads_what_was_written(
    kube_harness: KubernetesHarness,
) -> None:
    cluster = kube_harness.cluster
    objects = started(kube_harness)
    real = streams.sources(cluster.transport, cluster.discovery)

    def frozen(watched: Watched, namespace: str) -> tuple[Source, str] | None:
        made = real(watched, namespace)
        return (Frozen(made[0]), made[1]) if made is not None else None

    cluster.cache.close()
    cluster.cache = Cache(frozen)
    cluster.reader = Reader(cluster.transport, cluster.cache)
    cluster.rollout(objects)  # starts the informers
    synced(cluster, objects.namespace, *ROLLOUT)
    manifest = next(m for m in objects.workload if m["kind"] == "Deployment")
    three = replace(
        objects,
        workload=tuple(
            {**m, "spec": {**m["spec"], "replicas": 3}} if m is manifest else m
            for m in objects.workload
        ),
    )

    cluster.start(three)
    rollout = cluster.rollout(three)

    store = cluster.cache.view("Deployment", objects.namespace)
    assert store is not None and (store.get("api-r1") or {})["spec"]["replicas"] == 2
    assert store.behind("api-r1")
    assert rollout.desired == 3  # read from the API server, not from the stale cache


def test_410_gone_is_listed_again_at_once_and_the_watch_goes_on(
    kube_harness: KubernetesHarness,
) -> None:
    cluster, proxy, namespace = kube_harness.cluster, kube_harness.proxy, kube_harness.namespace
    cluster.admit(release(kube_harness, release_command=False))
    watched = KINDS["ConfigMap"]
    resource = cluster.discovery.preferred("", "ConfigMap")
    assert resource is not None
    # The API server keeps 75 s of history at least, more than a test can wait out: the
    # proxy answers the first watch as a server that no longer has the list's version.
    gone = proxy.fail("GET", r"/configmaps\?.*watch=true", status=410, times=1)
    store = Store(watched, resource.api_version)
    source = streams.ApiSource(cluster.transport, resource, namespace, watched)
    informer = Informer(store, source, name="nebula-watch test")
    informer.start()
    try:
        wait_for(lambda: gone.hits == 1 and store.synced, "a list after 410 Gone")
        kube_harness.rest.post(
            f"/api/v1/namespaces/{namespace}/configmaps",
            {"metadata": {"name": "late", "labels": {naming.MANAGED_BY: "nebula"}}},
        )
        wait_for(lambda: store.get("late") is not None, "the watch after the list to work")
    finally:
        informer.stop()
        informer.join(10)

    assert informer.last_error is None and informer.failures == 0  # listed again, no backoff
    assert proxy.count("GET", r"/configmaps\?.*limit=500") == 2


def test_a_broken_watch_falls_back_to_direct_reads_until_it_is_back(
    kube_harness: KubernetesHarness,
) -> None:
    cluster, proxy = kube_harness.cluster, kube_harness.proxy
    objects = started(kube_harness)
    synced(cluster, objects.namespace, *ROLLOUT)
    cached = cluster.rollout(objects)
    # The informers' lists (paged) and watches fail; the checks' own reads still pass.
    proxy.fail("GET", r"[?&](watch=true|limit=500)", status=500, times=None)
    proxy.cut_streams()
    unsynced(cluster, objects.namespace, *ROLLOUT)
    proxy.seen.clear()

    fallen_back = cluster.rollout(objects)

    assert fallen_back == cached
    assert proxy.count("GET", r"/deployments/api-r1$") == 1
    assert proxy.count("GET", r"/pods\?labelSelector=[^&]*$") == 1
    proxy.clear()
    synced(cluster, objects.namespace, *ROLLOUT)
    proxy.seen.clear()
    assert cluster.rollout(objects) == cached
    assert reads(proxy) == []


def test_with_the_api_unreachable_a_check_fails_with_delivery_as_without_a_cache(
    kube_harness: KubernetesHarness, uncached: KubernetesCluster
) -> None:
    cluster, proxy = kube_harness.cluster, kube_harness.proxy
    objects = started(kube_harness)
    synced(cluster, objects.namespace, *ROLLOUT)
    uncached.capabilities()  # discovery known to both, as in a reconciler already running

    proxy.unreachable()
    unsynced(cluster, objects.namespace, *ROLLOUT)
    with pytest.raises(UnreachableError) as cached:
        cluster.rollout(objects)
    with pytest.raises(UnreachableError) as direct_read:
        uncached.rollout(objects)

    assert cached.value.code == "delivery"
    assert str(cached.value) == str(direct_read.value)
    assert str(cached.value).startswith(
        f"Kubernetes API could not be reached to read Deployment/api-r1 in {objects.namespace}: "
    )
    proxy.reachable()
    synced(cluster, objects.namespace, *ROLLOUT)
    assert cluster.rollout(objects).ready_since is not None


def test_tearing_down_a_namespaces_last_unit_stops_its_informers(
    kube_harness: KubernetesHarness,
) -> None:
    cluster = kube_harness.cluster
    api = started(kube_harness)
    web = kube_harness.release(
        1, Service(image("web", kube_harness.project), release_command=False), unit="web"
    )
    cluster.admit(web)
    cluster.start(web)
    ready(kube_harness, web)
    synced(cluster, api.namespace, *ROLLOUT)
    informers = [cluster.cache.informer(kind, api.namespace) for kind in ROLLOUT]

    cluster.teardown(api.namespace, "web")
    assert {kind for kind, _ in cluster.cache.watched()} >= set(ROLLOUT)  # api is still there
    deployments = cluster.cache.view("Deployment", api.namespace)
    assert deployments is not None
    wait_for(lambda: deployments.get("web-r1") is None, "web's Deployment gone from the cache")
    cluster.teardown(api.namespace, "api")

    assert cluster.cache.watched() == []
    for informer in informers:
        assert informer is not None
        informer.join(10)
        assert not informer.is_alive()


def test_the_cache_holds_only_nebulas_objects_and_warning_events(
    kube_harness: KubernetesHarness,
) -> None:
    cluster, namespace = kube_harness.cluster, kube_harness.namespace
    objects = started(kube_harness)
    rest = kube_harness.rest
    rest.post(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "theirs"}})
    for kind in ("Warning", "Normal"):
        rest.post(
            f"/api/v1/namespaces/{namespace}/events",
            {
                "metadata": {"name": f"e-{kind.lower()}"},
                "involvedObject": {"kind": "Pod", "name": "x", "namespace": namespace},
                "reason": "Test",
                "message": kind,
                "type": kind,
            },
        )
    for kind in ("ConfigMap", "Event"):
        cluster.cache.view(kind, namespace)
    synced(cluster, namespace, "ConfigMap", "Event")

    configmaps = cluster.cache.view("ConfigMap", namespace)
    events = cluster.cache.view("Event", namespace)
    assert configmaps is not None and events is not None
    assert {o["metadata"]["name"] for o in configmaps.list()} == {"api-r1-vars"}
    assert "e-warning" in {o["metadata"]["name"] for o in events.list()}
    assert "e-normal" not in {o["metadata"]["name"] for o in events.list()}
    pods = cluster.cache.view("Pod", objects.namespace)
    assert pods is not None
    assert all("managedFields" not in p["metadata"] for p in pods.list())
