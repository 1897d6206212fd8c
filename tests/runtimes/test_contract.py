"""The ``Cluster`` contract, run against every runtime.

Each test runs once on the simulated cluster and once on the Kubernetes runtime against the
real API server (with the test kubelet playing the nodes), through the ``harness`` fixture:
what the engine may rely on must hold for both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from reconciler.core.drifts import Drift
from reconciler.core.states import Blocker
from reconciler.engine.drifting import compare
from reconciler.errors import PermanentError, TransientError, UnreachableError
from reconciler.runtimes.cluster import (
    Cluster,
    JobPhase,
    JobStatus,
    ProbeKind,
    ReleaseObjects,
    Rollout,
)
from tests.runtimes import releases
from tests.runtimes.harness import Harness
from tests.runtimes.releases import Service, image


def service(harness: Harness, tag: str = "1", **options: Any) -> Service:
    return Service(image("api", f"{harness.project}-{tag}"), **options)


def started(harness: Harness, number: int = 1, **options: Any) -> ReleaseObjects:
    """Release ``r-<number>`` admitted and its workload applied."""
    objects = harness.release(number, service(harness, str(number), **options))
    harness.cluster.admit(objects)
    harness.cluster.start(objects)
    return objects


def ready(harness: Harness, objects: ReleaseObjects) -> Rollout:
    return harness.until(
        lambda: harness.cluster.rollout(objects),
        lambda r: r.ready_since is not None,
        f"{objects.release} Ready",
    )


def release_job_outcome(harness: Harness, objects: ReleaseObjects) -> JobStatus:
    harness.cluster.start_release_job(objects)
    return harness.until(
        lambda: harness.cluster.release_job(objects),
        lambda s: s.phase is not JobPhase.RUNNING,
        "the release command's end",
    )


# -- admitted and starting -------------------------------------------------------------------


def test_admit_creates_the_namespace_and_can_be_replayed(harness: Harness) -> None:
    objects = harness.release(1, service(harness))

    harness.cluster.admit(objects)
    harness.cluster.admit(objects)

    assert harness.names("Namespace") == {objects.namespace}
    assert harness.names("Deployment") == set()


def test_start_applies_the_release_workload_but_not_the_stable_service(harness: Harness) -> None:
    started(harness, cron=True)

    assert harness.names("Deployment") == {"api-r1"}
    assert harness.names("Service") == {"api-r1"}
    assert harness.names("ConfigMap") >= {"api-r1-vars"}
    assert harness.names("CronJob") == {"api-r1-nightly"}
    assert harness.names("Job") == set()  # the release command runs only when asked


# -- releasing -------------------------------------------------------------------------------


def test_release_command_that_succeeds(harness: Harness) -> None:
    objects = harness.release(1, service(harness))
    harness.cluster.admit(objects)

    outcome = release_job_outcome(harness, objects)

    assert outcome.phase is JobPhase.SUCCEEDED
    assert harness.names("Job") == {"api-r1-release"}


def test_release_command_that_fails_keeps_the_tail_of_its_logs(harness: Harness) -> None:
    objects = harness.release(1, service(harness))
    harness.fail(objects, Blocker.RELEASE_COMMAND, logs="applying 0042_orders\nmigration failed\n")
    harness.cluster.admit(objects)

    outcome = release_job_outcome(harness, objects)

    assert outcome.phase is JobPhase.FAILED
    assert outcome.message
    assert "migration failed" in outcome.logs_tail


def test_release_command_past_its_timeout_fails(harness: Harness) -> None:
    objects = harness.release(1, service(harness, release_command_timeout=2))
    harness.hang_release_command(objects)
    harness.cluster.admit(objects)

    outcome = release_job_outcome(harness, objects)

    assert outcome.phase is JobPhase.FAILED
    assert "2s" in outcome.message


def test_a_release_command_not_started_yet_is_running(harness: Harness) -> None:
    objects = harness.release(1, service(harness))
    harness.cluster.admit(objects)

    assert harness.cluster.release_job(objects).phase is JobPhase.RUNNING


def test_starting_the_release_command_twice_runs_it_once(harness: Harness) -> None:
    objects = harness.release(1, service(harness))
    harness.cluster.admit(objects)
    harness.cluster.start_release_job(objects)
    harness.cluster.start_release_job(objects)

    assert release_job_outcome(harness, objects).phase is JobPhase.SUCCEEDED
    assert harness.names("Job") == {"api-r1-release"}


# -- qualifying ------------------------------------------------------------------------------


def test_rollout_reports_every_replica_ready(harness: Harness) -> None:
    objects = started(harness, replicas=2)

    rollout = ready(harness, objects)

    assert (rollout.desired, rollout.ready, rollout.started) == (2, 2, True)
    assert rollout.blocker is None


@pytest.mark.parametrize(
    ("blocker", "words"),
    [
        (Blocker.IMAGE_PULL, ("ErrImagePull", "ImagePullBackOff")),
        (Blocker.CAPACITY, ("Insufficient cpu",)),
    ],
)
def test_rollout_names_a_definitive_obstacle(
    harness: Harness, blocker: Blocker, words: tuple[str, ...]
) -> None:
    objects = harness.release(1, service(harness))
    harness.fail(objects, blocker)
    harness.cluster.admit(objects)
    harness.cluster.start(objects)

    rollout = harness.until(
        lambda: harness.cluster.rollout(objects),
        lambda r: r.blocker is not None,
        f"the {blocker} blocker",
    )

    assert rollout.blocker is blocker
    assert rollout.ready == 0 and rollout.ready_since is None
    assert any(word in rollout.message for word in words), rollout.message
    if blocker is Blocker.IMAGE_PULL:
        assert objects.image in rollout.message


def test_a_crash_looping_release_never_becomes_ready_and_says_why(harness: Harness) -> None:
    objects = harness.release(1, service(harness))
    harness.fail(objects, Blocker.READINESS)
    harness.cluster.admit(objects)
    harness.cluster.start(objects)

    rollout = harness.until(
        lambda: harness.cluster.rollout(objects),
        lambda r: r.started and "CrashLoopBackOff" in r.message,
        "every pod started, and crash-looping",
    )

    # Not definitive: the engine fails it with `readiness` once its timeout has passed.
    assert rollout.blocker is None
    assert rollout.ready == 0 and rollout.ready_since is None
    assert not harness.cluster.probe(objects).ok


@pytest.mark.parametrize("kind", ["http", "worker"])
def test_probe_through_the_release_service(harness: Harness, kind: str) -> None:
    objects = started(harness, kind=kind)
    ready(harness, objects)

    result = harness.until(
        lambda: harness.cluster.probe(objects), lambda r: r.ok, "a passing probe"
    )

    assert objects.probe is (ProbeKind.HTTP if kind == "http" else ProbeKind.TCP)
    assert result.message


# -- activating, draining, removing ----------------------------------------------------------


def test_activation_creates_then_repoints_the_stable_service(harness: Harness) -> None:
    first = started(harness, 1)
    assert harness.cluster.selected_release(first.namespace, "api") is None

    harness.cluster.activate(first)
    assert harness.cluster.selected_release(first.namespace, "api") == "r-1"
    assert "api" in harness.names("Service")

    second = started(harness, 2)
    harness.cluster.activate(second)
    harness.cluster.activate(second)
    assert harness.cluster.selected_release(first.namespace, "api") == "r-2"


def test_refused_activation_leaves_the_previous_release_selected(harness: Harness) -> None:
    first = started(harness, 1)
    harness.cluster.activate(first)
    second = started(harness, 2)
    harness.fail(second, Blocker.ROUTE_ACTIVATION)

    with pytest.raises(TransientError) as refused:
        harness.cluster.activate(second)

    assert refused.value.status == 409
    assert not isinstance(refused.value, UnreachableError)
    assert harness.cluster.selected_release(first.namespace, "api") == "r-1"


def test_drain_deletes_the_previous_release_and_keeps_the_new_one(harness: Harness) -> None:
    first = started(harness, 1, cron=True)
    harness.cluster.activate(first)
    second = started(harness, 2, cron=True)
    harness.cluster.activate(second)

    harness.cluster.drain(first.namespace, "api", "r-1")
    harness.cluster.drain(first.namespace, "api", "r-1")

    assert harness.names("Deployment") == {"api-r2"}
    assert harness.names("Service") == {"api", "api-r2"}
    assert harness.names("CronJob") == {"api-r2-nightly"}
    assert "api-r1-vars" not in harness.names("ConfigMap")
    assert harness.cluster.selected_release(first.namespace, "api") == "r-2"


def test_a_batch_of_calls_leaves_what_the_same_calls_leave_one_by_one(harness: Harness) -> None:
    """What a tick does: a batch of stages inside ``Cluster.batch()``; once it ends, all of
    it is live, whatever the runtime does with the writes meanwhile."""
    first = started(harness, 1, cron=True)
    harness.cluster.activate(first)
    second = harness.release(2, service(harness, "2", cron=True))

    with harness.cluster.batch():
        harness.cluster.admit(second)
        harness.cluster.start(second)
        harness.cluster.activate(second)
        harness.cluster.drain(first.namespace, "api", "r-1")

    assert harness.names("Deployment") == {"api-r2"}
    assert harness.names("Service") == {"api", "api-r2"}
    assert harness.names("CronJob") == {"api-r2-nightly"}
    assert harness.cluster.selected_release(first.namespace, "api") == "r-2"


def test_remove_deletes_a_release_that_never_took_traffic(harness: Harness) -> None:
    first = started(harness, 1)
    harness.cluster.activate(first)
    started(harness, 2)

    harness.cluster.remove(first.namespace, "api", "r-2")

    assert harness.names("Deployment") == {"api-r1"}
    assert harness.names("Service") == {"api", "api-r1"}
    assert harness.cluster.selected_release(first.namespace, "api") == "r-1"


def test_teardown_deletes_the_unit_and_is_already_clean_the_second_time(harness: Harness) -> None:
    objects = harness.release(1, service(harness, cron=True))
    harness.cluster.admit(objects)
    release_job_outcome(harness, objects)
    harness.cluster.start(objects)
    harness.cluster.activate(objects)

    first = harness.cluster.teardown(objects.namespace, "api")
    second = harness.cluster.teardown(objects.namespace, "api")

    assert not first.already_clean
    assert {
        "Deployment/api-r1",
        "Service/api",
        "Service/api-r1",
        "CronJob/api-r1-nightly",
        "Job/api-r1-release",
        "PodDisruptionBudget/api-r1",
    } <= set(first.deleted)
    assert second.already_clean and second.deleted == ()
    for kind in ("Deployment", "Service", "CronJob", "Job", "PodDisruptionBudget"):
        assert harness.names(kind) == set(), kind
    assert harness.names("Namespace") == {objects.namespace}  # the environment's, not the unit's
    assert harness.cluster.selected_release(objects.namespace, "api") is None


# -- live state ------------------------------------------------------------------------------


def active(harness: Harness, **options: Any) -> ReleaseObjects:
    """Release r-1 started, Ready and serving (the stable Service points at it)."""
    objects = started(harness, 1, cron=True, **options)
    ready(harness, objects)
    harness.cluster.activate(objects)
    return objects


def drift_of(
    harness: Harness, objects: ReleaseObjects, expected: tuple[Drift, ...]
) -> tuple[Drift, ...]:
    """The release's drift once it is ``expected`` (a watch takes a moment to bring a change)."""
    return harness.until(
        lambda: compare(objects, harness.cluster.live(objects)),
        lambda found: found == expected,
        f"drift {expected}",
    )


def test_a_release_as_applied_has_no_drift(harness: Harness) -> None:
    objects = active(harness)

    live = harness.cluster.live(objects)

    # What the API server defaults, respells or adds (status, uid, managedFields ...) is none.
    assert sorted(live) == [
        "ConfigMap/api-r1-vars",
        "CronJob/api-r1-nightly",
        "Deployment/api-r1",
        "PodDisruptionBudget/api-r1",  # two web replicas (policy/v1beta1 on the 1.20 server)
        "Service/api",
        "Service/api-r1",
    ]
    assert all(obj is not None for obj in live.values())
    assert compare(objects, live) == ()


def test_changes_behind_nebulas_back_are_drift_and_heal_puts_them_back(harness: Harness) -> None:
    objects = active(harness)
    harness.edit(objects, "Deployment/api-r1", "spec.replicas", 5)
    harness.edit(objects, "ConfigMap/api-r1-vars", "data.LOG_LEVEL", "debug")
    harness.delete(objects, "Service/api")

    found = drift_of(
        harness,
        objects,
        (
            Drift("ConfigMap/api-r1-vars", "data.LOG_LEVEL", "debug", "info"),
            Drift("Deployment/api-r1", "spec.replicas", "5", "2"),
            Drift("Service/api", missing=True),
        ),
    )
    harness.cluster.heal(objects, [d.object for d in found])

    drift_of(harness, objects, ())
    assert harness.cluster.selected_release(objects.namespace, "api") == "r-1"


def test_an_annotation_or_label_another_manager_adds_is_not_drift(harness: Harness) -> None:
    objects = active(harness)
    harness.edit(objects, "Deployment/api-r1", "metadata.annotations.team", "payments")
    harness.edit(objects, "Service/api", "metadata.labels.owner", "ops")
    harness.edit(objects, "Deployment/api-r1", "spec.replicas", 3)  # ... which is, to show
    # the watch brought the changes before the annotation is judged

    drift_of(harness, objects, (Drift("Deployment/api-r1", "spec.replicas", "3", "2"),))


def test_heal_applies_only_the_objects_named(harness: Harness) -> None:
    objects = active(harness)
    harness.edit(objects, "Deployment/api-r1", "spec.replicas", 5)
    harness.edit(objects, "ConfigMap/api-r1-vars", "data.LOG_LEVEL", "debug")
    drift_of(
        harness,
        objects,
        (
            Drift("ConfigMap/api-r1-vars", "data.LOG_LEVEL", "debug", "info"),
            Drift("Deployment/api-r1", "spec.replicas", "5", "2"),
        ),
    )

    harness.cluster.heal(objects, ["Deployment/api-r1"])

    drift_of(harness, objects, (Drift("ConfigMap/api-r1-vars", "data.LOG_LEVEL", "debug", "info"),))


# -- the API unreachable ---------------------------------------------------------------------

CALLS: dict[str, Callable[[Cluster, ReleaseObjects], object]] = {
    "admit": lambda c, o: c.admit(o),
    "start_release_job": lambda c, o: c.start_release_job(o),
    "release_job": lambda c, o: c.release_job(o),
    "start": lambda c, o: c.start(o),
    "rollout": lambda c, o: c.rollout(o),
    "probe": lambda c, o: c.probe(o),
    "activate": lambda c, o: c.activate(o),
    "selected_release": lambda c, o: c.selected_release(o.namespace, o.unit),
    "drain": lambda c, o: c.drain(o.namespace, o.unit, "r-0"),
    "remove": lambda c, o: c.remove(o.namespace, o.unit, "r-0"),
    "teardown": lambda c, o: c.teardown(o.namespace, o.unit),
    "live": lambda c, o: c.live(o),
    "heal": lambda c, o: c.heal(o, ["Deployment/api-r1"]),
}


def test_every_call_raises_unreachable_while_the_api_is_down(harness: Harness) -> None:
    objects = started(harness, 1)
    harness.cluster.start_release_job(objects)

    harness.unreachable()
    for name, call in CALLS.items():
        with pytest.raises(UnreachableError) as raised:
            call(harness.cluster, objects)
        assert raised.value.code == "delivery", name

    harness.reachable()
    assert harness.cluster.selected_release(objects.namespace, "api") is None
    assert harness.cluster.teardown(objects.namespace, "api").deleted


# -- autoscaled ----------------------------------------------------------------------------


def test_a_new_autoscaled_release_starts_at_the_running_count_never_below_its_minimum(
    harness: Harness,
) -> None:
    first = active(harness, autoscale="{ min = 2, max = 8 }")
    assert harness.cluster.live(first)["Deployment/api-r1"]["spec"]["replicas"] == 2
    harness.edit(first, "Deployment/api-r1", "spec.replicas", 5)  # as the autoscaler would
    harness.until(
        lambda: harness.cluster.live(first)["Deployment/api-r1"]["spec"]["replicas"],
        lambda count: count == 5,
        "the edit to be seen",
    )

    second = started(harness, 2, cron=True, autoscale="{ min = 2, max = 8 }")

    assert harness.cluster.live(second)["Deployment/api-r2"]["spec"]["replicas"] == 5
    # The running count is not drift: the autoscaler owns it (r-2 is not active yet, so the
    # stable Service still selects r-1: that is the only difference).
    assert [d.object for d in compare(second, harness.cluster.live(second))] == ["Service/api"]
    third = started(harness, 3, cron=True, autoscale="{ min = 6, max = 8 }")
    assert harness.cluster.live(third)["Deployment/api-r3"]["spec"]["replicas"] == 6


# -- a CloudNativePG Cluster -------------------------------------------------------------------


def test_a_cloudnative_cluster_qualifies_on_its_ready_instances(harness: Harness) -> None:
    objects = releases.cloudnative_objects(harness.project, instances=2)
    with harness.cloudnative_pg(present=True):
        harness.cluster.admit(objects)
        harness.cluster.start(objects)
        rollout = ready(harness, objects)
        assert (rollout.desired, rollout.ready, rollout.blocker) == (2, 2, None)
        assert harness.names("Cluster") == {"db"}
        assert harness.names("StatefulSet") == set()
        done = harness.cluster.teardown(objects.namespace, "db")
        assert "Cluster/db" in done.deleted
        assert harness.names("Cluster") == set()


def test_without_the_operator_a_cluster_is_refused_with_configuration(harness: Harness) -> None:
    objects = releases.cloudnative_objects(harness.project)
    with harness.cloudnative_pg(present=False), pytest.raises(PermanentError) as refused:
        harness.cluster.admit(objects)
    assert refused.value.code is Blocker.CONFIGURATION
    assert refused.value.message == (
        'postgres = "cloudnative-pg" needs the CloudNativePG operator (postgresql.cnpg.io/v1 '
        f"Cluster) on the cluster of {harness.project}/staging."
    )
