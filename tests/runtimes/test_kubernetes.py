"""The Kubernetes runtime on the real API server: what only it has to get right (ownership by
field manager, idempotent applies, API versions from discovery, the API's refusals and
faults on the wire, quotas) and what the contract suite cannot see (messages, endpoints)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from reconciler.core.states import Blocker
from reconciler.errors import PermanentError, TransientError, UnreachableError
from reconciler.runtimes.cluster import JobPhase, JobStatus, ReleaseObjects
from reconciler.runtimes.kubernetes import KubernetesCluster, Timeouts, connect
from tests.infra.kuberest import KubeRestError
from tests.infra.kubeserver import KubeAPI, write_kubeconfig
from tests.infra.podstatus import Behaviour
from tests.infra.waiting import wait_for
from tests.runtimes.harness import KubernetesHarness, release_command_image
from tests.runtimes.releases import Service, image

pytestmark = pytest.mark.kube


def release(harness: KubernetesHarness, number: int = 1, **options: Any) -> ReleaseObjects:
    return harness.release(number, Service(image("api", f"{harness.project}-{number}"), **options))


def everything(objects: ReleaseObjects) -> list[dict[str, Any]]:
    """Every object the runtime applies for a release, as rendered."""
    out = [*objects.shared, *objects.workload]
    out += [m for m in (objects.release_job, objects.stable_service) if m is not None]
    return out


def deploy(harness: KubernetesHarness, objects: ReleaseObjects) -> None:
    """Every stage's effect, waiting where the engine would."""
    cluster = harness.cluster
    cluster.admit(objects)
    cluster.start_release_job(objects)
    harness.until(
        lambda: cluster.release_job(objects),
        lambda s: s.phase is JobPhase.SUCCEEDED,
        "the release command",
    )
    cluster.start(objects)
    harness.until(lambda: cluster.rollout(objects), lambda r: r.ready_since is not None, "Ready")
    cluster.activate(objects)


def live(harness: KubernetesHarness, manifest: dict[str, Any]) -> dict[str, Any]:
    resource, name, namespace = harness.cluster.applier.locate(manifest, harness.namespace)
    found: dict[str, Any] = harness.rest.get(resource.item(name, namespace))
    return found


@contextlib.contextmanager
def impatient(fault_proxy: Any, hanging: str) -> Iterator[KubernetesCluster]:
    """A client through the fault proxy that gives up after 1 s and opens a connection per
    request, while the proxy holds the first GET matching ``hanging`` for 10 s."""
    cluster = connect(
        fault_proxy.context, str(fault_proxy.kubeconfig), timeouts=Timeouts(connect=1.0, read=1.0)
    )
    cluster.connection.api_client.set_default_header("Connection", "close")  # type: ignore[no-untyped-call]
    fault_proxy.hang("GET", hanging, times=1, seconds=10)
    try:
        yield cluster
    finally:
        fault_proxy.clear()
        cluster.close()


# -- server-side apply -----------------------------------------------------------------------


def test_every_applied_object_is_owned_by_field_manager_nebula(
    kube_harness: KubernetesHarness,
) -> None:
    objects = release(kube_harness, cron=True)
    deploy(kube_harness, objects)

    for manifest in everything(objects):
        entries = live(kube_harness, manifest)["metadata"]["managedFields"]
        ours = [e for e in entries if e["manager"] == "nebula"]
        assert [e["operation"] for e in ours] == ["Apply"], (manifest["kind"], entries)


# 0 included: the renderers omit `minReadySeconds: 0`, which Kubernetes would store as absent
# and so see as a change on every apply.
@pytest.mark.parametrize("stabilization", [1, 0])
def test_a_second_apply_of_the_same_release_changes_nothing(
    kube_harness: KubernetesHarness, stabilization: int
) -> None:
    objects = release(kube_harness, cron=True, stabilization_seconds=stabilization)
    deploy(kube_harness, objects)

    def settled() -> bool:  # controllers done writing status: only our apply could change it
        deployment = live(
            kube_harness, next(m for m in objects.workload if m["kind"] == "Deployment")
        )
        status = deployment.get("status", {})
        return bool(
            status.get("observedGeneration") == deployment["metadata"]["generation"]
            and status.get("availableReplicas") == status.get("replicas") == 2
            and status.get("updatedReplicas") == 2
        )

    wait_for(settled, "the Deployment's status to settle")
    before = {
        (m["kind"], m["metadata"]["name"]): live(kube_harness, m)["metadata"]["resourceVersion"]
        for m in everything(objects)
    }

    deploy(kube_harness, objects)

    after = {
        (m["kind"], m["metadata"]["name"]): live(kube_harness, m)["metadata"]["resourceVersion"]
        for m in everything(objects)
    }
    assert after == before


def test_cronjobs_are_applied_as_batch_v1beta1_on_kubernetes_1_20(
    kube_harness: KubernetesHarness,
) -> None:
    capabilities = kube_harness.cluster.capabilities()
    objects = release(kube_harness, cron=True)
    kube_harness.cluster.admit(objects)
    kube_harness.cluster.start(objects)

    assert capabilities.kube_version == "1.20"
    assert capabilities.cronjob_api_version == "batch/v1beta1"
    assert capabilities.has("batch/v1/Job") and not capabilities.has("batch/v1/CronJob")
    cronjob = kube_harness.rest.get(
        f"/apis/batch/v1beta1/namespaces/{objects.namespace}/cronjobs/api-r1-nightly"
    )
    assert cronjob["spec"]["schedule"] == "0 3 * * *"


def test_a_kind_the_server_does_not_serve_is_a_configuration_error(
    kube_harness: KubernetesHarness,
) -> None:
    objects = release(kube_harness, cron=True)
    kube_harness.cluster.admit(objects)
    cronjob = next(m for m in objects.workload if m["kind"] == "CronJob")

    with pytest.raises(PermanentError) as refused:
        kube_harness.cluster.applier.apply({**cronjob, "apiVersion": "batch/v1"})

    assert refused.value.code == "configuration"
    assert str(refused.value) == (
        "The cluster does not serve batch/v1 CronJob (it serves batch/v1beta1); "
        "the release was rendered for another Kubernetes version"
    )


# -- what the API server and the network say -------------------------------------------------


@pytest.mark.parametrize("status", [500, 503, 409, 429])
def test_errors_worth_retrying_are_transient(kube_harness: KubernetesHarness, status: int) -> None:
    objects = release(kube_harness)
    kube_harness.cluster.admit(objects)
    kube_harness.proxy.fail("PATCH", r"/deployments/api-r1\?", status=status, times=1)

    with pytest.raises(TransientError) as failed:
        kube_harness.cluster.start(objects)

    assert failed.value.status == status
    assert not isinstance(failed.value, UnreachableError)
    assert str(failed.value).startswith(
        f"Kubernetes API could not apply Deployment/api-r1 in {objects.namespace}: {status} "
    )
    kube_harness.cluster.start(objects)  # the fault was a one-off: the replay goes through
    assert kube_harness.names("Deployment") == {"api-r1"}


def test_a_request_that_hangs_times_out_as_transient(
    kube_harness: KubernetesHarness, fault_proxy: Any
) -> None:
    objects = release(kube_harness)
    kube_harness.cluster.admit(objects)
    kube_harness.cluster.start(objects)

    with (
        impatient(fault_proxy, hanging=r"/deployments/api-r1$") as cluster,
        pytest.raises(TransientError) as failed,
    ):
        cluster.rollout(objects)

    assert not isinstance(failed.value, UnreachableError)
    assert str(failed.value) == (
        f"Kubernetes API did not answer in time to read Deployment/api-r1 in {objects.namespace}"
    )


@pytest.mark.parametrize(
    ("status", "error"), [(403, PermanentError), (500, TransientError), (409, TransientError)]
)
def test_a_refused_selector_patch_keeps_the_previous_release(
    kube_harness: KubernetesHarness, status: int, error: type[Exception]
) -> None:
    first = release(kube_harness, 1, release_command=False)
    second = release(kube_harness, 2, release_command=False)
    for objects in (first, second):
        kube_harness.cluster.admit(objects)
        kube_harness.cluster.start(objects)
    kube_harness.cluster.activate(first)
    kube_harness.proxy.fail(
        "PATCH",
        r"/services/api\?",
        status=status,
        times=None,
        message='services "api" is forbidden: injected',
    )

    with pytest.raises(error) as refused:
        kube_harness.cluster.activate(second)

    assert getattr(refused.value, "status", None) == status
    if status == 403:
        assert refused.value.code == Blocker.ROUTE_ACTIVATION.value  # type: ignore[attr-defined]
        assert str(refused.value) == (
            f"Kubernetes API refused to apply Service/api in {first.namespace}: 403 Forbidden: "
            'services "api" is forbidden: injected'
        )
    selector = kube_harness.get("Service", "api")["spec"]["selector"]
    assert selector["nebula.dev/release"] == "r-1"


def test_a_probe_the_pod_keeps_waiting_fails_without_raising(
    kube_harness: KubernetesHarness, fault_proxy: Any
) -> None:
    objects = release(kube_harness, release_command=False)
    kube_harness.cluster.admit(objects)
    kube_harness.cluster.start(objects)

    with impatient(fault_proxy, hanging=r"/proxy/healthz$") as cluster:
        result = cluster.probe(objects)

    assert not result.ok
    assert result.message == (
        f"api-r1:8080: Kubernetes API did not answer in time to probe "
        f"Service api-r1 in {objects.namespace}"
    )


def test_a_namespace_nebula_may_not_manage_only_has_to_exist(
    kube_harness: KubernetesHarness,
) -> None:
    objects = release(kube_harness, release_command=False)
    kube_harness.proxy.fail(
        "PATCH",
        rf"/api/v1/namespaces/{objects.namespace}\?",
        status=403,
        times=None,
        message="namespaces is forbidden: injected",
    )

    with pytest.raises(PermanentError) as refused:
        kube_harness.cluster.admit(objects)
    assert (refused.value.code, refused.value.status) == ("configuration", 403)

    kube_harness.rest.post(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": objects.namespace}},
    )
    kube_harness.cluster.admit(objects)
    kube_harness.cluster.start(objects)
    assert kube_harness.names("Deployment") == {"api-r1"}


def test_refused_credentials_are_unreachable_and_never_shown(
    kube_api: KubeAPI, kube_harness: KubernetesHarness, tmp_path: Any
) -> None:
    token = "s3cr3t-token-that-must-not-leak"
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, kube_api.server, kube_api.ca_path, token, "wrong-token")
    cluster = connect("wrong-token", str(kubeconfig), timeouts=Timeouts(2.0, 4.0))

    try:
        with pytest.raises(UnreachableError) as refused:
            cluster.selected_release(kube_harness.namespace, "api")
    finally:
        cluster.close()

    assert refused.value.status == 401
    assert "refused our credentials" in str(refused.value)
    assert token not in str(refused.value) and token not in repr(refused.value)


def test_the_token_is_removed_from_messages_that_quote_it(
    kube_api: KubeAPI, kube_harness: KubernetesHarness
) -> None:
    kube_harness.proxy.fail(
        "GET",
        r"/services/api$",
        status=500,
        message=f"upstream said: Authorization: Bearer {kube_api.token}",
    )

    with pytest.raises(TransientError) as failed:
        kube_harness.cluster.selected_release(kube_harness.namespace, "api")

    assert kube_api.token not in str(failed.value)
    assert "Authorization: ***" in str(failed.value)


# -- quotas ----------------------------------------------------------------------------------


def quota(harness: KubernetesHarness, hard: dict[str, str]) -> None:
    harness.rest.post(
        f"/api/v1/namespaces/{harness.namespace}/resourcequotas",
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "compute"},
            "spec": {"hard": hard},
        },
    )


def test_a_release_larger_than_the_quota_is_refused_when_admitted(
    kube_harness: KubernetesHarness,
) -> None:
    objects = release(kube_harness, replicas=3, release_command=False)
    kube_harness.cluster.admit(objects)
    quota(kube_harness, {"pods": "2", "requests.memory": "4Gi"})

    with pytest.raises(PermanentError) as refused:
        kube_harness.cluster.admit(objects)

    assert refused.value.code == "capacity"
    assert (
        str(refused.value) == "The release needs 3 pods but ResourceQuota compute allows at most 2"
    )


def test_an_exhausted_quota_is_a_capacity_blocker_when_starting(
    kube_harness: KubernetesHarness,
) -> None:
    first = release(kube_harness, 1, replicas=2, release_command=False)
    kube_harness.cluster.admit(first)
    quota(kube_harness, {"pods": "3"})
    wait_for(
        lambda: (
            kube_harness.rest.get(
                f"/api/v1/namespaces/{kube_harness.namespace}/resourcequotas/compute"
            )
            .get("status", {})
            .get("hard")
        ),
        "the quota controller to count the namespace",
    )
    kube_harness.cluster.start(first)
    kube_harness.until(
        lambda: kube_harness.cluster.rollout(first),
        lambda r: r.ready_since is not None,
        "r-1 Ready",
    )

    second = release(kube_harness, 2, replicas=2, release_command=False)
    kube_harness.cluster.admit(second)  # 2 pods fit the quota of 3, but not next to r-1's 2
    kube_harness.cluster.start(second)
    rollout = kube_harness.until(
        lambda: kube_harness.cluster.rollout(second),
        lambda r: r.blocker is not None,
        "the capacity blocker",
    )

    assert rollout.blocker is Blocker.CAPACITY
    assert "exceeded quota" in rollout.message


# -- what users read -------------------------------------------------------------------------


def failed_release_job(harness: KubernetesHarness, objects: ReleaseObjects, what: str) -> JobStatus:
    """The release's Job started and waited for until it fails."""
    harness.cluster.admit(objects)
    harness.cluster.start_release_job(objects)
    return harness.until(
        lambda: harness.cluster.release_job(objects), lambda s: s.phase is JobPhase.FAILED, what
    )


def test_messages_of_a_failed_release_command(kube_harness: KubernetesHarness) -> None:
    objects = release(kube_harness)
    kube_harness.kubelet.script(
        release_command_image(objects.image),
        Behaviour.FAIL,
        logs="applying 0042_orders\nERROR: relation exists\n",
    )
    outcome = failed_release_job(kube_harness, objects, "the failure")

    assert outcome.message == "Release command failed (Job api-r1-release): exit code 1 (Error)"
    assert outcome.logs_tail == "applying 0042_orders\nERROR: relation exists\n"


def test_a_release_command_whose_image_cannot_be_pulled_fails_at_once(
    kube_harness: KubernetesHarness,
) -> None:
    objects = release(kube_harness)
    kube_harness.kubelet.script(release_command_image(objects.image), Behaviour.IMAGE_PULL)
    outcome = failed_release_job(kube_harness, objects, "the failure")

    assert outcome.message.startswith("Release command cannot start (Job api-r1-release): ")
    assert "ErrImagePull" in outcome.message or "ImagePullBackOff" in outcome.message


def test_the_timeout_message_names_the_deadline(kube_harness: KubernetesHarness) -> None:
    objects = release(kube_harness, release_command_timeout=1)
    kube_harness.hang_release_command(objects)
    outcome = failed_release_job(kube_harness, objects, "the timeout")

    assert (
        outcome.message
        == "Release command timed out after 1s (Job api-r1-release: DeadlineExceeded)"
    )


def test_activation_moves_the_stable_services_endpoints_to_the_new_pods(
    kube_harness: KubernetesHarness,
) -> None:
    first = release(kube_harness, 1, release_command=False)
    second = release(kube_harness, 2, release_command=False)
    for objects in (first, second):
        kube_harness.cluster.admit(objects)
        kube_harness.cluster.start(objects)
        kube_harness.until(
            lambda o=objects: kube_harness.cluster.rollout(o),  # type: ignore[misc]
            lambda r: r.ready_since is not None,
            "Ready",
        )
    pods = kube_harness.rest.get(f"/api/v1/namespaces/{kube_harness.namespace}/pods")["items"]
    ips: dict[str, set[str]] = {p["metadata"]["labels"]["nebula.dev/release"]: set() for p in pods}
    for pod in pods:
        ips[pod["metadata"]["labels"]["nebula.dev/release"]].add(pod["status"]["podIP"])

    def endpoint_ips() -> set[str]:
        try:
            found = kube_harness.rest.get(
                f"/api/v1/namespaces/{kube_harness.namespace}/endpoints/api"
            )
        except KubeRestError as exc:
            if exc.status == 404:  # the endpoints controller has not caught up yet
                return set()
            raise
        return {a["ip"] for s in found.get("subsets") or [] for a in s.get("addresses") or []}

    kube_harness.cluster.activate(first)
    wait_for(lambda: endpoint_ips() == ips["r-1"], "the stable Service to select r-1's pods")
    kube_harness.cluster.activate(second)
    wait_for(lambda: endpoint_ips() == ips["r-2"], "the stable Service to select r-2's pods")


def test_drain_scales_the_release_to_zero_before_deleting_it(
    kube_harness: KubernetesHarness,
) -> None:
    objects = release(kube_harness, release_command=False)
    kube_harness.cluster.admit(objects)
    kube_harness.cluster.start(objects)
    kube_harness.proxy.seen.clear()

    kube_harness.cluster.drain(objects.namespace, "api", "r-1")

    writes = [
        (s.method, s.target.split("?")[0].rsplit("/", 2)[-2])
        for s in kube_harness.proxy.seen
        if s.method in ("PATCH", "DELETE")
    ]
    assert writes[0] == ("PATCH", "deployments")
    assert ("DELETE", "deployments") in writes[1:]


def test_an_unreachable_probe_target_fails_the_probe_with_the_reason(
    kube_harness: KubernetesHarness,
) -> None:
    objects = release(kube_harness, release_command=False)
    kube_harness.kubelet.script(objects.image, Behaviour.RUNNING)  # nothing listens in the pods
    kube_harness.cluster.admit(objects)
    kube_harness.cluster.start(objects)
    kube_harness.until(
        lambda: kube_harness.cluster.rollout(objects), lambda r: r.ready_since is not None, "Ready"
    )

    result = kube_harness.cluster.probe(objects)

    assert not result.ok
    assert result.message.startswith("GET api-r1:8080/healthz answered 5")
    assert "error trying to reach service" in result.message


def test_the_http_probe_fails_on_a_server_error(kube_harness: KubernetesHarness) -> None:
    from tests.runtimes.harness import http_server

    objects = release(kube_harness, release_command=False)
    with http_server(lambda path: 503 if path == "/healthz" else 200) as port:
        kube_harness.kubelet.script(objects.image, Behaviour.RUNNING, serve_port=port)
        kube_harness.cluster.admit(objects)
        kube_harness.cluster.start(objects)
        kube_harness.until(
            lambda: kube_harness.cluster.rollout(objects),
            lambda r: r.ready_since is not None,
            "Ready",
        )
        result = kube_harness.cluster.probe(objects)

    assert not result.ok
    assert result.message == "GET api-r1:8080/healthz answered 503: 503 /healthz"


def test_connect_uses_the_current_context_by_default(kube_api: KubeAPI) -> None:
    cluster: KubernetesCluster = connect(
        kubeconfig=str(kube_api.kubeconfig), environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    )
    try:
        assert cluster.capabilities().kube_version == "1.20"
        assert cluster.connection.context is None and not cluster.connection.in_cluster
    finally:
        cluster.close()
