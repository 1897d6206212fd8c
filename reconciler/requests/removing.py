"""Removing a project (behaviour.md "Removing a project"): every environment it manages is
torn down, idempotently, then the project is forgotten; its events stay in the audit.

``request`` ends what is open (change sets discarded, approvals cancelled, deployments that
have not taken traffic cancelled; one taking traffic makes it wait: it is refused until that
one ends), marks every unit ``pending-teardown`` and the project as being removed (it is no
longer polled). ``finish`` tears the units down and, once none is left, forgets the project;
a unit whose cluster cannot be reached stays ``pending-teardown`` and every reconcile pass
tries again, so the project is forgotten when the cluster is back.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from reconciler.admin import auditing, channels, grants, projects
from reconciler.context import Context
from reconciler.core import rights
from reconciler.core.rights import Principal
from reconciler.core.states import (
    AdminAction,
    ApprovalState,
    ApprovalTarget,
    DeploymentState,
    ServiceStatus,
)
from reconciler.engine import removing as engine_removing
from reconciler.errors import ConflictError
from reconciler.requests import approvals, changesets, starting
from reconciler.store import schema


@dataclass(frozen=True)
class Removal:
    slug: str
    forgotten: bool  # every unit torn down and the project forgotten
    waiting: tuple[str, ...]  # ``env/unit`` still pending-teardown (cluster unreachable)


def request(session: Session, ctx: Context, slug: str, who: Principal) -> schema.Project:
    """Begin removing ``slug`` (again is harmless: it goes on where it was)."""
    rights.require_admin(who, "remove projects")
    actor = who.name
    project = projects.get(session, slug)
    if project.removing_at is not None:
        return project
    note = f"Project {slug} removed by {actor}"
    for changeset in changesets.listing(session, project.id):
        if changesets.is_open(changeset):
            changesets.discard(session, ctx.clock, changeset, note, actor=actor)
    for approval in approvals.listing(session, project.id):
        if approval.state == ApprovalState.PENDING:
            target = ApprovalTarget(approval.target)
            approvals.cancel_for(
                session, ctx.clock, target, approval.target_id, actor=actor, reason=note
            )
    busy = []
    for deployment in _open_deployments(session, project.id):
        if DeploymentState(deployment.state).is_taking_traffic:
            busy.append(f"{deployment.unit.name} {deployment.release.name} {deployment.state}")
        else:
            starting.cancel(session, ctx.clock, deployment, actor, message=note)
    if busy:
        raise ConflictError(
            f"Project {slug} has deployments taking over traffic ({', '.join(busy)}); "
            "nothing was removed",
            hint=f"run nebula project remove {slug} again once they have ended",
        )
    for env in project.environments:
        for unit in projects.units(session, env).values():
            unit.status = ServiceStatus.PENDING_TEARDOWN.value
    project.removing_by, project.removing_at = actor, ctx.clock.now()
    project.next_poll_at = None  # never polled again
    auditing.record(
        session,
        ctx.clock,
        AdminAction.PROJECT_REMOVE,
        f"project {slug}",
        f"Removing {slug}: tearing down {', '.join(e.name for e in project.environments) or 'nothing'}",
        actor=actor,
        project=project,
    )
    return project


def _open_deployments(session: Session, project_id: int) -> list[schema.Deployment]:
    rows = session.scalars(
        select(schema.Deployment).where(schema.Deployment.project_id == project_id)
    )
    return [d for d in rows if not DeploymentState(d.state).is_final]


def finish(ctx: Context, slug: str) -> Removal:
    """Tear down what is left of ``slug`` and forget it once nothing is left."""
    with ctx.db.transaction() as session:
        project = projects.get(session, slug)
        unit_ids = [
            u.id
            for env in project.environments
            for u in projects.units(session, env).values()
            if u.status == ServiceStatus.PENDING_TEARDOWN
        ]
    for unit_id in unit_ids:
        engine_removing.teardown(ctx, unit_id)  # no transaction open: it calls the cluster
    with ctx.db.transaction() as session:
        project = projects.get(session, slug)
        waiting = tuple(
            f"{env.name}/{u.name}"
            for env in project.environments
            for u in projects.units(session, env).values()
        )
        if waiting:
            return Removal(slug, False, waiting)
        _forget(session, ctx, project)
        return Removal(slug, True, ())


def finish_all(ctx: Context) -> int:
    """Each reconcile pass: go on with every project being removed; how many were forgotten."""
    with ctx.db.transaction() as session:
        slugs = list(
            session.scalars(
                select(schema.Project.slug).where(schema.Project.removing_at.is_not(None))
            )
        )
    return sum(finish(ctx, slug).forgotten for slug in slugs)


def _forget(session: Session, ctx: Context, project: schema.Project) -> None:
    """Delete every row of the project; its events stay, no longer tied to rows that are gone."""
    pid = project.id
    session.execute(
        update(schema.Event)
        .where(schema.Event.project_id == pid)
        .values(
            project_id=None,
            environment_id=None,
            deployment_id=None,
            changeset_id=None,
            approval_id=None,
        )
    )
    unit_ids = select(schema.Unit.id).where(schema.Unit.project_id == pid)
    changeset_ids = select(schema.ChangeSet.id).where(schema.ChangeSet.project_id == pid)
    session.execute(
        update(schema.Unit).where(schema.Unit.project_id == pid).values(active_release_id=None)
    )
    for statement in (
        delete(schema.Deployment).where(schema.Deployment.project_id == pid),
        delete(schema.ChangeSetLine).where(schema.ChangeSetLine.changeset_id.in_(changeset_ids)),
        delete(schema.ChangeSet).where(schema.ChangeSet.project_id == pid),
        delete(schema.Approval).where(schema.Approval.project_id == pid),
        delete(schema.Release).where(schema.Release.unit_id.in_(unit_ids)),
        delete(schema.Unit).where(schema.Unit.project_id == pid),
        delete(schema.Environment).where(schema.Environment.project_id == pid),
        delete(schema.Secret).where(schema.Secret.project_id == pid),
        delete(schema.WebhookDelivery).where(schema.WebhookDelivery.project_id == pid),
        delete(schema.InboxRead).where(schema.InboxRead.project_id == pid),
    ):
        session.execute(statement)
    grants.forget_project(session, pid)
    channels.forget_project(session, pid)
    slug, by = project.slug, project.removing_by or "nebula"
    session.delete(project)
    auditing.record(
        session,
        ctx.clock,
        AdminAction.PROJECT_FORGOTTEN,
        f"project {slug}",
        f"{slug} torn down everywhere and forgotten",
        actor=by,
    )
