"""Grants: a member may deploy or approve in a project, or in one of its environments.

Who may grant is ``core.rights``'s decision (an admin or an owner); every change is audited
by the act that makes it. A grant names its project by row, so forgetting a project takes its
grants with it; the environment by name, so a grant can precede the environment's first push.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.core.rights import Grant
from reconciler.core.states import GrantKind, Role
from reconciler.errors import ConfigurationError, ConflictError, NotFoundError, shown
from reconciler.store import schema

KINDS = ", ".join(k.value for k in GrantKind)


def parse_kind(kind: str) -> GrantKind:
    try:
        return GrantKind(kind)
    except ValueError:
        raise ConfigurationError(
            f"{shown(kind)} is not a grant", hint=f"use one of: {KINDS}"
        ) from None


def _check_environment(project: schema.Project, environment: str | None) -> None:
    """An environment the project's file does not name is a typo, once the file is known."""
    known = [e.name for e in project.environments]
    if environment is not None and known and environment not in known:
        raise NotFoundError(
            f"{project.slug} has no environment {shown(environment)}",
            hint=f"its environments: {', '.join(known)}",
        )


def _matching(
    session: Session,
    member: schema.Member,
    kind: GrantKind,
    project: schema.Project,
    environment: str | None,
) -> schema.GrantRow | None:
    query = select(schema.GrantRow).where(
        schema.GrantRow.member_id == member.id,
        schema.GrantRow.kind == kind.value,
        schema.GrantRow.project_id == project.id,
    )
    query = query.where(
        schema.GrantRow.environment.is_(None)
        if environment is None
        else schema.GrantRow.environment == environment
    )
    return session.scalars(query).first()


def add(
    session: Session,
    clock: Clock,
    member: schema.Member,
    kind: GrantKind,
    project: schema.Project,
    environment: str | None,
    by: str,
) -> schema.GrantRow:
    _check_environment(project, environment)
    if Role(member.role) is Role.VIEWER:
        raise ConflictError(
            f"{member.name} is a viewer, and a viewer holds no grants",
            hint=f"make them a member first: nebula member set {member.name} --role member",
        )
    if _matching(session, member, kind, project, environment) is not None:
        where = project.slug if environment is None else f"{project.slug}/{environment}"
        raise ConflictError(f"{member.name} already holds {kind.value} in {where}")
    row = schema.GrantRow(
        member_id=member.id,
        kind=kind.value,
        project_id=project.id,
        environment=environment,
        created_at=clock.now(),
        created_by=by,
    )
    session.add(row)
    session.flush()
    return row


def remove(
    session: Session,
    member: schema.Member,
    kind: GrantKind,
    project: schema.Project,
    environment: str | None,
) -> None:
    row = _matching(session, member, kind, project, environment)
    if row is None:
        where = project.slug if environment is None else f"{project.slug}/{environment}"
        raise NotFoundError(
            f"{member.name} holds no {kind.value} grant in {where}",
            hint=f"list them with: nebula grant list {member.name}",
        )
    session.delete(row)
    session.flush()


def rows(session: Session, member: schema.Member | None = None) -> list[schema.GrantRow]:
    query = select(schema.GrantRow).order_by(schema.GrantRow.id)
    if member is not None:
        query = query.where(schema.GrantRow.member_id == member.id)
    return list(session.scalars(query))


def of(session: Session, member_id: int) -> tuple[Grant, ...]:
    found = session.execute(
        select(schema.GrantRow.kind, schema.Project.slug, schema.GrantRow.environment)
        .join(schema.Project, schema.Project.id == schema.GrantRow.project_id)
        .where(schema.GrantRow.member_id == member_id)
        .order_by(schema.GrantRow.id)
    )
    return tuple(Grant(GrantKind(kind), slug, env) for kind, slug, env in found)


def forget_project(session: Session, project_id: int) -> None:
    session.execute(delete(schema.GrantRow).where(schema.GrantRow.project_id == project_id))


def as_grant(row: schema.GrantRow) -> Grant:
    return Grant(GrantKind(row.kind), row.project.slug, row.environment)
