"""The release command's Job: its outcome read from the Job and its pods.

``status`` is a pure function of the API objects and the time; the cluster adds the tail of
the pod's logs (best effort: logs are kept in the deployment's events for whoever has to find
out why a migration failed, but a node that kept none must not fail the deployment).

The Job controller marks a Job past ``activeDeadlineSeconds`` failed (``DeadlineExceeded``).
If no controller does (one is down, or is slow), ``status`` decides the same from the Job's
start time once a grace period has passed, so a release command can never hang a deployment.
A pod that cannot pull its image fails the Job at once: no deadline will make the image appear.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from reconciler.runtimes.cluster import JobPhase, JobStatus
from reconciler.runtimes.kubernetes import rollouts

JSON = Mapping[str, Any]
DEADLINE_GRACE = timedelta(seconds=30)


def status(
    job: JSON | None,
    pods: Iterable[JSON],
    now: datetime,
    *,
    name: str,
    timeout: int,
    grace: timedelta = DEADLINE_GRACE,
) -> JobStatus:
    if job is None:  # not created yet: the stage (re)creates it; its own timeout still holds
        return JobStatus(JobPhase.RUNNING, f"The release command's Job {name} does not exist yet")
    pods = list(pods)
    deadline = int((job.get("spec") or {}).get("activeDeadlineSeconds") or timeout)
    complete = rollouts.condition(job, "Complete")
    if complete is not None and complete.get("status") == "True":
        return JobStatus(JobPhase.SUCCEEDED, f"Release command completed (Job {name})")
    failed = rollouts.condition(job, "Failed")
    if failed is not None and failed.get("status") == "True":
        reason = str(failed.get("reason") or "")
        if reason == "DeadlineExceeded":
            return JobStatus(JobPhase.FAILED, timed_out(name, deadline))
        detail = exit_detail(pods) or " ".join(str(failed.get("message") or reason).split())
        return JobStatus(JobPhase.FAILED, f"Release command failed (Job {name}): {detail}")
    pulling = rollouts.image_pull_problem(rollouts.live(pods))
    if pulling is not None:
        return JobStatus(JobPhase.FAILED, f"Release command cannot start (Job {name}): {pulling}")
    started = rollouts.parse_time((job.get("status") or {}).get("startTime"))
    if started is not None and now > started + timedelta(seconds=deadline) + grace:
        return JobStatus(JobPhase.FAILED, timed_out(name, deadline))
    running = sum(
        1 for p in rollouts.live(pods) if (p.get("status") or {}).get("phase") == "Running"
    )
    return JobStatus(
        JobPhase.RUNNING,
        f"Release command running (Job {name}, {running} pod{'s' if running != 1 else ''} running)",
    )


def timed_out(name: str, seconds: int) -> str:
    return f"Release command timed out after {seconds}s (Job {name}: DeadlineExceeded)"


def exit_detail(pods: Iterable[JSON]) -> str:
    """``exit code 1 (Error)`` of the last container that ended badly, if any pod says."""
    for pod in sorted(pods, key=_created, reverse=True):
        for container in rollouts.containers(pod):
            for state in (container.get("state") or {}, container.get("lastState") or {}):
                ended = state.get("terminated") or {}
                code = ended.get("exitCode")
                if code not in (None, 0):
                    reason = ended.get("reason") or ""
                    return f"exit code {code}" + (f" ({reason})" if reason else "")
    return ""


def newest(pods: Iterable[JSON]) -> JSON | None:
    ordered = sorted(pods, key=_created)
    return ordered[-1] if ordered else None


def _created(pod: JSON) -> str:
    return str((pod.get("metadata") or {}).get("creationTimestamp") or "")
