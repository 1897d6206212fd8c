"""Change set rows: created with their lines, listed, and ended through their transition table
(applied, rejected, discarded, failed)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.admin import projects
from reconciler.clock import Clock
from reconciler.core import planning, transitions
from reconciler.core.states import (
    OPEN_CHANGESET_STATES,
    ApprovalTarget,
    ChangeSetState,
    DeploymentState,
    LineKind,
    ServiceStatus,
)
from reconciler.core.transitions import Trigger
from reconciler.engine import recording, releases
from reconciler.errors import ConflictError
from reconciler.model.specs import EnvironmentConfig
from reconciler.requests import approvals
from reconciler.store import events, schema


@dataclass(frozen=True)
class Commit:
    """The commit a push's change set was staged from."""

    sha: str
    author: str
    message: str
    committed_at: datetime | None = None

    @property
    def short(self) -> str:
        return self.sha[:7]


def create(
    session: Session,
    clock: Clock,
    env: schema.Environment,
    owner: str,
    commit: Commit | None,
    file_text: str,
    lines: list[planning.PlannedLine],
    *,
    message: str | None = None,
    manifest_files: dict[str, str] | None = None,
) -> schema.ChangeSet:
    """A draft with its lines; ``message`` says why when no commit does (a secret set)."""
    changeset = schema.ChangeSet(
        project_id=env.project_id,
        environment_id=env.id,
        state=ChangeSetState.DRAFT.value,
        owner=owner,
        commit=commit.sha if commit else None,
        author=commit.author if commit else None,
        message=commit.message if commit else message,
        file_text=file_text,
        manifest_files=manifest_files,
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
                via=line.via,
                drifted=False,
            )
        )
    session.flush()
    session.refresh(changeset)
    staged = f"Staged {len(lines)} line{'s' if len(lines) != 1 else ''}"
    if commit:
        staged += f" from {commit.short}"
    events.changeset(session, clock.now(), changeset, staged, actor=owner)
    return changeset


def config(changeset: schema.ChangeSet) -> EnvironmentConfig:
    """Its environment's configuration in the file it was staged from."""
    found = projects.stored_config(
        changeset.environment, changeset.file_text, changeset.manifest_files
    )
    assert found is not None, "a staged file always declares its environment"
    return found


def from_file(changeset: schema.ChangeSet) -> bool:
    """Whether it applies a file (a push), so applying it records that file for the
    environment; a change set of only ``secret.NAME`` lines redeploys what runs instead."""
    return any(line.kind != LineKind.SECRET.value for line in changeset.lines)


def is_open(changeset: schema.ChangeSet) -> bool:
    return ChangeSetState(changeset.state) in OPEN_CHANGESET_STATES


def open_for(session: Session, environment_id: int, owner: str) -> list[schema.ChangeSet]:
    return list(
        session.scalars(
            select(schema.ChangeSet).where(
                schema.ChangeSet.environment_id == environment_id,
                schema.ChangeSet.owner == owner,
                schema.ChangeSet.state.in_([s.value for s in OPEN_CHANGESET_STATES]),
            )
        )
    )


def deployments_of(session: Session, changeset_id: int) -> list[schema.Deployment]:
    return list(
        session.scalars(
            select(schema.Deployment)
            .where(schema.Deployment.changeset_id == changeset_id)
            .order_by(schema.Deployment.id)
        )
    )


def note(
    session: Session, clock: Clock, changeset: schema.ChangeSet, text: str | None, *, actor: str
) -> None:
    """Say why an open change set is held (a freeze, the cap, ``auto_deploy``), with its event."""
    changeset.note = text
    events.changeset(session, clock.now(), changeset, text, actor=actor)


def move(
    session: Session,
    clock: Clock,
    changeset: schema.ChangeSet,
    state: ChangeSetState,
    message: str | None,
    *,
    actor: str | None,
) -> None:
    """Change state through the table (``IllegalTransition`` otherwise), with its event. An
    ended change set keeps ``message`` as its note (how it ended) and when it ended."""
    before = ChangeSetState(changeset.state)
    changeset.state = transitions.check_changeset(before, state).value
    if state is ChangeSetState.PENDING_APPROVAL:
        changeset.note = None  # why it was held (a freeze, the cap) is past: it is applied now
    else:
        changeset.note = message
        changeset.finished_at = clock.now()
    events.changeset(session, clock.now(), changeset, message, actor=actor)


def discard(
    session: Session, clock: Clock, changeset: schema.ChangeSet, note: str, *, actor: str | None
) -> None:
    """End an unapplied change set, its approval, and the deployments waiting on it."""
    if not is_open(changeset):
        raise ConflictError(
            f"Change set {changeset.id} is {changeset.state}; only a draft or a change set "
            "pending approval can be discarded"
        )
    move(session, clock, changeset, ChangeSetState.DISCARDED, note, actor=actor)
    approvals.cancel_for(
        session, clock, ApprovalTarget.CHANGESET, changeset.id, actor=actor, reason=note
    )
    for deployment in deployments_of(session, changeset.id):
        if deployment.state == DeploymentState.AWAITING_APPROVAL.value:
            recording.move(session, clock, deployment, Trigger.CANCEL, message=note, actor=actor)
    drop_drafted_units(session, clock, changeset, actor=actor)


def drop_drafted_units(
    session: Session, clock: Clock, changeset: schema.ChangeSet, *, actor: str | None
) -> list[str]:
    """A change set that ended unapplied (discarded, replaced, expired) takes with it the
    services its first-deploy lines created: they existed only in it (004: "Discarding a draft
    that created a service removes that service, because it only existed in the draft"), so
    they are no longer listed with a cancelled r-1. Nothing of theirs reached the cluster; the
    next push stages a first deploy again if the file still declares them. A service that ever
    served a release, or has a deployment still open elsewhere, stays."""
    units = projects.units(session, changeset.environment)
    dropped = []
    for line in changeset.lines:
        unit = units.get(line.service)
        if line.kind != LineKind.FIRST_DEPLOY.value or unit is None:
            continue
        if releases.ever_served(session, unit) or recording.open_for_unit(session, unit.id):
            continue
        unit.status = ServiceStatus.REMOVED.value
        events.unit(
            session,
            clock.now(),
            unit,
            f"{unit.name} removed from {changeset.environment.name}: it existed only in change "
            f"set {changeset.id}, which ended {changeset.state}",
            actor=actor,
        )
        dropped.append(unit.name)
    return dropped
