"""Finding a project, its environments and their services by name: what nearly every command
reads first. Kept apart from ``projects`` (adding, changing, removing), which brings the
nebula.toml validator: a read such as ``nebula status`` finds its places without loading it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from reconciler import suggestions
from reconciler.core.states import ServiceStatus
from reconciler.errors import NotFoundError, shown
from reconciler.store import schema

NO_PROJECTS = "no project is registered yet: add one with nebula project add"


def get(session: Session, slug: str, *, lock: bool = False) -> schema.Project:
    """The project named ``slug``; ``lock`` holds its row until the transaction ends
    (PostgreSQL: replicas deciding on the same project's webhook take turns)."""
    query = select(schema.Project).where(schema.Project.slug == slug)
    project = session.scalars(query.with_for_update() if lock else query).first()
    if project is None:
        known = list(session.scalars(select(schema.Project.slug).order_by(schema.Project.slug)))
        raise NotFoundError(
            f"No project named {shown(slug)}",
            hint=suggestions.hint(slug, known, "projects", none=NO_PROJECTS),
        )
    return project


def listing(session: Session) -> list[schema.Project]:
    """Every project, its environments read with it (every listing shows them)."""
    query = select(schema.Project).order_by(schema.Project.slug)
    return list(session.scalars(query.options(selectinload(schema.Project.environments))))


def environment(session: Session, project: schema.Project, name: str) -> schema.Environment:
    env = session.scalars(
        select(schema.Environment).where(
            schema.Environment.project_id == project.id, schema.Environment.name == name
        )
    ).first()
    if env is None:
        known = [e.name for e in project.environments]
        raise NotFoundError(
            f"Project '{project.slug}' has no environment {shown(name)}",
            hint=suggestions.hint(name, known, "environments", none="no environments yet"),
        )
    return env


def unit(session: Session, env: schema.Environment, name: str) -> schema.Unit:
    row = session.scalars(
        select(schema.Unit).where(schema.Unit.environment_id == env.id, schema.Unit.name == name)
    ).first()
    if row is None:
        raise NotFoundError(
            f"No service {shown(name)} in {env.project.slug}/{env.name}",
            hint=suggestions.hint(name, sorted(units(session, env)), "services and databases"),
        )
    return row


def units(session: Session, env: schema.Environment) -> dict[str, schema.Unit]:
    """The environment's services and databases by name (not those removed and torn down)."""
    rows = session.scalars(select(schema.Unit).where(schema.Unit.environment_id == env.id))
    return {u.name: u for u in rows if u.status != ServiceStatus.REMOVED}
