"""The append-only timeline: one row per state change, written in the transaction that makes
the change (so an event exists if and only if its change was committed). Rows are never
updated or deleted.

One constructor per thing that has a timeline, so the ids an event carries always come from
the row it is about and are never typed out at a call site.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy.orm import Session

from reconciler.store import schema


class EventKind(StrEnum):
    DEPLOYMENT = "deployment"  # a state change of a deployment (the transition table's)
    DEPLOYMENT_BLOCKER = "deployment.blocker"  # an open deployment's blocker set
    DEPLOYMENT_NOTE = "deployment.note"  # ...or its message changed, or cleared
    DEPLOYMENT_CLEANUP = "deployment.cleanup"  # an ended deployment's objects not removable
    CHANGESET = "changeset"
    APPROVAL = "approval"
    PROJECT_BLOCKER = "project.blocker"  # set (state = the blocker) or cleared (state None)
    UNIT = "unit"  # a service or database: removed, torn down, back in the file


def _add(session: Session, event: schema.Event) -> schema.Event:
    session.add(event)
    return event


def deployment(
    session: Session,
    at: datetime,
    d: schema.Deployment,
    message: str | None,
    *,
    actor: str | None = None,
    kind: EventKind = EventKind.DEPLOYMENT,
) -> schema.Event:
    """An event of ``d`` at the state it is in now."""
    return _add(
        session,
        schema.Event(
            at=at,
            kind=kind,
            project_id=d.project_id,
            environment_id=d.environment_id,
            deployment_id=d.id,
            state=d.state,
            message=message,
            actor=actor,
        ),
    )


def changeset(
    session: Session, at: datetime, c: schema.ChangeSet, message: str | None, *, actor: str | None
) -> schema.Event:
    """An event of ``c`` at the state it is in now."""
    return _add(
        session,
        schema.Event(
            at=at,
            kind=EventKind.CHANGESET,
            project_id=c.project_id,
            environment_id=c.environment_id,
            changeset_id=c.id,
            state=c.state,
            message=message,
            actor=actor,
        ),
    )


def approval(
    session: Session, at: datetime, a: schema.Approval, message: str | None, *, actor: str | None
) -> schema.Event:
    """An event of ``a`` at the state it is in now."""
    return _add(
        session,
        schema.Event(
            at=at,
            kind=EventKind.APPROVAL,
            project_id=a.project_id,
            environment_id=a.environment_id,
            approval_id=a.id,
            state=a.state,
            message=message,
            actor=actor,
        ),
    )


def project_blocker(
    session: Session, at: datetime, p: schema.Project, message: str
) -> schema.Event:
    """``p``'s blocker as it is now: set (its name is the state) or cleared (no state)."""
    return _add(
        session,
        schema.Event(
            at=at,
            kind=EventKind.PROJECT_BLOCKER,
            project_id=p.id,
            state=p.blocker,
            message=message,
        ),
    )


def unit(
    session: Session, at: datetime, u: schema.Unit, message: str, *, actor: str | None = None
) -> schema.Event:
    """An event of a service or database at the status it has now."""
    return _add(
        session,
        schema.Event(
            at=at,
            kind=EventKind.UNIT,
            project_id=u.project_id,
            environment_id=u.environment_id,
            state=u.status,
            message=message,
            actor=actor,
        ),
    )
