"""``GET /api/v1/...``: the data ``nebula ... --json`` prints, in the same shapes.

Read-only and unauthenticated, like the status page it mirrors (it never holds a secret
value). Listings take the CLI's filters as query parameters.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler import views
from reconciler.admin import auditing, projects
from reconciler.core.states import ApprovalState, ChangeSetState
from reconciler.durations import parse_duration
from reconciler.errors import NotFoundError
from reconciler.requests import approvals, changesets
from reconciler.store import schema
from reconciler.web import models
from reconciler.web.appstate import AppState, get_state, parse_id
from reconciler.web.error_responses import documented

router = APIRouter(prefix="/api/v1", tags=["read"])
Route = TypeVar("Route", bound=Callable[..., Any])
State = Annotated[AppState, Depends(get_state)]
Slug = Annotated[str, Path(pattern=models.NAME_PATTERN, max_length=40)]
ProjectFilter = Annotated[
    str | None, Query(pattern=models.NAME_PATTERN, max_length=40, description="a project slug")
]
NameFilter = Annotated[str | None, Query(pattern=models.NAME_PATTERN)]
Id = Annotated[str, Path(max_length=40, description="a numeric id, as a string")]
ChangeSetFilter = Annotated[ChangeSetState | None, Query(alias="state")]
ApprovalFilter = Annotated[ApprovalState | None, Query(alias="state")]


def _get(path: str, model: type[BaseModel], summary: str) -> Callable[[Route], Route]:
    """A read route: the model it answers with, and 404/422 documented."""
    return router.get(path, response_model=model, responses=documented(404, 422), summary=summary)


def _project_id(session: Session, slug: str | None) -> int | None:
    return projects.get(session, slug).id if slug is not None else None


@_get("/projects", models.ProjectList, "Registered projects")
def list_projects(state: State) -> dict[str, Any]:
    with state.ctx.db.reading() as session:
        return {"projects": [views.project(p) for p in projects.listing(session)]}


@_get("/projects/{slug}", models.ProjectOne, "One project")
def get_project(slug: Slug, state: State) -> dict[str, Any]:
    with state.ctx.db.reading() as session:
        return {"project": views.project(projects.get(session, slug))}


@_get("/status", models.StatusList, "Active releases and in-flight deployments (nebula status)")
def status(state: State, project: ProjectFilter = None, env: NameFilter = None) -> dict[str, Any]:
    with state.ctx.db.reading() as session:
        rows = [projects.get(session, project)] if project else projects.listing(session)
        if env is not None and project is not None:
            projects.environment(session, rows[0], env)
        return {"projects": [views.project_status(session, p, env) for p in rows]}


@_get("/projects/{slug}/status", models.StatusList, "One project's status (nebula status SLUG)")
def project_status(slug: Slug, state: State, env: NameFilter = None) -> dict[str, Any]:
    return status(state, slug, env)


@_get("/deployments", models.DeploymentList, "Deployments, newest last (nebula deployments)")
def list_deployments(
    state: State,
    project: ProjectFilter = None,
    env: NameFilter = None,
    service: NameFilter = None,
    limit: Annotated[int, Query(ge=1, le=5000, description="the newest N")] = 500,
) -> dict[str, Any]:
    with state.ctx.db.reading() as session:
        query = select(schema.Deployment).order_by(schema.Deployment.id.desc())
        project_id = _project_id(session, project)
        if project_id is not None:
            query = query.where(schema.Deployment.project_id == project_id)
        if env is not None:
            query = query.join(
                schema.Environment, schema.Environment.id == schema.Deployment.environment_id
            ).where(schema.Environment.name == env)
        if service is not None:
            query = query.join(schema.Unit, schema.Unit.id == schema.Deployment.unit_id).where(
                schema.Unit.name == service
            )
        rows = list(session.scalars(query.limit(limit)))
        return {"deployments": [views.deployment(d) for d in reversed(rows)]}


@_get(
    "/deployments/{deployment_id}",
    models.DeploymentOne,
    "One deployment with its events (nebula deployment show)",
)
def get_deployment(deployment_id: Id, state: State) -> dict[str, Any]:
    with state.ctx.db.reading() as session:
        d = session.get(schema.Deployment, parse_id(deployment_id, "deployment"))
        if d is None:
            raise NotFoundError(f"No deployment {deployment_id}")
        return {"deployment": views.deployment_with_events(session, d)}


@_get("/changesets", models.ChangeSetList, "Change sets with their lines (nebula changesets)")
def list_changesets(
    state: State, project: ProjectFilter = None, state_: ChangeSetFilter = None
) -> dict[str, Any]:
    with state.ctx.db.reading() as session:
        rows = changesets.listing(session, _project_id(session, project), state_)
        return {"changesets": [views.changeset_of(session, c) for c in rows]}


@_get("/changesets/{changeset_id}", models.ChangeSetOne, "One change set (nebula changeset show)")
def get_changeset(changeset_id: Id, state: State) -> dict[str, Any]:
    with state.ctx.db.reading() as session:
        c = changesets.get(session, parse_id(changeset_id, "change set"))
        return {"changeset": views.changeset_of(session, c)}


@_get("/approvals", models.ApprovalList, "Pending and decided approvals (nebula approvals)")
def list_approvals(
    state: State, project: ProjectFilter = None, state_: ApprovalFilter = None
) -> dict[str, Any]:
    with state.ctx.db.reading() as session:
        rows = approvals.listing(session, _project_id(session, project), state_)
        return {"approvals": views.approvals_of(session, rows)}


@_get("/approvals/{approval_id}", models.ApprovalOne, "One approval")
def get_approval(approval_id: Id, state: State) -> dict[str, Any]:
    with state.ctx.db.reading() as session:
        return {
            "approval": views.approval(approvals.get(session, parse_id(approval_id, "approval")))
        }


@_get("/audit", models.AuditList, "The audit trail: administrative acts (nebula audit)")
def list_audit(
    state: State,
    since: Annotated[
        str | None,
        Query(
            max_length=20,
            pattern=r"^(([0-9]{1,5}(ms|s|m|h|d))+|[0-9]{1,9})$",
            description="a duration back from now, e.g. 24h",
        ),
    ] = None,
) -> dict[str, Any]:
    start = None
    if since is not None:
        with contextlib.suppress(OverflowError):  # further back than time goes: everything
            start = state.ctx.clock.now() - parse_duration(since, setting="since")
    with state.ctx.db.reading() as session:
        return {"events": [views.audit(e) for e in auditing.listing(session, start)]}


@_get(
    "/projects/{slug}/services/{service}/history",
    models.HistoryList,
    "A service's releases, newest first (nebula history)",
)
def get_history(
    slug: Slug,
    service: Annotated[str, Path(pattern=models.NAME_PATTERN, max_length=40)],
    env: Annotated[str, Query(pattern=models.NAME_PATTERN, max_length=40)],
    state: State,
) -> dict[str, Any]:
    with state.ctx.db.reading() as session:
        environment = projects.environment(session, projects.get(session, slug), env)
        return {"releases": views.history(session, projects.unit(session, environment, service))}
