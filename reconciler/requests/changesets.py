"""Change set rows: creation with their lines, listing, discarding."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.core import planning
from reconciler.core.states import ChangeSetState, DeploymentState
from reconciler.core.transitions import Trigger
from reconciler.engine import recording
from reconciler.errors import NotFoundError, RefusedError
from reconciler.requests import approvals
from reconciler.store import events, schema

if TYPE_CHECKING:
    from reconciler.gitops.staging import Commit

OPEN = [ChangeSetState.DRAFT.value, ChangeSetState.PENDING_APPROVAL.value]


def create(
    session: Session,
    clock: Clock,
    env: schema.Environment,
    owner: str,
    commit: Commit | None,
    file_text: str,
    lines: list[planning.PlannedLine],
) -> schema.ChangeSet:
    changeset = schema.ChangeSet(
        project_id=env.project_id,
        environment_id=env.id,
        state=ChangeSetState.DRAFT.value,
        owner=owner,
        commit=commit.sha if commit else None,
        author=commit.author if commit else None,
        message=commit.message if commit else None,
        file_text=file_text,
        created_at=clock.now(),
    )
    session.add(changeset)
    session.flush()
    for position, line in enumerate(lines):
        session.add(
            schema.ChangeSetLine(
                changeset_id=changeset.id,
                position=position,
                service=line.service,
                unit_kind=line.unit_kind.value,
                kind=line.kind.value,
                field=line.field,
                before=line.before,
                after=line.after,
                drifted=False,
            )
        )
    session.flush()
    session.refresh(changeset)
    events.record(
        session,
        clock.now(),
        "changeset",
        project_id=env.project_id,
        environment_id=env.id,
        changeset_id=changeset.id,
        state=ChangeSetState.DRAFT.value,
        message=f"Staged {len(lines)} line{'s' if len(lines) != 1 else ''}"
        + (f" from {commit.short}" if commit else ""),
        actor=owner,
    )
    return changeset


def get(session: Session, changeset_id: int) -> schema.ChangeSet:
    changeset = session.get(schema.ChangeSet, changeset_id)
    if changeset is None:
        raise NotFoundError(
            f"No change set {changeset_id}", hint="list them with: nebula changesets"
        )
    return changeset


def open_for(session: Session, environment_id: int, owner: str) -> list[schema.ChangeSet]:
    return list(
        session.scalars(
            select(schema.ChangeSet).where(
                schema.ChangeSet.environment_id == environment_id,
                schema.ChangeSet.owner == owner,
                schema.ChangeSet.state.in_(OPEN),
            )
        )
    )


def listing(session: Session, project_id: int | None = None) -> list[schema.ChangeSet]:
    query = select(schema.ChangeSet).order_by(schema.ChangeSet.id)
    if project_id is not None:
        query = query.where(schema.ChangeSet.project_id == project_id)
    return list(session.scalars(query))


def deployments_of(session: Session, changeset_id: int) -> list[schema.Deployment]:
    return list(
        session.scalars(
            select(schema.Deployment)
            .where(schema.Deployment.changeset_id == changeset_id)
            .order_by(schema.Deployment.id)
        )
    )


def finish(
    session: Session,
    clock: Clock,
    changeset: schema.ChangeSet,
    state: ChangeSetState,
    note: str | None,
    *,
    actor: str | None,
) -> None:
    changeset.state = state.value
    changeset.note = note
    changeset.finished_at = clock.now()
    events.record(
        session,
        clock.now(),
        "changeset",
        project_id=changeset.project_id,
        environment_id=changeset.environment_id,
        changeset_id=changeset.id,
        state=state.value,
        message=note,
        actor=actor,
    )


def discard(
    session: Session, clock: Clock, changeset: schema.ChangeSet, note: str, *, actor: str | None
) -> None:
    """End an unapplied change set, its approval, and the deployments waiting on it."""
    if changeset.state not in OPEN:
        raise RefusedError(
            f"Change set {changeset.id} is {changeset.state}; only a draft or a change set "
            "pending approval can be discarded",
            code="conflict",
        )
    finish(session, clock, changeset, ChangeSetState.DISCARDED, note, actor=actor)
    approvals.cancel_for(session, clock, "changeset", changeset.id, actor=actor, reason=note)
    for deployment in deployments_of(session, changeset.id):
        if deployment.state == DeploymentState.AWAITING_APPROVAL.value:
            recording.move(session, clock, deployment, Trigger.CANCEL, message=note, actor=actor)
