"""The append-only timeline: one row per state change, written in the transaction that makes
the change (so an event exists if and only if its change was committed). Rows are never
updated or deleted.

One constructor per thing that has a timeline, so the ids an event carries always come from
the row it is about and are never typed out at a call site.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from enum import StrEnum
from typing import cast

from sqlalchemy import Table, insert
from sqlalchemy.orm import Session

from reconciler.core.states import AdminAction
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
    ADMIN = "admin"  # an administrative act (its ``action`` and ``target``), by its actor
    DRIFT = "unit.drift"  # its live objects began to differ from its release, or agree again
    SELF_HEAL = "unit.self-heal"  # drifted objects applied again (self_heal = true)
    SUSPEND = "suspend"  # a project or an environment suspended (an administrative act)
    RESUME = "resume"  # ... or resumed


# The kinds ``nebula audit`` and ``GET /api/v1/audit`` list, alongside nothing else: add a kind
# here to make it part of the audit trail (suspend/resume, drift and self-heal, ...).
AUDITED: frozenset[EventKind] = frozenset(
    {EventKind.ADMIN, EventKind.DRIFT, EventKind.SELF_HEAL, EventKind.SUSPEND, EventKind.RESUME}
)


Subject = (
    schema.Deployment
    | schema.ChangeSet
    | schema.Approval
    | schema.Unit
    | schema.Project
    | schema.Environment
)


def _record(
    session: Session,
    at: datetime,
    kind: EventKind,
    subject: Subject,
    message: str | None,
    actor: str | None,
) -> schema.Event:
    """An event of ``subject`` at the state it is in now; its ids come from the row."""
    event = schema.Event(at=at, kind=kind, message=message, actor=actor)
    if isinstance(subject, schema.Project):
        event.project_id, event.state = subject.id, subject.blocker
    elif isinstance(subject, schema.Environment):
        event.project_id, event.environment_id = subject.project_id, subject.id
    else:
        event.project_id, event.environment_id = subject.project_id, subject.environment_id
        if isinstance(subject, schema.Unit):
            event.state = subject.status
        else:
            event.state = subject.state
    if isinstance(subject, schema.Deployment):
        event.deployment_id = subject.id
    elif isinstance(subject, schema.ChangeSet):
        event.changeset_id = subject.id
    elif isinstance(subject, schema.Approval):
        event.approval_id = subject.id
    held = session.info.get(_HELD)
    if held is None:
        session.add(event)
    else:
        held.append(event)
    return event


_HELD = "nebula.events.held"
_TABLE = cast(Table, schema.Event.__table__)
_COLUMNS = tuple(c.key for c in _TABLE.columns if c.key != "id")


@contextmanager
def together(session: Session) -> Iterator[None]:
    """The events of subjects recorded in the block (through ``_record``) inserted in one
    statement as it ends, in the order they were recorded, still in the block's
    transaction. A tick records a batch of a hundred steps at once: one INSERT with a row
    per event costs a third of what the ORM's flush of as many new objects does (which
    reads their ids back, and which nothing here needs). Nothing in the block may read the
    events it records; a block that raises inserts none (its transaction is rolled back)."""
    if _HELD in session.info:  # within another such block: its events join that one's
        yield
        return
    held: list[schema.Event] = []
    session.info[_HELD] = held
    try:
        yield
    finally:
        del session.info[_HELD]
    if held:
        session.execute(  # (the table's, not the ORM's: one statement, whatever is NULL)
            insert(_TABLE), [{c: getattr(e, c) for c in _COLUMNS} for e in held]
        )


def deployment(
    session: Session,
    at: datetime,
    d: schema.Deployment,
    message: str | None,
    *,
    actor: str | None = None,
    kind: EventKind = EventKind.DEPLOYMENT,
) -> schema.Event:
    return _record(session, at, kind, d, message, actor)


def changeset(
    session: Session, at: datetime, c: schema.ChangeSet, message: str | None, *, actor: str | None
) -> schema.Event:
    return _record(session, at, EventKind.CHANGESET, c, message, actor)


def approval(
    session: Session, at: datetime, a: schema.Approval, message: str | None, *, actor: str | None
) -> schema.Event:
    return _record(session, at, EventKind.APPROVAL, a, message, actor)


def project_blocker(
    session: Session, at: datetime, p: schema.Project, message: str
) -> schema.Event:
    """``p``'s blocker as it is now: set (its name is the state) or cleared (no state)."""
    return _record(session, at, EventKind.PROJECT_BLOCKER, p, message, None)


def admin(
    session: Session,
    at: datetime,
    action: AdminAction,
    target: str,
    message: str,
    *,
    actor: str,
    project: schema.Project | None = None,
) -> schema.Event:
    """An administrative act: ``action`` on ``target`` (text, e.g. ``member alice``, so it
    outlives what it names), with what it did in ``message`` (never a secret's value)."""
    event = schema.Event(
        at=at,
        kind=EventKind.ADMIN,
        action=action.value,
        target=target,
        message=message,
        actor=actor,
        project_id=project.id if project is not None else None,
    )
    session.add(event)
    return event


def unit(
    session: Session,
    at: datetime,
    u: schema.Unit,
    message: str,
    *,
    actor: str | None = None,
    kind: EventKind = EventKind.UNIT,
    action: AdminAction | None = None,
) -> schema.Event:
    """A service or database at the status it has now (removed, torn down, back), or what
    its live state did (``DRIFT``, ``SELF_HEAL``: audited, with ``action`` and the unit as
    ``project/environment/unit``)."""
    event = _record(session, at, kind, u, message, actor)
    if action is not None:
        env = u.environment
        event.action, event.target = action.value, f"{env.project.slug}/{env.name}/{u.name}"
    return event


def suspension(
    session: Session,
    at: datetime,
    target: schema.Project | schema.Environment,
    message: str,
    *,
    actor: str,
    suspended: bool,
) -> schema.Event:
    """A project (no environment) or one environment suspended or resumed by ``actor``."""
    kind = EventKind.SUSPEND if suspended else EventKind.RESUME
    event = _record(session, at, kind, target, message, actor)
    event.state = "suspended" if suspended else None
    event.action = (AdminAction.SUSPEND if suspended else AdminAction.RESUME).value
    if isinstance(target, schema.Environment):
        event.target = f"{target.project.slug}/{target.name}"
    else:
        event.target = target.slug
    return event
