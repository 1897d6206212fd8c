"""What the status page shows, as JSON: projects, status, deployments with their events,
change sets with their lines, approvals, a service's releases, and the live diff. The same
documents ``nebula ... -o json`` prints, as public as the page (``Access.PAGE``).
"""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler import liveviews, statusviews, views
from reconciler.acts.calls import Call, Document
from reconciler.admin import places as projects
from reconciler.core.states import ApprovalState, ChangeSetState
from reconciler.errors import ConfigurationError, NotFoundError, shown
from reconciler.requests import records
from reconciler.store import schema

DEFAULT_LIMIT = 500


def _project_id(session: Session, slug: str | None) -> int | None:
    return projects.get(session, slug).id if slug is not None else None


State = TypeVar("State", ChangeSetState, ApprovalState)


def _state(kind: type[State], text: str | None) -> State | None:
    if text is None:
        return None
    try:
        return kind(text)
    except ValueError:
        known = ", ".join(s.value for s in kind)
        raise ConfigurationError(f"state: {shown(text)} is not one of {known}") from None


def list_projects(call: Call) -> Document:
    with call.ctx.db.reading() as session:
        return {"projects": [views.project(p) for p in projects.listing(session)]}


def get_project(call: Call) -> Document:
    with call.ctx.db.reading() as session:
        return {"project": views.project(projects.get(session, call.param("slug")))}


def status(call: Call) -> Document:
    project, env = call.option("project") or call.path.get("slug"), call.option("env")
    with call.ctx.db.reading() as session:
        rows = [projects.get(session, project)] if project else projects.listing(session)
        if env is not None and project is not None:
            projects.environment(session, rows[0], env)
        return {
            "projects": statusviews.projects_status(session, rows, env),
            "reconciler": liveviews.reconciler(session, call.ctx.clock.now()),
        }


def list_deployments(call: Call) -> Document:
    """Newest last; the newest ``limit`` (500 unless asked) of those that match."""
    limit = int(call.option("limit") or DEFAULT_LIMIT)
    env, service = call.option("env"), call.option("service")
    changeset = call.option("changeset")
    with call.ctx.db.reading() as session:
        query = select(schema.Deployment).order_by(schema.Deployment.id.desc())
        slug = call.option("project")
        project = projects.get(session, slug) if slug is not None else None
        if project is not None:
            query = query.where(schema.Deployment.project_id == project.id)
            if env is not None:  # a name that is not there is an error, not an empty list
                place = projects.environment(session, project, env)
                if service is not None:
                    projects.unit(session, place, service)
        if env is not None:
            query = query.join(
                schema.Environment, schema.Environment.id == schema.Deployment.environment_id
            ).where(schema.Environment.name == env)
        if service is not None:
            query = query.join(schema.Unit, schema.Unit.id == schema.Deployment.unit_id).where(
                schema.Unit.name == service
            )
        if changeset is not None:
            number = call.id("changeset", "change set")
            query = query.where(schema.Deployment.changeset_id == number)
        rows = list(session.scalars(query.limit(limit)))
        return {"deployments": [views.deployment(d) for d in reversed(rows)]}


def get_deployment(call: Call) -> Document:
    deployment_id = call.id("deployment_id", "deployment")
    with call.ctx.db.reading() as session:
        d = session.get(schema.Deployment, deployment_id)
        if d is None:
            raise NotFoundError(
                f"No deployment {deployment_id}", hint="list them with: nebula deployments"
            )
        return {"deployment": views.deployment_with_events(session, d)}


def list_changesets(call: Call) -> Document:
    state = _state(ChangeSetState, call.option("state"))
    with call.ctx.db.reading() as session:
        rows = records.changesets(session, _project_id(session, call.option("project")), state)
        return {"changesets": [views.changeset_of(session, c) for c in rows]}


def get_changeset(call: Call) -> Document:
    changeset_id = call.id("changeset_id", "change set")
    with call.ctx.db.reading() as session:
        return {"changeset": views.changeset_of(session, records.changeset(session, changeset_id))}


def list_approvals(call: Call) -> Document:
    state = _state(ApprovalState, call.option("state"))
    with call.ctx.db.reading() as session:
        rows = records.approvals(session, _project_id(session, call.option("project")), state)
        return {"approvals": views.approvals_of(session, rows)}


def get_approval(call: Call) -> Document:
    approval_id = call.id("approval_id", "approval")
    with call.ctx.db.reading() as session:
        return {"approval": views.approval(records.approval(session, approval_id))}


def history(call: Call) -> Document:
    with call.ctx.db.reading() as session:
        project = projects.get(session, call.param("slug"))
        environment = projects.environment(session, project, call.param("env"))
        unit = projects.unit(session, environment, call.param("service"))
        return {"releases": views.history(session, unit)}
