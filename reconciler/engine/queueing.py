"""Starting deployments: creation, entering pending (supersession), cancel.

``create`` makes the deployment in its first state (awaiting-approval in a protected
environment unless its approval passed at once, else pending). ``enter_pending`` is where a
deployment starts to count: it supersedes what is in flight for the same service before it
took traffic, or waits behind one that is taking traffic.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.core import messages
from reconciler.core.states import DeploymentKind, DeploymentState
from reconciler.core.transitions import Trigger
from reconciler.engine import recording
from reconciler.errors import RefusedError
from reconciler.store import events, schema

S = DeploymentState


@dataclass(frozen=True)
class Ended:
    """A deployment a request ended, listed in the request's response."""

    id: int
    service: str
    release: str
    state: str


def create(
    session: Session,
    clock: Clock,
    unit: schema.Unit,
    release: schema.Release,
    kind: DeploymentKind,
    requested_by: str,
    *,
    awaiting_approval: bool,
    message: str | None = None,
    changeset_id: int | None = None,
) -> schema.Deployment:
    now = clock.now()
    state = S.AWAITING_APPROVAL if awaiting_approval else S.PENDING
    deployment = schema.Deployment(
        project_id=unit.project_id,
        environment_id=unit.environment_id,
        unit_id=unit.id,
        release_id=release.id,
        previous_release_id=unit.active_release_id,
        changeset_id=changeset_id,
        kind=kind.value,
        state=state.value,
        message=message if awaiting_approval else None,
        requested_by=requested_by,
        attempts=0,
        created_at=now,
        stage_started_at=now,
        queued_at=None if awaiting_approval else now,
    )
    session.add(deployment)
    session.flush()
    events.record(
        session,
        now,
        "deployment",
        project_id=deployment.project_id,
        environment_id=deployment.environment_id,
        deployment_id=deployment.id,
        state=state.value,
        message=f"{kind.value} of {unit.name} {release.name} requested"
        + (f": {message}" if message and awaiting_approval else ""),
        actor=requested_by,
    )
    return deployment


def would_end(session: Session, deployment: schema.Deployment) -> list[schema.Deployment]:
    """What entering pending would supersede (for the concurrency check, before acting)."""
    return [
        other
        for other in recording.open_for_unit(session, deployment.unit_id)
        if other.id != deployment.id and _supersedable(other, deployment)
    ]


def _supersedable(other: schema.Deployment, new: schema.Deployment) -> bool:
    state = S(other.state)
    if state is S.AWAITING_APPROVAL:
        return other.id < new.id  # approving ends older pending approval requests only
    return not state.is_taking_traffic


def enter_pending(
    session: Session, clock: Clock, deployment: schema.Deployment, actor: str | None
) -> list[Ended]:
    """Start counting ``deployment``: supersede older work on its service, or wait behind it."""
    if deployment.state == S.AWAITING_APPROVAL.value:
        recording.move(session, clock, deployment, Trigger.APPROVE, actor=actor)
    ended: list[Ended] = []
    release = deployment.release.name
    for other in recording.open_for_unit(session, deployment.unit_id):
        if other.id == deployment.id:
            continue
        state = S(other.state)
        if state.is_taking_traffic:
            recording.note(
                session,
                clock,
                deployment,
                blocker=None,
                message=messages.waiting_for_takeover(other.release.name),
            )
            continue
        if not _supersedable(other, deployment):
            continue
        recording.move(
            session,
            clock,
            other,
            Trigger.SUPERSEDE,
            message=messages.superseded_by(release),
            actor=actor,
        )
        _end_approval(session, clock, other, actor)
        ended.append(Ended(other.id, deployment.unit.name, other.release.name, S.SUPERSEDED.value))
    return ended


def _end_approval(
    session: Session, clock: Clock, deployment: schema.Deployment, actor: str | None
) -> None:
    from reconciler.requests import approvals, changesets

    approvals.cancel_for(session, clock, "deployment", deployment.id, actor=actor)
    if deployment.changeset_id is None:
        return
    changeset = session.get(schema.ChangeSet, deployment.changeset_id)
    if changeset is not None and changeset.state in changesets.OPEN:
        # A change set is approved and applied whole: with one of its deployments ended before
        # that, what it would apply is no longer what was staged. Discarded, its approval and
        # other waiting deployments end with it, and it is not recorded as applied, so the next
        # push stages its changes again against what really runs.
        changesets.discard(
            session,
            clock,
            changeset,
            f"Discarded: its deployment of {deployment.unit.name} {deployment.release.name} "
            f"ended {deployment.state} ({deployment.message})",
            actor=actor,
        )


def cancel(
    session: Session, clock: Clock, deployment: schema.Deployment, actor: str | None
) -> None:
    state = S(deployment.state)
    if state.is_final:
        raise RefusedError(
            f"Deployment {deployment.id} has already ended ({state.value})", code="conflict"
        )
    if state.is_taking_traffic:
        raise RefusedError(
            f"Deployment {deployment.id} is {state.value}: it is taking over traffic and cannot be "
            "cancelled now. Roll back once it is healthy.",
            code="conflict",
        )
    who = f" by {actor}" if actor else ""
    recording.move(
        session, clock, deployment, Trigger.CANCEL, message=f"Cancelled{who}", actor=actor
    )
    _end_approval(session, clock, deployment, actor)
