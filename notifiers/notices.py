"""Notifications caused by state changes, written to the outbox in the same transaction.

Every function here is called inside the transaction that makes the change, so a notice
exists if and only if its cause was committed. Delivery (Slack, with retries) happens later,
from the outbox, and never holds a deployment back.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from notifiers import gathering, keys, outbox
from notifiers.keys import Kind
from reconciler.clock import Clock
from reconciler.store import schema


def deployment_failed(session: Session, clock: Clock, deployment: schema.Deployment) -> None:
    """A deployment ended ``failed``: its blocker, message and what keeps serving."""
    facts = gathering.failure(deployment)
    outbox.enqueue(
        session,
        clock,
        keys.deployment_failed(deployment.id),
        Kind.DEPLOYMENT_FAILED,
        facts.to_payload(),
    )


def approval_requested(session: Session, clock: Clock, approval: schema.Approval) -> None:
    """A pending approval: the request message with Approve and Reject buttons.

    Only the approval's id is kept: a change set's deployments and releases are created after
    its approval, in this same transaction, and are read when the message is sent.
    """
    outbox.enqueue(
        session,
        clock,
        keys.approval_request(approval.id),
        Kind.APPROVAL_REQUEST,
        {"approval_id": approval.id},
    )


def approval_closed(session: Session, clock: Clock, approval: schema.Approval) -> None:
    """Decided, expired or cancelled: the request message is updated in place."""
    outbox.enqueue(
        session,
        clock,
        keys.approval_update(approval.id),
        Kind.APPROVAL_UPDATE,
        {"approval_id": approval.id, "state": approval.state},
    )


def project_blocked(session: Session, clock: Clock, project: schema.Project) -> None:
    """The project got a ``configuration`` or ``delivery`` blocker (once per cause)."""
    if not project.blocker:
        return
    facts = gathering.project_state(
        project,
        blocker=project.blocker,
        recovered=False,
        message=project.blocker_message or "",
    )
    outbox.enqueue(
        session,
        clock,
        keys.project_blocker(
            project.id, project.blocker, _cause(session, project), recovered=False
        ),
        Kind.PROJECT_BLOCKED,
        facts.to_payload(),
    )


def project_recovered(
    session: Session, clock: Clock, project: schema.Project, message: str
) -> None:
    """The project's blocker cleared (once). Called before the blocker is cleared."""
    if not project.blocker:
        return
    facts = gathering.project_state(
        project, blocker=project.blocker, recovered=True, message=message
    )
    outbox.enqueue(
        session,
        clock,
        keys.project_blocker(project.id, project.blocker, _cause(session, project), recovered=True),
        Kind.PROJECT_RECOVERED,
        facts.to_payload(),
    )


def _cause(session: Session, project: schema.Project) -> str:
    """A bad file is identified by its commit; an outage by how many came before it."""
    if project.blocker_commit:
        return project.blocker_commit
    return f"episode-{gathering.recoveries(session, project.id)}"
