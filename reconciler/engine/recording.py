"""The one place a deployment changes state: through the transition table, with its event.

Side effects that belong to a state change happen here too, in the same transaction:
a healthy deployment activates its release; a deployment that ends otherwise abandons the
release it created (a rollback's release, already retired, stays available).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from notifiers import notices
from reconciler.clock import Clock
from reconciler.core import transitions
from reconciler.core.states import (
    IN_FLIGHT_STATES,
    OPEN_STATES,
    Blocker,
    DeploymentState,
    StageMarker,
)
from reconciler.core.transitions import Trigger
from reconciler.engine import releases
from reconciler.store import events, schema
from reconciler.store.events import EventKind


def move(
    session: Session,
    clock: Clock,
    deployment: schema.Deployment,
    trigger: Trigger,
    *,
    message: str | None = None,
    blocker: Blocker | None = None,
    actor: str | None = None,
) -> DeploymentState:
    """Apply ``trigger``; raises ``IllegalTransition`` when the table does not allow it."""
    before = DeploymentState(deployment.state)
    state = transitions.advance(before, trigger)
    now = clock.now()
    deployment.state = state.value
    deployment.blocker = blocker.value if blocker is not None else None
    deployment.message = message
    deployment.stage_started_at = now
    deployment.attempts = 0
    deployment.next_attempt_at = None
    deployment.stage_marker = None
    if state is DeploymentState.PENDING:
        deployment.queued_at = now
    if state is DeploymentState.ADMITTED:
        deployment.admitted_at = now
    if state.is_final:
        deployment.finished_at = now
        deployment.lease_owner = None
        deployment.lease_expires_at = None
        if state is DeploymentState.HEALTHY:
            releases.activate(session, clock, deployment.unit, deployment.release)
        else:
            releases.abandon(deployment.release)
            if before.reaches_cluster and before is not DeploymentState.DRAINING:
                # Its pods are removed by the next tick; a failed activation included (its
                # release is kept if the stable Service selects it after all).
                deployment.stage_marker = StageMarker.CLEANUP
    events.deployment(session, now, deployment, message, actor=actor)
    if state is DeploymentState.FAILED:
        notices.deployment_failed(session, clock, deployment)
    elif state is DeploymentState.HEALTHY:
        notices.deployment_healthy(session, clock, deployment)
    return state


def note(
    session: Session,
    clock: Clock,
    deployment: schema.Deployment,
    *,
    blocker: Blocker | None,
    message: str | None,
) -> bool:
    """Set or clear an open deployment's blocker and message; an event only when they change."""
    new_blocker = blocker.value if blocker is not None else None
    if deployment.blocker == new_blocker and deployment.message == message:
        return False
    deployment.blocker = new_blocker
    deployment.message = message
    events.deployment(
        session,
        clock.now(),
        deployment,
        message if blocker is not None or message else "cleared",
        kind=EventKind.DEPLOYMENT_BLOCKER if blocker is not None else EventKind.DEPLOYMENT_NOTE,
    )
    return True


def open_for_unit(session: Session, unit_id: int) -> list[schema.Deployment]:
    """Locked and read afresh: what is decided about them (supersede, wait, cancel) is decided
    on their state as committed now, not as an earlier read or another replica's step left it."""
    return list(
        session.scalars(
            select(schema.Deployment)
            .where(schema.Deployment.unit_id == unit_id, schema.Deployment.state.in_(OPEN_STATES))
            .order_by(schema.Deployment.id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    )


def running_in_project(session: Session, project_id: int) -> list[schema.Deployment]:
    return list(
        session.scalars(
            select(schema.Deployment).where(
                schema.Deployment.project_id == project_id,
                schema.Deployment.state.in_(IN_FLIGHT_STATES),
            )
        )
    )
