"""Notifications caused by state changes, written to the outbox in the same transaction.

Every function here is called inside the transaction that makes the change, so a notice
exists if and only if its cause was committed. Delivery (Slack, with retries) happens later,
from the outbox, and never holds a deployment back.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from notifiers import gathering, keys, outbox
from notifiers.facts import Drifted
from notifiers.keys import Kind
from reconciler.clock import Clock, utc
from reconciler.core.drifts import Drift
from reconciler.store import schema

SHOWN_DRIFT = 6


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


def unit_drifted(
    session: Session,
    clock: Clock,
    unit: schema.Unit,
    release: str,
    found: tuple[Drift, ...],
    healed: str | None,
) -> None:
    """A drift episode of ``unit`` began (``unit.drift_since``): one notice for the episode."""
    assert unit.drift_since is not None
    env = unit.environment
    facts = Drifted(
        project=env.project.slug,
        environment=env.name,
        service=unit.name,
        release=release,
        differences=tuple(_difference(d, release) for d in found[:SHOWN_DRIFT]),
        count=len(found),
        healed=healed,
    )
    outbox.enqueue(
        session,
        clock,
        keys.unit_drifted(unit.id, utc(unit.drift_since).isoformat()),
        Kind.UNIT_DRIFTED,
        facts.to_payload(),
    )


def _difference(d: Drift, release: str) -> str:
    if d.missing:
        return f"{d.object} is missing"
    if d.hidden:
        return f"{d.object} {d.path} differs (a secret value, not shown)"
    return f"{d.object} {d.path}: {d.live if d.live is not None else 'not set'} ({release}: {d.desired})"


def _cause(session: Session, project: schema.Project) -> str:
    """A bad file is identified by its commit; an outage by how many came before it."""
    if project.blocker_commit:
        return project.blocker_commit
    return f"episode-{gathering.recoveries(session, project.id)}"
