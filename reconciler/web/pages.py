"""The read-only status page: server-rendered HTML, GET only, nothing on it changes state."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import HTMLResponse

from reconciler import liveviews
from reconciler.admin import projects
from reconciler.core.states import DeploymentState
from reconciler.errors import NotFoundError
from reconciler.requests import records
from reconciler.store import schema
from reconciler.web import listings, presenting, sessions, templating
from reconciler.web.appstate import AppState, get_state, parse_id

router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)
State = Annotated[AppState, Depends(get_state)]
Viewer = Annotated[sessions.Viewer | None, Depends(sessions.viewer)]


def _page(
    state: AppState, viewer: sessions.Viewer | None, name: str, **context: Any
) -> HTMLResponse:
    now = state.ctx.clock.now()
    with state.ctx.db.reading() as session:
        reconciler = liveviews.reconciler(session, now)  # said on every page when idle
    page = templating.render(name, now=now, reconciler=reconciler, viewer=viewer, **context)
    response = HTMLResponse(page)
    if viewer is not None:  # the one form a page has: signing out, to this server
        response.headers["Content-Security-Policy"] = sessions.SIGNED_IN_POLICY
    return response


def _slug(text: str) -> str:
    if not (0 < len(text) <= 40) or "\x00" in text:
        raise NotFoundError(f"No project named '{text[:40]}'")
    return text


@router.get("/")
def index(state: State, viewer: Viewer) -> HTMLResponse:
    with state.ctx.db.reading() as session:
        rows, refresh = presenting.overview(session)
        return _page(state, viewer, "index.html", projects=rows, refresh=refresh)


@router.get("/projects/{slug}")
def project(slug: str, state: State, viewer: Viewer) -> HTMLResponse:
    with state.ctx.db.reading() as session:
        data = presenting.project_page(session, projects.get(session, _slug(slug)))
        return _page(
            state,
            viewer,
            "project.html",
            crumbs=[(data["project"]["slug"], None)],
            **data,
        )


@router.get("/approvals")
def approvals_list(state: State, viewer: Viewer) -> HTMLResponse:
    with state.ctx.db.reading() as session:
        data = listings.approvals_page(session)
        return _page(state, viewer, "approvals.html", crumbs=[("approvals", None)], **data)


@router.get("/deployments")
def deployments_list(
    state: State,
    viewer: Viewer,
    project: str | None = None,
    environment: str | None = None,
    state_: Annotated[str | None, Query(alias="state")] = None,
) -> HTMLResponse:
    if state_ and state_ not in {s.value for s in DeploymentState}:
        raise NotFoundError(f"No deployment state '{state_[:40]}'")
    filters = listings.Filters(
        _slug(project) if project else None, environment or None, state_ or None
    )
    with state.ctx.db.reading() as session:
        data = listings.deployments_page(session, filters)
        return _page(state, viewer, "deployments.html", crumbs=[("deployments", None)], **data)


@router.get("/deployments/{deployment_id}")
def deployment(deployment_id: str, state: State, viewer: Viewer) -> HTMLResponse:
    with state.ctx.db.reading() as session:
        d = session.get(schema.Deployment, parse_id(deployment_id, "deployment"))
        if d is None:
            raise NotFoundError(f"No deployment {deployment_id}")
        data = presenting.deployment_page(session, d)
        slug = data["deployment"]["project"]
        return _page(
            state,
            viewer,
            "deployment.html",
            crumbs=[(slug, f"/projects/{slug}"), (f"deployment {d.id}", None)],
            **data,
        )


@router.get("/changesets/{changeset_id}")
def changeset(changeset_id: str, state: State, viewer: Viewer) -> HTMLResponse:
    with state.ctx.db.reading() as session:
        c = records.changeset(session, parse_id(changeset_id, "change set"))
        data = presenting.changeset_page(session, c)
        slug = data["changeset"]["project"]
        return _page(
            state,
            viewer,
            "changeset.html",
            crumbs=[(slug, f"/projects/{slug}"), (f"change set {c.id}", None)],
            **data,
        )
