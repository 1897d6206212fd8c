"""The kinds of notice and their idempotency keys: one key per cause, so no notice repeats.

A key names the cause, not the moment: polling the same bad commit again, or a deliverer
retrying, produces the same key, and the outbox keeps only the first row with it.
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    APPROVAL_REQUEST = "approval-request"
    APPROVAL_UPDATE = "approval-update"
    DEPLOYMENT_FAILED = "deployment-failed"
    PROJECT_BLOCKED = "project-blocked"
    PROJECT_RECOVERED = "project-recovered"
    UNIT_DRIFTED = "unit-drifted"


def approval_request(approval_id: int) -> str:
    return f"approval-request:{approval_id}"


def approval_update(approval_id: int) -> str:
    """One per approval: it closes once (decided, expired or cancelled)."""
    return f"approval-update:{approval_id}"


def deployment_failed(deployment_id: int) -> str:
    return f"deployment-failed:{deployment_id}"


def unit_drifted(unit_id: int, since: str) -> str:
    """One per drift episode of a unit: ``since`` is when the episode began."""
    return f"{Kind.UNIT_DRIFTED}:{unit_id}:{since}"


def project_blocker(project_id: int, blocker: str, cause: str, *, recovered: bool) -> str:
    """``cause``: the bad commit for ``configuration``; the episode number otherwise, so a
    delivery outage whose error text changes from poll to poll is still one notice."""
    kind = Kind.PROJECT_RECOVERED if recovered else Kind.PROJECT_BLOCKED
    return f"{kind}:{project_id}:{blocker}:{cause}"[:200]
