"""Reading a rollout from API objects: the pure part of the Kubernetes runtime, table-driven
over the pod states a real kubelet reports (shapes as kubelets write them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from reconciler.core.states import Blocker
from reconciler.runtimes.kubernetes import rollouts

JSON = dict[str, Any]
T0 = "2026-01-05T12:00:00Z"


def deployment(replicas: int = 2, conditions: list[JSON] | None = None) -> JSON:
    return {
        "metadata": {"name": "api-r3", "creationTimestamp": T0},
        "spec": {"replicas": replicas},
        "status": {"conditions": conditions or []},
    }


def pod(
    name: str,
    state: JSON | None = None,
    *,
    ready: bool = False,
    ready_at: str = T0,
    node: str = "node-1",
    scheduled: JSON | None = None,
    deleting: bool = False,
    restarts: int = 0,
    last: JSON | None = None,
) -> JSON:
    conditions = [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": ready_at}
    ]
    if scheduled is not None:
        conditions.append(scheduled)
    status: JSON = {
        "phase": "Running" if state and "running" in state else "Pending",
        "conditions": conditions,
    }
    if state is not None:
        status["containerStatuses"] = [
            {
                "name": "web",
                "image": "reg/api@sha256:1",
                "ready": ready,
                "restartCount": restarts,
                "state": state,
                "lastState": last or {},
            }
        ]
    metadata: JSON = {"name": name, "creationTimestamp": T0}
    if deleting:
        metadata["deletionTimestamp"] = T0
    return {
        "metadata": metadata,
        "spec": {"nodeName": node, "containers": [{"name": "web"}]},
        "status": status,
    }


RUNNING = {"running": {"startedAt": T0}}
CREATING = {"waiting": {"reason": "ContainerCreating"}}
PULL_BACKOFF = {
    "waiting": {
        "reason": "ImagePullBackOff",
        "message": 'Back-off pulling image "reg/api@sha256:1"',
    }
}
CRASHING = {
    "waiting": {
        "reason": "CrashLoopBackOff",
        "message": "back-off 40s restarting failed container=web",
    }
}
UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/3 nodes are available: 3 Insufficient memory.",
}


def observe(
    pods: list[JSON],
    workload: JSON | None = None,
    owners: list[JSON] | None = None,
    events: list[JSON] | None = None,
) -> Any:
    return rollouts.observe(
        workload if workload is not None else deployment(),
        owners or [],
        pods,
        events or [],
        kind="Deployment",
        name="api-r3",
        expected=2,
    )


def test_ready_since_is_the_last_replica_to_become_ready() -> None:
    rollout = observe(
        [
            pod("a", RUNNING, ready=True, ready_at="2026-01-05T12:00:05Z"),
            pod("b", RUNNING, ready=True, ready_at="2026-01-05T12:00:09Z"),
        ]
    )

    assert (rollout.desired, rollout.ready, rollout.started, rollout.blocker) == (2, 2, True, None)
    assert rollout.ready_since == datetime(2026, 1, 5, 12, 0, 9, tzinfo=UTC)
    assert rollout.message == "2 of 2 replicas Ready"


@pytest.mark.parametrize(
    ("pods", "started", "message"),
    [
        ([], False, "0 of 2 replicas Ready (0 pods created, waiting for pods to start)"),
        (
            [pod("a", CREATING), pod("b", RUNNING)],
            False,
            "0 of 2 replicas Ready (2 pods created, waiting for pods to start)",
        ),
        (
            [pod("a", RUNNING, ready=True), pod("b", RUNNING)],
            True,
            "1 of 2 replicas Ready (2 pods created, waiting for replicas to be Ready)",
        ),
        (
            [pod("a", RUNNING, ready=True), pod("b", RUNNING, ready=True, deleting=True)],
            False,
            "1 of 2 replicas Ready (1 pods created, waiting for pods to start)",
        ),
        (
            [pod("a", RUNNING), pod("b", None, node="")],
            False,
            "0 of 2 replicas Ready (2 pods created, waiting for pods to start)",
        ),
    ],
)
def test_not_ready_yet(pods: list[JSON], started: bool, message: str) -> None:
    rollout = observe(pods)

    assert rollout.started is started
    assert rollout.ready_since is None and rollout.blocker is None
    assert rollout.message == message


def test_a_pull_failure_is_the_image_pull_blocker() -> None:
    rollout = observe([pod("a", RUNNING, ready=True), pod("b", PULL_BACKOFF)])

    assert rollout.blocker is Blocker.IMAGE_PULL
    assert not rollout.started
    assert rollout.message == (
        'ImagePullBackOff on pod b: Back-off pulling image "reg/api@sha256:1"'
    )


def test_an_unschedulable_pod_is_the_capacity_blocker() -> None:
    rollout = observe([pod("a", None, node="", scheduled=UNSCHEDULABLE)])

    assert rollout.blocker is Blocker.CAPACITY
    assert (
        rollout.message == "Cannot schedule pod a: 0/3 nodes are available: 3 Insufficient memory."
    )


def test_unschedulable_for_another_reason_is_only_said() -> None:
    affinity = {
        **UNSCHEDULABLE,
        "message": "0/3 nodes are available: 3 node(s) didn't match node selector.",
    }

    rollout = observe([pod("a", None, node="", scheduled=affinity)])

    assert rollout.blocker is None


def test_a_failed_scheduling_event_is_the_capacity_blocker() -> None:
    event = {
        "reason": "FailedScheduling",
        "involvedObject": {"kind": "Pod", "name": "a"},
        "message": "0/1 nodes are available: 1 Insufficient cpu.",
    }

    rollout = observe([pod("a", None, node="")], events=[event])

    assert rollout.blocker is Blocker.CAPACITY
    assert "Insufficient cpu" in rollout.message


def test_a_quota_refusal_on_the_replica_set_is_the_capacity_blocker() -> None:
    replica_set = {
        "metadata": {"name": "api-r3-5d8f"},
        "status": {
            "conditions": [
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "reason": "FailedCreate",
                    "message": 'pods "api-r3-5d8f-x" is forbidden: exceeded quota: compute, requested: '
                    "pods=1, used: pods=3, limited: pods=3",
                }
            ]
        },
    }

    rollout = observe([pod("a", RUNNING, ready=True)], owners=[replica_set])

    assert rollout.blocker is Blocker.CAPACITY
    assert rollout.message.startswith("Cannot create pods for api-r3-5d8f: pods ")


def test_another_creation_failure_is_only_said() -> None:
    event = {
        "reason": "FailedCreate",
        "involvedObject": {"name": "api-r3"},
        "message": 'pods "x" is forbidden: error looking up service account default/api',
    }

    rollout = observe([], events=[event])

    assert rollout.blocker is None
    assert rollout.message == (
        'Cannot create pods for api-r3: pods "x" is forbidden: error '
        "looking up service account default/api"
    )


def test_a_crash_loop_is_said_but_not_definitive() -> None:
    rollout = observe(
        [
            pod("a", CRASHING, restarts=4, last={"terminated": {"exitCode": 1}}),
            pod("b", RUNNING, ready=True),
        ]
    )

    assert rollout.blocker is None
    assert rollout.started  # the image is there: it ran, and crashed
    assert rollout.message == (
        "CrashLoopBackOff on pod a (restarted 4 times): back-off 40s "
        "restarting failed container=web"
    )


def test_a_missing_workload() -> None:
    rollout = rollouts.observe(None, [], [], [], kind="StatefulSet", name="db", expected=1)

    assert (rollout.desired, rollout.ready, rollout.started) == (1, 0, False)
    assert rollout.message == "StatefulSet db does not exist (yet)"
