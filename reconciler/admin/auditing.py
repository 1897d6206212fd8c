"""The audit trail: every administrative act is an event with its actor and time
(behaviour.md "Audit"), written in the transaction that makes the change.

The listing is generic: it shows every event whose kind is in ``events.AUDITED``, so a new
kind of audited event (suspend/resume, drift, self-heal) needs no change here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from reconciler.clock import Clock
from reconciler.core.states import AdminAction
from reconciler.store import events, schema


def record(
    session: Session,
    clock: Clock,
    action: AdminAction,
    target: str,
    message: str,
    *,
    actor: str,
    project: schema.Project | None = None,
) -> schema.Event:
    return events.admin(session, clock.now(), action, target, message, actor=actor, project=project)


@dataclass(frozen=True)
class Entry:
    """One audit line: when, who, what was done, to what, and what it did."""

    at: datetime
    actor: str | None
    action: str
    target: str
    message: str | None


def listing(session: Session, since: datetime | None = None) -> list[Entry]:
    """The audited events, oldest first (``since``: only those at or after it)."""
    project = aliased(schema.Project)
    environment = aliased(schema.Environment)
    query = (
        select(schema.Event, project.slug, environment.name)
        .outerjoin(project, project.id == schema.Event.project_id)
        .outerjoin(environment, environment.id == schema.Event.environment_id)
        .where(schema.Event.kind.in_([k.value for k in events.AUDITED]))
        .order_by(schema.Event.id)
    )
    if since is not None:
        query = query.where(schema.Event.at >= since)
    entries = []
    for event, slug, env_name in session.execute(query):
        where = "/".join(part for part in (slug, env_name) if part)
        entries.append(
            Entry(
                at=event.at,
                actor=event.actor,
                # Kinds without an action of their own are named by kind and state.
                action=event.action or ".".join(p for p in (event.kind, event.state) if p),
                target=event.target or where,
                message=event.message,
            )
        )
    return entries
