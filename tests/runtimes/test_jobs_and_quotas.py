"""The release command's outcome and the quota check: pure functions of API objects."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from reconciler.runtimes.cluster import JobPhase
from reconciler.runtimes.kubernetes import jobs, quotas
from tests.runtimes.releases import Service, image, release_objects

JSON = dict[str, Any]
STARTED = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def job(*conditions: JSON, deadline: int = 300) -> JSON:
    return {
        "metadata": {"name": "api-r3-release"},
        "spec": {"activeDeadlineSeconds": deadline},
        "status": {"startTime": "2026-01-05T12:00:00Z", "conditions": list(conditions)},
    }


def failed_pod(code: int) -> JSON:
    return {
        "metadata": {"name": "p", "creationTimestamp": "2026-01-05T12:00:01Z"},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {"name": "release", "state": {"terminated": {"exitCode": code, "reason": "Error"}}}
            ],
        },
    }


def status(found: JSON | None, pods: list[JSON] | None = None, after: float = 10) -> Any:
    return jobs.status(
        found, pods or [], STARTED + timedelta(seconds=after), name="api-r3-release", timeout=300
    )


@pytest.mark.parametrize(
    ("found", "pods", "after", "phase", "message"),
    [
        (
            job(),
            [],
            10,
            JobPhase.RUNNING,
            "Release command running (Job api-r3-release, 0 pods running)",
        ),
        (
            job({"type": "Complete", "status": "True"}),
            [],
            10,
            JobPhase.SUCCEEDED,
            "Release command completed (Job api-r3-release)",
        ),
        (
            job(
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            ),
            [failed_pod(3)],
            10,
            JobPhase.FAILED,
            "Release command failed (Job api-r3-release): exit code 3 (Error)",
        ),
        (
            job(
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            ),
            [],
            10,
            JobPhase.FAILED,
            "Release command failed (Job api-r3-release): Job has reached the specified backoff limit",
        ),
        (
            job({"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}),
            [],
            400,
            JobPhase.FAILED,
            "Release command timed out after 300s (Job api-r3-release: DeadlineExceeded)",
        ),
        # No controller marked it: past the deadline and the grace period, it has timed out anyway.
        (
            job(),
            [],
            300 + 29,
            JobPhase.RUNNING,
            "Release command running (Job api-r3-release, 0 pods running)",
        ),
        (
            job(),
            [],
            300 + 31,
            JobPhase.FAILED,
            "Release command timed out after 300s (Job api-r3-release: DeadlineExceeded)",
        ),
        (
            None,
            [],
            10,
            JobPhase.RUNNING,
            "The release command's Job api-r3-release does not exist yet",
        ),
    ],
)
def test_job_status(
    found: JSON | None, pods: list[JSON], after: float, phase: JobPhase, message: str
) -> None:
    outcome = status(found, pods, after)

    assert (outcome.phase, outcome.message) == (phase, message)


def test_a_job_pod_that_cannot_pull_its_image_fails_the_command_at_once() -> None:
    pulling = {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Pending",
            "containerStatuses": [
                {
                    "name": "release",
                    "image": "reg/api@sha256:1",
                    "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}},
                }
            ],
        },
    }

    outcome = status(job(), [pulling])

    assert outcome.phase is JobPhase.FAILED
    assert outcome.message == (
        "Release command cannot start (Job api-r3-release): ErrImagePull on pod p: not found"
    )


def rendered(replicas: int) -> list[Any]:
    objects = release_objects("shop", 1, Service(image("api", "1"), replicas=replicas, cron=True))
    assert objects.release_job is not None
    return [*objects.workload, objects.release_job]


def test_what_a_release_needs() -> None:
    needed = quotas.needs(rendered(replicas=3))

    # 3 web replicas and the release command ("nano": 100m, 256Mi), the cron job ("small")
    assert needed["pods"] == 5
    assert needed["requests.cpu"] == Decimal("0.65")
    assert needed["requests.memory"] == needed["limits.memory"] == (4 * 256 + 512) * 2**20


@pytest.mark.parametrize(
    ("hard", "refusal"),
    [
        ({"pods": "10", "requests.cpu": "4"}, None),
        ({"pods": "4"}, "The release needs 5 pods but ResourceQuota compute allows at most 4"),
        (
            {"cpu": "400m"},
            "The release needs 0.65 cpu but ResourceQuota compute allows at most 400m",
        ),
        (
            {"limits.memory": "1Gi"},
            "The release needs 1536Mi limits.memory but ResourceQuota compute allows at most 1Gi",
        ),
        (
            {"services": "1", "requests.storage": "1Gi"},
            None,
        ),  # not about pods: checked when applied
    ],
)
def test_quota_refusal(hard: dict[str, str], refusal: str | None) -> None:
    quota = {"metadata": {"name": "compute"}, "spec": {"hard": hard}}

    assert quotas.refusal(quota, quotas.needs(rendered(replicas=3))) == refusal
