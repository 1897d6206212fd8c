"""How far a release's primary workload got, read from the objects the cluster reports.

Pure functions of API objects (plain JSON mappings): the workload (Deployment or StatefulSet),
its ReplicaSets, its pods and recent Warning events. Deciding what the result means (wait,
move on, fail) is the engine's job; this only says what is true now and names a definitive
obstacle when there is one:

- ``image-pull``: a container waits in ``ErrImagePull``/``ImagePullBackOff`` (or an image name
  the runtime refuses). The image will not appear by itself.
- ``capacity``: a pod cannot be scheduled for lack of resources (``PodScheduled=False``,
  ``Unschedulable``, "Insufficient ..."), or the ReplicaSet cannot create pods because a
  ``ResourceQuota`` is exhausted ("exceeded quota").
- ``CrashLoopBackOff`` is not definitive: it is said in ``message``, and the engine fails the
  deployment with ``readiness`` once its readiness timeout has passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from reconciler.core.states import Blocker
from reconciler.runtimes.cluster import Rollout

JSON = Mapping[str, Any]

IMAGE_PULL_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "RegistryUnavailable",
    }
)
# Waiting reasons of a container whose image is on the node: it was started at least once.
STARTED_WAITING_REASONS = frozenset(
    {"CrashLoopBackOff", "RunContainerError", "CreateContainerError"}
)
INSUFFICIENT = ("Insufficient ", "Too many pods")
QUOTA = "exceeded quota"


def parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def condition(obj: JSON, kind: str, where: str = "status") -> JSON | None:
    for entry in (obj.get(where) or {}).get("conditions") or []:
        if entry.get("type") == kind:
            return entry  # type: ignore[no-any-return]
    return None


def name_of(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def live(pods: Iterable[JSON]) -> list[JSON]:
    """Pods that count: not being deleted, not finished."""
    return [
        p
        for p in pods
        if not (p.get("metadata") or {}).get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]


def is_ready(pod: JSON) -> bool:
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def containers(pod: JSON) -> list[JSON]:
    status = pod.get("status") or {}
    return list(status.get("initContainerStatuses") or []) + list(
        status.get("containerStatuses") or []
    )


def waiting(container: JSON) -> tuple[str, str]:
    state = (container.get("state") or {}).get("waiting") or {}
    return str(state.get("reason") or ""), " ".join(str(state.get("message") or "").split())


def is_scheduled(pod: JSON) -> bool:
    scheduled = condition(pod, "PodScheduled")
    return bool((pod.get("spec") or {}).get("nodeName")) or (
        scheduled is not None and scheduled.get("status") == "True"
    )


def past_image_pull(pod: JSON) -> bool:
    """Every container's image is on the node: it runs, ran, or crash-loops."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    expected = len((pod.get("spec") or {}).get("containers") or []) or 1
    if len(statuses) < expected:
        return False
    for status in statuses:
        state = status.get("state") or {}
        reason, _ = waiting(status)
        if not (
            state.get("running")
            or state.get("terminated")
            or (status.get("lastState") or {}).get("terminated")
            or reason in STARTED_WAITING_REASONS
        ):
            return False
    return True


def image_pull_problem(pods: Iterable[JSON]) -> str | None:
    for pod in pods:
        for status in containers(pod):
            reason, message = waiting(status)
            if reason in IMAGE_PULL_REASONS:
                image = status.get("image") or ""
                detail = message or f'cannot pull image "{image}"'
                return f"{reason} on pod {name_of(pod)}: {detail}"
    return None


def scheduling_problem(pods: Iterable[JSON], events: Iterable[JSON]) -> str | None:
    """A pod that cannot fit on any node, from its condition or a FailedScheduling event."""
    names = set()
    for pod in pods:
        names.add(name_of(pod))
        scheduled = condition(pod, "PodScheduled")
        if (
            scheduled is not None
            and scheduled.get("status") == "False"
            and scheduled.get("reason") == "Unschedulable"
        ):
            message = " ".join(str(scheduled.get("message") or "").split())
            if any(marker in message for marker in INSUFFICIENT):
                return f"Cannot schedule pod {name_of(pod)}: {message}"
    for event in events:
        involved = event.get("involvedObject") or {}
        message = " ".join(str(event.get("message") or "").split())
        if (
            event.get("reason") == "FailedScheduling"
            and involved.get("name") in names
            and any(marker in message for marker in INSUFFICIENT)
        ):
            return f"Cannot schedule pod {involved.get('name')}: {message}"
    return None


def creation_problem(owners: Iterable[JSON], events: Iterable[JSON]) -> tuple[bool, str] | None:
    """(is it a quota refusal, message) when the controller cannot create pods at all."""
    names = set()
    for owner in owners:
        names.add(name_of(owner))
        failure = condition(owner, "ReplicaFailure")
        if failure is not None and failure.get("status") == "True":
            message = " ".join(str(failure.get("message") or "").split())
            return QUOTA in message, f"Cannot create pods for {name_of(owner)}: {message}"
    for event in events:
        involved = event.get("involvedObject") or {}
        message = " ".join(str(event.get("message") or "").split())
        if event.get("reason") == "FailedCreate" and involved.get("name") in names:
            return QUOTA in message, f"Cannot create pods for {involved.get('name')}: {message}"
    return None


def crash_loop(pods: Iterable[JSON]) -> str | None:
    for pod in pods:
        for status in containers(pod):
            reason, message = waiting(status)
            if reason == "CrashLoopBackOff":
                restarts = int(status.get("restartCount") or 0)
                return f"CrashLoopBackOff on pod {name_of(pod)} (restarted {restarts} times)" + (
                    f": {message}" if message else ""
                )
    return None


def observe(
    workload: JSON | None,
    owners: Iterable[JSON],
    pods: Iterable[JSON],
    events: Iterable[JSON],
    *,
    kind: str,
    name: str,
    expected: int,
) -> Rollout:
    """The Rollout of ``kind/name`` from the workload, the objects that create its pods (the
    workload itself and its ReplicaSets), its pods and recent Warning events."""
    if workload is None:
        return Rollout(expected, 0, False, message=f"{kind} {name} does not exist (yet)")
    desired = int((workload.get("spec") or {}).get("replicas", 1))
    current = live(pods)
    ready_pods = [p for p in current if is_ready(p)]
    ready_since = None
    if len(ready_pods) >= desired:
        times = [
            parse_time((condition(p, "Ready") or {}).get("lastTransitionTime")) for p in ready_pods
        ]
        stamps = [t for t in times if t is not None]
        created = parse_time((workload.get("metadata") or {}).get("creationTimestamp"))
        ready_since = max(stamps) if stamps else created
    started = len(current) >= desired and all(
        is_scheduled(p) and past_image_pull(p) for p in current
    )
    blocker, message = obstacle(current, [workload, *owners], list(events), desired)
    if not message:
        waiting_for = "pods to start" if not started else "replicas to be Ready"
        message = f"{len(ready_pods)} of {desired} replicas Ready"
        if ready_since is None:
            message += f" ({len(current)} pods created, waiting for {waiting_for})"
    return Rollout(desired, len(ready_pods), started, ready_since, blocker, message)


def obstacle(
    pods: list[JSON], owners: list[JSON], events: list[JSON], desired: int
) -> tuple[Blocker | None, str]:
    """What stands in the way, most definitive first; (None, "") when nothing does."""
    pulling = image_pull_problem(pods)
    if pulling is not None:
        return Blocker.IMAGE_PULL, pulling
    unschedulable = scheduling_problem(pods, events)
    if unschedulable is not None:
        return Blocker.CAPACITY, unschedulable
    creating = creation_problem(owners, events) if len(pods) < desired else None
    if creating is not None:
        quota, message = creating
        return (Blocker.CAPACITY if quota else None), message
    return None, crash_loop(pods) or ""


def observe_cluster(
    cluster: JSON | None, pods: Iterable[JSON], events: Iterable[JSON], *, name: str, expected: int
) -> Rollout:
    """The Rollout of a CloudNativePG Cluster: ready once ``status.readyInstances`` reaches
    ``spec.instances`` (the operator's own word that the primary and every standby are up);
    its pods (``cnpg.io/cluster=<name>``) only say what stands in the way."""
    if cluster is None:
        return Rollout(expected, 0, False, message=f"Cluster {name} does not exist (yet)")
    desired = int((cluster.get("spec") or {}).get("instances") or expected)
    status = cluster.get("status") or {}
    ready = int(status.get("readyInstances") or 0)
    current = live(pods)
    blocker, message = obstacle(current, [cluster], list(events), desired)
    ready_since = None
    if ready == desired:
        since = (condition(cluster, "Ready") or {}).get("lastTransitionTime")
        ready_since = parse_time(since) or parse_time(
            (cluster.get("metadata") or {}).get("creationTimestamp")
        )
    started = ready > 0 or (
        len(current) >= 1 and all(is_scheduled(p) and past_image_pull(p) for p in current)
    )
    if not message:
        phase = str(status.get("phase") or "no status from the operator yet")
        message = f"{ready} of {desired} instances ready (Cluster {name}: {phase})"
    return Rollout(desired, ready, started, ready_since, blocker, message)
