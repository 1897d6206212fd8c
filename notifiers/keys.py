"""The kinds of notice and their idempotency keys: one key per cause, so no notice repeats.

A key names the cause, not the moment: polling the same bad commit again, or a deliverer
retrying, produces the same key, and the outbox keeps only the first row with it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from notifiers.channels import Event


class Kind(StrEnum):
    APPROVAL_REQUEST = "approval-request"
    APPROVAL_UPDATE = "approval-update"
    DEPLOYMENT_FAILED = "deployment-failed"
    DEPLOYMENT_HEALTHY = "deployment-healthy"
    PROJECT_BLOCKED = "project-blocked"
    PROJECT_RECOVERED = "project-recovered"
    UNIT_DRIFTED = "unit-drifted"
    DRIFT_CLEARED = "drift-cleared"
    TEST = "test"  # nebula notify test: to one channel, at once


# The event a channel asks for to be sent each kind (TEST goes to the channel it names).
EVENT_OF: dict[Kind, Event | None] = {
    Kind.APPROVAL_REQUEST: Event.APPROVAL,
    Kind.APPROVAL_UPDATE: Event.APPROVAL,
    Kind.DEPLOYMENT_FAILED: Event.FAILURE,
    Kind.DEPLOYMENT_HEALTHY: Event.HEALTHY,
    Kind.PROJECT_BLOCKED: Event.BLOCKED,
    Kind.PROJECT_RECOVERED: Event.BLOCKED,
    Kind.UNIT_DRIFTED: Event.DRIFT,
    Kind.DRIFT_CLEARED: Event.DRIFT,
    Kind.TEST: None,
}
# The kinds the default Slack channel has always been sent (nothing changes for it).
SLACK_DEFAULT = frozenset(
    {
        Kind.APPROVAL_REQUEST,
        Kind.APPROVAL_UPDATE,
        Kind.DEPLOYMENT_FAILED,
        Kind.PROJECT_BLOCKED,
        Kind.PROJECT_RECOVERED,
        Kind.UNIT_DRIFTED,
    }
)


class WebhookType(StrEnum):
    """The ``type`` of a webhook's body (behaviour.md "Notifications (1.2)")."""

    DEPLOYMENT_FAILED = "deployment.failed"
    DEPLOYMENT_HEALTHY = "deployment.healthy"
    APPROVAL_REQUESTED = "approval.requested"
    APPROVAL_DECIDED = "approval.decided"
    APPROVAL_EXPIRED = "approval.expired"
    DRIFT_STARTED = "drift.started"
    DRIFT_CLEARED = "drift.cleared"
    PROJECT_BLOCKED = "project.blocked"
    TEST = "nebula.test"


_TYPES = {
    Kind.APPROVAL_REQUEST: WebhookType.APPROVAL_REQUESTED,
    Kind.DEPLOYMENT_FAILED: WebhookType.DEPLOYMENT_FAILED,
    Kind.DEPLOYMENT_HEALTHY: WebhookType.DEPLOYMENT_HEALTHY,
    Kind.PROJECT_BLOCKED: WebhookType.PROJECT_BLOCKED,
    Kind.UNIT_DRIFTED: WebhookType.DRIFT_STARTED,
    Kind.DRIFT_CLEARED: WebhookType.DRIFT_CLEARED,
    Kind.TEST: WebhookType.TEST,
}


def webhook_type(kind: Kind, payload: dict[str, Any]) -> WebhookType | None:
    """None for what a webhook is not sent (a project's recovery has no type of its own)."""
    if kind is Kind.APPROVAL_UPDATE:
        expired = payload.get("state") == "expired"
        return WebhookType.APPROVAL_EXPIRED if expired else WebhookType.APPROVAL_DECIDED
    return _TYPES.get(kind)


def approval_request(approval_id: int) -> str:
    return f"approval-request:{approval_id}"


def approval_update(approval_id: int) -> str:
    """One per approval: it closes once (decided, expired or cancelled)."""
    return f"approval-update:{approval_id}"


def deployment_failed(deployment_id: int) -> str:
    return f"deployment-failed:{deployment_id}"


def deployment_healthy(deployment_id: int) -> str:
    return f"{Kind.DEPLOYMENT_HEALTHY}:{deployment_id}"


def drift_cleared(unit_id: int, since: str) -> str:
    """One per drift episode that ends: ``since`` is when it began."""
    return f"{Kind.DRIFT_CLEARED}:{unit_id}:{since}"


def for_channel(key: str, channel_id: int) -> str:
    """The same notice for one channel: one row, so one delivery, per (channel, event)."""
    return f"{key[:185]}@channel-{channel_id}"


def test(channel: str, at: str) -> str:
    return f"{Kind.TEST}:{channel}:{at}"


def unit_drifted(unit_id: int, since: str) -> str:
    """One per drift episode of a unit: ``since`` is when the episode began."""
    return f"{Kind.UNIT_DRIFTED}:{unit_id}:{since}"


def project_blocker(project_id: int, blocker: str, cause: str, *, recovered: bool) -> str:
    """``cause``: the bad commit for ``configuration``; the episode number otherwise, so a
    delivery outage whose error text changes from poll to poll is still one notice."""
    kind = Kind.PROJECT_RECOVERED if recovered else Kind.PROJECT_BLOCKED
    return f"{kind}:{project_id}:{blocker}:{cause}"[:200]
