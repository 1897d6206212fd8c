"""Notifications caused by state changes, written to the outbox in the same transaction.

Every function here is called inside the transaction that makes the change, so a notice
exists if and only if its cause was committed. Delivery (Slack, with retries) happens later,
from the outbox, and never holds a deployment back.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.store import schema


def deployment_failed(session: Session, clock: Clock, deployment: schema.Deployment) -> None:
    """A deployment ended ``failed``: its blocker, message and what keeps serving."""


def approval_requested(session: Session, clock: Clock, approval: schema.Approval) -> None:
    """A pending approval: the request message with Approve and Reject buttons."""


def approval_closed(session: Session, clock: Clock, approval: schema.Approval) -> None:
    """Decided, expired or cancelled: the request message is updated in place."""


def project_blocked(session: Session, clock: Clock, project: schema.Project) -> None:
    """The project got a ``configuration`` or ``delivery`` blocker (once per cause)."""


def project_recovered(
    session: Session, clock: Clock, project: schema.Project, message: str
) -> None:
    """The project's blocker cleared (once)."""
