"""Notifications caused by state changes, written to the outbox in the same transaction.

Every function here is called inside the transaction that makes the change, so a notice
exists if and only if its cause was committed. Each notice is recorded once for the default
Slack channel of the settings (the kinds it has always been sent) and once per channel of
``nebula notify add`` that takes it (``routing``). Delivery (with retries) happens later,
from the outbox, and never holds a deployment back.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from notifiers import gathering, keys, outbox, routing
from notifiers.facts import DriftCleared, Drifted
from notifiers.keys import Kind
from reconciler.clock import Clock, utc
from reconciler.core.drifts import Drift
from reconciler.store import schema

SHOWN_DRIFT = 6


def _notify(
    session: Session,
    clock: Clock,
    key: str,
    kind: Kind,
    payload: dict[str, Any],
    project_id: int,
    environment: str | None,
) -> None:
    if kind in keys.SLACK_DEFAULT:
        outbox.enqueue(session, clock, key, kind, payload)
    routing.fan_out(
        session, clock, key, kind, payload, project_id=project_id, environment=environment
    )


def deployment_failed(session: Session, clock: Clock, deployment: schema.Deployment) -> None:
    """A deployment ended ``failed``: its blocker, message and what keeps serving."""
    facts = gathering.failure(deployment)
    _notify(
        session, clock, keys.deployment_failed(deployment.id), Kind.DEPLOYMENT_FAILED,
        facts.to_payload(), deployment.environment.project_id, deployment.environment.name,
    )  # fmt: skip


def deployment_healthy(session: Session, clock: Clock, deployment: schema.Deployment) -> None:
    """A deployment went healthy: for channels that list ``healthy``, and PagerDuty's open
    alert of the service (resolved)."""
    if not routing.wanted(session, Kind.DEPLOYMENT_HEALTHY):
        return  # the default Slack channel is not told: nothing needs reading
    facts = gathering.healthy(deployment)
    _notify(
        session, clock, keys.deployment_healthy(deployment.id), Kind.DEPLOYMENT_HEALTHY,
        facts.to_payload(), deployment.environment.project_id, deployment.environment.name,
    )  # fmt: skip


def approval_requested(session: Session, clock: Clock, approval: schema.Approval) -> None:
    """A pending approval: the request message with Approve and Reject buttons.

    Only the approval's id is kept: a change set's deployments and releases are created after
    its approval, in this same transaction, and are read when the message is sent.
    """
    _notify(
        session, clock, keys.approval_request(approval.id), Kind.APPROVAL_REQUEST,
        {"approval_id": approval.id}, approval.project_id, approval.environment.name,
    )  # fmt: skip


def approval_closed(session: Session, clock: Clock, approval: schema.Approval) -> None:
    """Decided, expired or cancelled: the request message is updated in place."""
    _notify(
        session, clock, keys.approval_update(approval.id), Kind.APPROVAL_UPDATE,
        {"approval_id": approval.id, "state": approval.state}, approval.project_id,
        approval.environment.name,
    )  # fmt: skip


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
    key = keys.project_blocker(
        project.id, project.blocker, _cause(session, project), recovered=False
    )
    _notify(session, clock, key, Kind.PROJECT_BLOCKED, facts.to_payload(), project.id, None)


def project_recovered(
    session: Session, clock: Clock, project: schema.Project, message: str
) -> None:
    """The project's blocker cleared (once). Called before the blocker is cleared."""
    if not project.blocker:
        return
    facts = gathering.project_state(
        project, blocker=project.blocker, recovered=True, message=message
    )
    key = keys.project_blocker(
        project.id, project.blocker, _cause(session, project), recovered=True
    )
    _notify(session, clock, key, Kind.PROJECT_RECOVERED, facts.to_payload(), project.id, None)


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
    key = keys.unit_drifted(unit.id, utc(unit.drift_since).isoformat())
    _notify(session, clock, key, Kind.UNIT_DRIFTED, facts.to_payload(), env.project_id, env.name)


def drift_cleared(session: Session, clock: Clock, unit: schema.Unit, release: str) -> None:
    """The drift episode of ``unit`` ended. Called before ``drift_since`` is cleared."""
    assert unit.drift_since is not None
    if not routing.wanted(session, Kind.DRIFT_CLEARED):
        return
    env = unit.environment
    facts = DriftCleared(env.project.slug, env.name, unit.name, release)
    key = keys.drift_cleared(unit.id, utc(unit.drift_since).isoformat())
    _notify(session, clock, key, Kind.DRIFT_CLEARED, facts.to_payload(), env.project_id, env.name)


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
