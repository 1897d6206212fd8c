"""Reading the store into ``facts``: what a notice says, at the moment it is written or sent.

An approval request is read when it is delivered, not when it is written: a change set's
approval is recorded before its deployments and releases exist (same transaction), and what
it shows never changes afterwards (releases are immutable, lines are never edited). A failure
or a project blocker is read when it happens, since what keeps serving and the blocker's
message do change later.

Like every notifier module it reads the store and renders with the pure renderers, and
never reaches up into the engine or the requests: ``notices`` is called from the
transactions those make.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from notifiers import manifestdiffs
from notifiers.facts import (
    ApprovalRequest,
    Commit,
    Decision,
    DriftCleared,
    Drifted,
    Facts,
    Failure,
    Healthy,
    Line,
    ProjectState,
    ServiceRelease,
    Test,
    approval_url,
    deployment_url,
    project_url,
)
from notifiers.keys import Kind
from reconciler.core.states import ApprovalState, ApprovalTarget, LineKind
from reconciler.settings import Settings
from reconciler.store import schema
from renderers.releases import Scope


def of_row(
    session: Session, settings: Settings, kind: Kind, payload: dict[str, Any]
) -> Facts | str:
    """What an outbox row says, with its links; a text when there is nothing left to say
    (the approval it was about was removed with its project)."""
    project = str(payload.get("project") or "")
    environment = str(payload.get("environment") or "")
    if kind is Kind.DEPLOYMENT_FAILED:
        return Failure.from_payload(payload, failure_url(settings, int(payload["deployment_id"])))
    if kind is Kind.DEPLOYMENT_HEALTHY:
        return Healthy.from_payload(payload, failure_url(settings, int(payload["deployment_id"])))
    if kind in (Kind.PROJECT_BLOCKED, Kind.PROJECT_RECOVERED):
        return ProjectState.from_payload(payload, project_link(settings, project))
    if kind is Kind.UNIT_DRIFTED:
        return Drifted.from_payload(payload, environment_link(settings, project, environment))
    if kind is Kind.DRIFT_CLEARED:
        return DriftCleared.from_payload(payload, environment_link(settings, project, environment))
    if kind is Kind.TEST:
        return Test(str(payload["channel"]), str(payload["by"]), settings.public_url)
    approval = session.get(schema.Approval, int(payload["approval_id"]))
    if approval is None:
        return f"approval {payload['approval_id']} no longer exists"
    return approval_request(session, settings, approval)


def approval_request(session: Session, settings: Settings, a: schema.Approval) -> ApprovalRequest:
    env = a.environment
    project = env.project
    commit: Commit | None = None
    lines: tuple[Line, ...] = ()
    message: str | None = None
    if a.target == ApprovalTarget.CHANGESET:
        changeset = session.get(schema.ChangeSet, a.target_id)
        if changeset is not None:
            message = changeset.applied_message
            if changeset.commit:
                commit = Commit(changeset.commit, changeset.author, changeset.message)
            lines = tuple(
                Line(line.service, line.kind, line.field, line.before, line.after, line.via)
                for line in changeset.lines
            )
        deployments = list(
            session.scalars(
                select(schema.Deployment)
                .where(schema.Deployment.changeset_id == a.target_id)
                .order_by(schema.Deployment.id)
            )
        )
    else:
        one = session.get(schema.Deployment, a.target_id)
        deployments = [one] if one is not None else []
        lines = tuple(line for d in deployments if (line := _release_line(d)) is not None)
    pairs: list[manifestdiffs.Pair] = [(d.release, d.previous_release) for d in deployments]
    pairs += [(None, release) for release in _removed(session, env, lines)]
    return ApprovalRequest(
        approval_id=a.id,
        project=project.slug,
        environment=env.name,
        target=a.target,
        target_id=a.target_id,
        kind=a.kind,
        requested_by=a.requested_by,
        requested_at=a.created_at,
        expires_at=a.expires_at,
        url=project_url(settings.public_url, project.slug, env.name),
        page=approval_url(settings.public_url, a.id),
        commit=commit,
        message=message,
        services=tuple(
            ServiceRelease(
                service=d.unit.name,
                release=d.release.name,
                kind=d.kind,
                unit_kind=d.unit.kind,
                previous=d.previous_release.name if d.previous_release is not None else None,
            )
            for d in deployments
        ),
        lines=lines,
        manifests=manifestdiffs.summarize(Scope(project.slug, env.name), pairs),
        decision=None if a.state == ApprovalState.PENDING else decision(a),
        evidence=tuple(a.evidence or ()),
    )


def decision(a: schema.Approval) -> Decision:
    return Decision(a.state, a.decided_by, a.decided_via, a.decided_at, a.reason)


def _release_line(d: schema.Deployment) -> Line | None:
    """A rollback or promotion has no change set: its image change is the line to review."""
    before = d.previous_release.image if d.previous_release is not None else None
    if before == d.release.image:
        return None
    return Line(d.unit.name, "release", "image", before, d.release.image)


def _removed(
    session: Session, env: schema.Environment, lines: tuple[Line, ...]
) -> list[schema.Release]:
    names = [line.service for line in lines if line.kind == LineKind.REMOVAL]
    if not names:
        return []
    units = session.scalars(
        select(schema.Unit).where(schema.Unit.environment_id == env.id, schema.Unit.name.in_(names))
    )
    return [u.active_release for u in units if u.active_release is not None]


def failure(d: schema.Deployment) -> Failure:
    """Read when the deployment fails: later, something else may be serving."""
    active = d.unit.active_release
    return Failure(
        deployment_id=d.id,
        project=d.environment.project.slug,
        environment=d.environment.name,
        service=d.unit.name,
        release=d.release.name,
        kind=d.kind,
        blocker=d.blocker,
        message=d.message,
        keeps_serving=active.name if active is not None and active.id != d.release_id else None,
    )


def healthy(d: schema.Deployment) -> Healthy:
    previous = d.previous_release
    return Healthy(
        deployment_id=d.id,
        project=d.environment.project.slug,
        environment=d.environment.name,
        service=d.unit.name,
        release=d.release.name,
        kind=d.kind,
        previous=previous.name if previous is not None else None,
    )


def project_state(
    project: schema.Project, *, blocker: str, recovered: bool, message: str
) -> ProjectState:
    return ProjectState(
        project=project.slug,
        blocker=blocker,
        message=message,
        commit=project.blocker_commit,
        recovered=recovered,
    )


def failure_url(settings: Settings, deployment_id: int) -> str:
    return deployment_url(settings.public_url, deployment_id)


def project_link(settings: Settings, project: str) -> str:
    return project_url(settings.public_url, project)


def environment_link(settings: Settings, project: str, environment: str) -> str:
    return project_url(settings.public_url, project, environment)


def recoveries(session: Session, project_id: int) -> int:
    """How many times the project's blocker has cleared: numbers each blocked episode."""
    return int(
        session.scalar(
            select(func.count(schema.Event.id)).where(
                schema.Event.project_id == project_id,
                schema.Event.kind == "project.blocker",
                schema.Event.state.is_(None),
            )
        )
        or 0
    )
