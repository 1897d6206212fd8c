"""The append-only timeline. Every state change writes one row here, in its own transaction."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from reconciler.store import schema


def record(
    session: Session,
    at: datetime,
    kind: str,
    *,
    project_id: int | None = None,
    environment_id: int | None = None,
    deployment_id: int | None = None,
    changeset_id: int | None = None,
    approval_id: int | None = None,
    state: str | None = None,
    message: str | None = None,
    actor: str | None = None,
) -> schema.Event:
    event = schema.Event(
        at=at,
        kind=kind,
        project_id=project_id,
        environment_id=environment_id,
        deployment_id=deployment_id,
        changeset_id=changeset_id,
        approval_id=approval_id,
        state=state,
        message=message,
        actor=actor,
    )
    session.add(event)
    return event
