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
from reconciler.core import messages, transitions
from reconciler.core.states import DeploymentKind, DeploymentState
from reconciler.core.transitions import Trigger
from reconciler.engine import recording
from reconciler.errors import ConflictError
from reconciler.store import events, schema

S = DeploymentState


@dataclass(frozen=True)
class Ended:
    """A deployment a request ended: listed in the request's response, and what its caller
    ends with it (the approval it waited for, the change set it belonged to)."""

    id: int
    service: str
    release: str
    state: str
    message: str | None = None
    changeset_id: int | None = None

    @classmethod
    def of(cls, d: schema.Deployment) -> Ended:
        return cls(d.id, d.unit.name, d.release.name, d.state, d.message, d.changeset_id)


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
    said: str | None = None,
) -> schema.Deployment:
    """``said``: the message the person applying its change set gave, in its first event."""
    now = clock.now()
    state = transitions.initial_state(awaiting_approval)
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
    requested = f"{kind.value} of {unit.name} {release.name} requested"
    if said:
        requested += f' with the message "{said}"'
    if message and awaiting_approval:
        requested += f": {message}"
    events.deployment(session, now, deployment, requested, actor=requested_by)
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
    """Start counting ``deployment``: supersede older work on its service, or wait behind it.

    Returns what it superseded; the caller ends their approvals and change sets (they belong
    to the requests above the engine)."""
    if deployment.state == S.AWAITING_APPROVAL.value:
        recording.move(session, clock, deployment, Trigger.APPROVE, actor=actor)
    ended: list[Ended] = []
    release = deployment.release.name
    for other in recording.open_for_unit(session, deployment.unit_id):
        if other.id == deployment.id:
            continue
        if S(other.state).is_taking_traffic:
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
        ended.append(Ended.of(other))
    return ended


def cancel(
    session: Session,
    clock: Clock,
    deployment: schema.Deployment,
    actor: str | None,
    *,
    message: str | None = None,
) -> Ended:
    """End ``deployment`` ``cancelled``; refused once it has ended or while it takes traffic.
    The caller ends its approval and change set."""
    state = S(deployment.state)
    if state.is_final:
        raise ConflictError(f"Deployment {deployment.id} has already ended ({state.value})")
    if state.is_taking_traffic:
        raise ConflictError(
            f"Deployment {deployment.id} is {state.value}: it is taking over traffic and cannot be "
            "cancelled now. Roll back once it is healthy."
        )
    who = f" by {actor}" if actor else ""
    recording.move(
        session,
        clock,
        deployment,
        Trigger.CANCEL,
        message=message or f"Cancelled{who}",
        actor=actor,
    )
    return Ended.of(deployment)
