"""What the test kubelet reports for a pod: scripted behaviours turned into pod status.

Pure functions of (behaviour, seconds since binding), so the timeline of every behaviour is
readable in one place and the kubelet loop only has to write what changed.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]


class Behaviour(enum.Enum):
    """What a pod whose image is scripted does once the kubelet sees it."""

    RUNNING = "running"  # Running and Ready shortly after binding (the default)
    NEVER_READY = "never-ready"  # Running, containers started, never Ready
    CRASH_LOOP = "crash-loop"  # restarts over and over: CrashLoopBackOff
    IMAGE_PULL = "image-pull"  # ErrImagePull, then ImagePullBackOff
    UNSCHEDULABLE = "unschedulable"  # never bound: FailedScheduling, Insufficient cpu
    SUCCEED = "succeed"  # runs briefly, then phase Succeeded (exit 0)
    FAIL = "fail"  # runs briefly, then phase Failed (exit 1)


@dataclass(frozen=True)
class Script:
    behaviour: Behaviour = Behaviour.RUNNING
    start_after: float = 0.2  # seconds from binding to the containers running
    finish_after: float = 0.5  # SUCCEED/FAIL: seconds of running before the exit
    restart_every: float = 1.0  # CRASH_LOOP: seconds between restarts
    logs: str = ""  # what the kubelet's logs endpoint returns for these containers
    serve_port: int | None = None  # pod ip:containerPort routes to 127.0.0.1:serve_port


UNSCHEDULABLE_MESSAGE = "0/1 nodes are available: 1 Insufficient cpu."


@dataclass(frozen=True)
class Reported:
    """Status without timestamps, so two reports can be compared for change."""

    phase: str
    ready: bool
    containers: tuple[tuple[str, JSON], ...]  # (state kind, state fields) per container
    restarts: int
    last_exit: int | None
    conditions_reason: str


def _image_id(image: str) -> str:
    return hashlib.sha256(image.encode()).hexdigest()


def report(script: Script, elapsed: float, images: list[str]) -> Reported:
    b = script.behaviour
    n = len(images)
    creating: tuple[str, JSON] = ("waiting", {"reason": "ContainerCreating"})
    if b is Behaviour.IMAGE_PULL:
        pulling = tuple(
            ("waiting", _pull_failure(image, backoff=elapsed >= 1.0)) for image in images
        )
        return Reported("Pending", False, pulling, 0, None, "ContainersNotReady")
    if elapsed < script.start_after:
        return Reported("Pending", False, (creating,) * n, 0, None, "ContainersNotReady")
    running: tuple[str, JSON] = ("running", {})
    if b is Behaviour.RUNNING:
        return Reported("Running", True, (running,) * n, 0, None, "")
    if b is Behaviour.NEVER_READY:
        return Reported("Running", False, (running,) * n, 0, None, "ContainersNotReady")
    if b is Behaviour.CRASH_LOOP:
        restarts = 1 + int((elapsed - script.start_after) / script.restart_every)
        waiting: tuple[str, JSON] = (
            "waiting",
            {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"},
        )
        return Reported("Running", False, (waiting,) * n, restarts, 1, "ContainersNotReady")
    if elapsed < script.start_after + script.finish_after:
        return Reported("Running", True, (running,) * n, 0, None, "")
    code = 0 if b is Behaviour.SUCCEED else 1
    done: tuple[str, JSON] = (
        "terminated",
        {"exitCode": code, "reason": "Completed" if code == 0 else "Error"},
    )
    phase = "Succeeded" if code == 0 else "Failed"
    return Reported(phase, False, (done,) * n, 0, None, "PodCompleted")


def _pull_failure(image: str, backoff: bool) -> JSON:
    if backoff:
        return {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}
    return {
        "reason": "ErrImagePull",
        "message": f"rpc error: code = NotFound desc = failed to pull and unpack image "
        f'"{image}": not found',
    }


def pod_status(
    reported: Reported, pod: JSON, pod_ip: str, host_ip: str, now: str, started_at: str
) -> JSON:
    """The full status body for `reported`, stamped with `now` where state changed."""
    containers = pod["spec"]["containers"]
    statuses = []
    for container, (kind, fields) in zip(containers, reported.containers, strict=True):
        state: JSON = {kind: dict(fields)}
        if kind == "running":
            state[kind]["startedAt"] = started_at
        elif kind == "terminated":
            state[kind].update(startedAt=started_at, finishedAt=now)
        last_state: JSON = {}
        if reported.last_exit is not None:
            last_state = {
                "terminated": {
                    "exitCode": reported.last_exit,
                    "reason": "Error",
                    "startedAt": started_at,
                    "finishedAt": now,
                }
            }
        image = container["image"]
        status: JSON = {
            "name": container["name"],
            "image": image,
            "imageID": "",
            "ready": reported.ready,
            "started": kind == "running",
            "restartCount": reported.restarts,
            "state": state,
            "lastState": last_state,
        }
        if kind != "waiting" or fields.get("reason") == "CrashLoopBackOff":
            digest = _image_id(image)
            status["imageID"] = f"docker-pullable://{image.split('@')[0]}@sha256:{digest}"
            status["containerID"] = f"containerd://{digest[:32]}{pod['metadata']['uid'][:32]}"
        statuses.append(status)
    ready = "True" if reported.ready else "False"
    conditions = [
        {"type": "Initialized", "status": "True", "lastTransitionTime": started_at},
        {"type": "Ready", "status": ready, "lastTransitionTime": now},
        {"type": "ContainersReady", "status": ready, "lastTransitionTime": now},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": started_at},
    ]
    if reported.conditions_reason:
        for condition in conditions[1:3]:
            condition["reason"] = reported.conditions_reason
    status_body: JSON = {
        "phase": reported.phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "startTime": started_at,
        "containerStatuses": statuses,
    }
    if reported.phase != "Pending":
        status_body["podIP"] = pod_ip
        status_body["podIPs"] = [{"ip": pod_ip}]
    return status_body


def unschedulable_status(now: str) -> JSON:
    return {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": UNSCHEDULABLE_MESSAGE,
                "lastTransitionTime": now,
            }
        ],
    }
